"""Client of the rollout-queue gateway: standard library only (urllib, json), Python >= 3.9.

    from rollout_queue_client import Client, ModelError

    client = Client("http://127.0.0.1:8080", token=os.environ["RQ_GATEWAY_TOKEN"])
    artifact = client.dispatch({"prompt": "2+2"}, cell_id="s1-r0", run_attempt_id="eval-7")
    for result in client.map_rollouts(drafts, run_id="gen-12"):
        ...

Every call goes through the durable queue: a dispatch is one lease keyed by
(run_attempt_id, cell_id), so retrying it (this client retries 408, 429, 503 and lost
connections with back-off) attaches to the same lease and runs it once. Errors are typed by
the rollout-queue Result kinds: CallerError (terminal, 4xx; never retried), ModelError (the
dispatch's own failure, HTTP 500), InfrastructureError (the plane, after the retries),
CancelledError (the dispatch or run was cancelled).
"""

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Iterator, List, Optional

__all__ = [
    "Client",
    "RolloutQueueError",
    "CallerError",
    "AuthError",
    "ModelError",
    "InfrastructureError",
    "CancelledError",
]

#: HTTP statuses retried with back-off (the harness client's rule, minus 500: a model error is final).
RETRYABLE_STATUSES = frozenset([408, 429, 502, 503, 504])


class RolloutQueueError(Exception):
    """Base of the client's errors. ``kind`` is the Result kind, ``type`` the error type
    string, ``status`` the HTTP status (None for a lost connection), ``cost_receipts`` the
    receipts the gateway sent with the error (replay them: the dispatch may have paid)."""

    kind = "infrastructure"

    def __init__(self, message, type_="Error", status=None, cost_receipts=None):
        super().__init__(message)
        self.type = type_
        self.status = status
        self.cost_receipts = list(cost_receipts or [])


class CallerError(RolloutQueueError):
    """A broken caller contract (bad request, bad Ref, stopped run): terminal, never retried."""

    kind = "caller"


class AuthError(CallerError):
    """HTTP 401: no or a wrong bearer token."""


class ModelError(RolloutQueueError):
    """The dispatch itself failed (HTTP 500): keep it as evidence."""

    kind = "model"


class InfrastructureError(RolloutQueueError):
    """A transient of the plane that outlasted the retries (HTTP 503, lost connections)."""

    kind = "infrastructure"


class CancelledError(RolloutQueueError):
    """The dispatch (HTTP 499) or the run was cancelled."""

    kind = "caller"


_TRANSPORT_ERRORS = (urllib.error.URLError, ConnectionError, http.client.HTTPException, socket.timeout, OSError)


class Client:
    """A gateway client.

    base_url: e.g. "http://127.0.0.1:8080"; token: the gateway's bearer token (None when it runs
    with --no-auth on loopback); retries: how many times a retryable failure is retried
    (default 8); backoff_s / max_backoff_s: first and largest pause between tries, seconds,
    doubling (defaults 0.2 and 5); timeout_s: socket timeout of one request (default None:
    a dispatch may run for minutes).
    """

    def __init__(self, base_url, token=None, retries=8, backoff_s=0.2, max_backoff_s=5.0, timeout_s=None):
        # type: (str, Optional[str], int, float, float, Optional[float]) -> None
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        #: Cost receipts of the last dispatch call ({callId, usd, label?, units?}), also after an error.
        self.last_cost_receipts = []  # type: List[Dict[str, Any]]

    # ── transport ──────────────────────────────────────────────────────────
    def _open(self, method, path, body=None):
        # type: (str, str, Any) -> http.client.HTTPResponse
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("accept", "application/json")
        if data is not None:
            request.add_header("content-type", "application/json")
        if self.token is not None:
            request.add_header("authorization", "Bearer " + self.token)
        return urllib.request.urlopen(request, timeout=self.timeout_s)

    def _pause(self, attempt):
        # type: (int) -> None
        time.sleep(min(self.max_backoff_s, self.backoff_s * (2 ** attempt)))

    def _call(self, method, path, body=None):
        # type: (str, str, Any) -> Any
        """One JSON request, retried on RETRYABLE_STATUSES and lost connections; raises typed errors."""
        attempt = 0
        while True:
            try:
                with self._open(method, path, body) as response:
                    return json.loads(response.read().decode("utf-8") or "null")
            except urllib.error.HTTPError as err:
                payload = _json_of(err)
                if err.code in RETRYABLE_STATUSES and attempt < self.retries:
                    self._pause(attempt)
                    attempt += 1
                    continue
                raise _typed_error(err.code, payload)
            except _TRANSPORT_ERRORS as err:
                if attempt < self.retries:
                    self._pause(attempt)
                    attempt += 1
                    continue
                raise InfrastructureError("cannot reach the gateway at %s: %s" % (self.base_url, err), "Unreachable")

    # ── the harness' dispatch wire ─────────────────────────────────────────
    def dispatch(self, scenario, cell_id, run_attempt_id, rep=0, seed=0, placement=None, generation=None, cycle_id=None):
        # type: (Any, str, str, int, int, Any, Optional[int], Optional[str]) -> Any
        """Runs one scenario on a worker and returns its artifact (POST /dispatch).

        placement: a queue name, or {"queue": name, label: value, ...}. Receipts of paid calls
        are in ``self.last_cost_receipts`` afterwards (and on the raised error).
        Raises CallerError (400/401/404/413), ModelError (500), CancelledError (499),
        InfrastructureError (503 or no connection after the retries).
        """
        body = {"scenario": scenario, "cellId": cell_id, "runAttemptId": run_attempt_id, "rep": rep, "seed": seed}
        if placement is not None:
            body["placement"] = placement
        if generation is not None:
            body["generation"] = generation
        if cycle_id is not None:
            body["cycleId"] = cycle_id
        self.last_cost_receipts = []
        try:
            answer = self._call("POST", "/dispatch", body)
        except RolloutQueueError as err:
            self.last_cost_receipts = err.cost_receipts
            raise
        self.last_cost_receipts = list(answer.get("costReceipts") or [])
        return answer.get("artifact")

    # ── the runs API ───────────────────────────────────────────────────────
    def map_rollouts(self, drafts, run_id, ack_interval_s=0.2, gold_keys=None):
        # type: (Iterable[Dict[str, Any]], str, float, Optional[List[str]]) -> Iterator[Dict[str, Any]]
        """Runs every draft as one rollout and yields each Result dict once, in completion order.

        drafts are rollout drafts as in schema/rollout-spec.json without v, leaseId, runId and
        runAttemptId (e.g. {"rendered": ..., "task": {"id": ...}, "run": {"$ref": ...},
        "reward": {"$ref": ...}}). Results of kind model/infrastructure are yielded, not raised.
        Resumable: calling it again with the same run_id and drafts (also from a new process, or
        after the gateway restarted) enqueues nothing twice and continues after the last
        acknowledged Result; other drafts under a run_id used before raise CallerError
        (RunConflict): use a new run_id for them. A Result counts as consumed once the caller asks for the next one; consumed
        Results are acknowledged to the gateway (POST /runs/ID/ack) at most every
        ack_interval_s seconds, so a process killed even with SIGKILL sees again only the Result
        it was handling and those consumed in the last ack_interval_s (0: acknowledge each one).
        The gold stays with the reward: workers remove the keys a reward scores against (a
        built-in reward's goldKey, goldKey/gold_key in the reward Ref's config) from the task the
        run receives. gold_keys lists more task keys to keep from the run, added to each draft's
        own "goldKeys"; a draft with "goldVisibleToRun": true hands its run the whole task. Each
        Result says which: result["goldVisibleToRun"].
        Raises CallerError when a caller Result stopped the run, CancelledError when it was
        cancelled, InfrastructureError when the gateway stays unreachable.
        """
        drafts = list(drafts)
        if gold_keys:
            drafts = [dict(d, goldKeys=list(d.get("goldKeys") or []) + [k for k in gold_keys if k not in (d.get("goldKeys") or [])]) for d in drafts]
        quoted = urllib.parse.quote(run_id, safe="")
        count = None  # type: Optional[int]
        acked_at = time.monotonic()
        failures = 0
        while True:
            try:
                self._call("POST", "/runs", {"runId": run_id, "drafts": drafts})
                query = "" if count is None else "?after=%d" % count
                with self._open("GET", "/runs/%s/results%s" % (quoted, query)) as response:
                    if count is None:
                        count = int(response.headers.get("x-rollout-queue-cursor") or 0)
                    for raw in response:
                        line = raw.strip()
                        if not line:
                            continue
                        item = json.loads(line.decode("utf-8"))
                        if item.get("end"):
                            state = item.get("state")
                            if state == "completed":
                                self._acknowledge(quoted, count)
                                return
                            if state == "cancelled":
                                self._acknowledge(quoted, count)
                                raise CancelledError("run %s was cancelled: %s" % (run_id, item.get("error")), "Cancelled")
                            if state == "stopped":
                                self._acknowledge(quoted, count)
                                raise CallerError("run %s stopped: %s" % (run_id, item.get("error")), "RunStopped")
                            raise InfrastructureError("run %s failed in the gateway: %s" % (run_id, item.get("error")), "RunFailed")
                        failures = 0
                        count += 1
                        yield item
                        # Back here, the caller has consumed ``item`` (it asked for the next one).
                        if time.monotonic() - acked_at >= ack_interval_s:
                            self._acknowledge(quoted, count)
                            acked_at = time.monotonic()
                # The stream ended without a trailer: the gateway went away; reconnect.
                raise InfrastructureError("the results stream of run %s ended early" % run_id, "StreamCut")
            except urllib.error.HTTPError as err:
                raise _typed_error(err.code, _json_of(err))
            except (InfrastructureError,) + _TRANSPORT_ERRORS as err:
                if isinstance(err, RolloutQueueError) and err.type not in ("StreamCut", "RunFailed", "Unreachable"):
                    raise
                if failures >= self.retries:
                    if isinstance(err, RolloutQueueError):
                        raise
                    raise InfrastructureError("cannot reach the gateway at %s: %s" % (self.base_url, err), "Unreachable")
                self._pause(failures)
                failures += 1

    def _acknowledge(self, quoted_run_id, count):
        # type: (str, Optional[int]) -> None
        """Moves the server's cursor to ``count`` Results consumed. Best effort: an ack that
        fails (gateway restarting) only means those Results may be read once more after a
        restart of this client; the next ack, or the reconnect's ``after``, moves it on."""
        try:
            with self._open("POST", "/runs/%s/ack" % quoted_run_id, {"count": count or 0}) as response:
                response.read()
        except _TRANSPORT_ERRORS:
            pass

    def status(self, run_id):
        # type: (str) -> Dict[str, Any]
        """GET /runs/ID: {runId, state, error, results, ackedThrough, run}."""
        return self._call("GET", "/runs/%s" % urllib.parse.quote(run_id, safe=""))

    def cancel(self, run_id):
        # type: (str) -> Dict[str, Any]
        """Cancels a run: waiting rollouts removed, workers told to stop its active ones."""
        return self._call("POST", "/runs/%s/cancel" % urllib.parse.quote(run_id, safe=""))


def _json_of(err):
    # type: (urllib.error.HTTPError) -> Dict[str, Any]
    try:
        value = json.loads(err.read().decode("utf-8") or "{}")
        return value if isinstance(value, dict) else {}
    except (ValueError, OSError):
        return {}


def _typed_error(status, payload):
    # type: (int, Dict[str, Any]) -> RolloutQueueError
    error = payload.get("error") or {}
    message = error.get("message") or "HTTP %d" % status
    type_ = error.get("type") or "HTTP%d" % status
    receipts = payload.get("costReceipts") or []
    if status == 401:
        return AuthError(message, type_, status, receipts)
    if status == 499:
        return CancelledError(message, type_, status, receipts)
    if status == 500:
        return ModelError(message, type_, status, receipts)
    if 400 <= status < 500:
        return CallerError(message, type_, status, receipts)
    return InfrastructureError(message, type_, status, receipts)
