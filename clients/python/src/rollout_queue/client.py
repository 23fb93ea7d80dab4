"""``Client``: the rollout-queue gateway from Python (the runs API and the eval harness' dispatch wire)."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

from ._http import RETRYABLE_STATUSES, TRANSPORT_ERRORS, RetryBudget, Transport, json_of, typed_error
from .errors import CallerError, CancelledError, InfrastructureError, ModelError, RolloutQueueError, RunDeliveredError
from .results import Dispatched, ErrorInfo, Result, RunStatus

__all__ = ["Client", "ON_DELIVERED", "ON_MODEL_ERROR"]

#: What ``map_rollouts`` does for a run id whose Results were all delivered before.
ON_DELIVERED = ("raise", "replay", "empty")
#: What ``dispatch`` does when the dispatch itself failed (HTTP 500).
ON_MODEL_ERROR = ("raise", "return")

#: Stream failures a ``map_rollouts`` reconnect recovers from (the gateway restarted or went away).
_RECONNECTABLE = ("StreamCut", "RunFailed")


def _choice(name: str, value: str, allowed: tuple) -> str:
    if value not in allowed:
        raise ValueError("%s=%r is not one of %s" % (name, value, ", ".join(repr(choice) for choice in allowed)))
    return value


class Client:
    """A client of one rollout-queue gateway (``rollout-queue gateway``).

    - ``base_url``: e.g. ``"http://127.0.0.1:8080"``;
    - ``token``: the gateway's bearer token (``--auth-token-env``); None when it runs ``--no-auth`` on loopback;
    - ``retries``: how many times a retryable failure (HTTP 408/429/502/503/504, a refused or cut
      connection) is retried, default 8; a 4xx is never retried;
    - ``backoff_s`` / ``max_backoff_s``: first and largest pause between tries, seconds, doubling
      (defaults 0.2 and 5.0: 0.2, 0.4, ..., 5, 5, 5, about 21 s for the 8 retries). The budget is
      per call; ``map_rollouts`` spends one budget on all its requests, renewed by each Result.
      The first retry of an outage logs one warning on the ``rollout_queue`` logger;
    - ``timeout_s``: socket timeout of one request, seconds (default None: a dispatch may run for
      minutes, and a results stream waits for Results).

    Every call goes through the durable queue: Results are kept in Redis until delivered, so a
    client (or gateway) that restarts loses nothing.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, *, retries: int = 8, backoff_s: float = 0.2, max_backoff_s: float = 5.0, timeout_s: Optional[float] = None) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url %r must be the gateway's http:// or https:// address, e.g. \"http://127.0.0.1:8080\"" % (base_url,))
        if not isinstance(retries, int) or retries < 0:
            raise ValueError("retries=%r must be a whole number >= 0" % (retries,))
        self._http = Transport(base_url, token, retries, backoff_s, max_backoff_s, timeout_s)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    # ── the eval harness' dispatch wire ─────────────────────────────────────
    def dispatch(
        self,
        scenario: Any,
        cell_id: str,
        run_attempt_id: str,
        *,
        rep: int = 0,
        seed: int = 0,
        placement: Any = None,
        generation: Optional[int] = None,
        cycle_id: Optional[str] = None,
        on_model_error: str = "raise",
    ) -> Dispatched:
        """Runs one scenario on a worker (``POST /dispatch``) and returns a Dispatched:
        the artifact, the files the Dispatch wrote, and the cost receipts of its paid calls.

        The lease is keyed by ``(run_attempt_id, cell_id)``: calling again with the same pair
        (a retry, another process) attaches to the same lease, which runs at most 3 times
        whatever the client retries. ``placement``: a queue name, or ``{"queue": name, label: value}``.

        ``on_model_error``: ``"raise"`` (default) raises ModelError when the Dispatch itself
        failed; ``"return"`` returns ``Dispatched(kind="model", error=...)`` instead (its
        receipts included), so a failure is data, as in ``map_rollouts``.
        Raises CallerError (400/404/413; AuthError for 401), CancelledError (499),
        InfrastructureError (503 or no connection after the retries); every error carries the
        receipts the gateway sent (``err.cost_receipts``).
        """
        _choice("on_model_error", on_model_error, ON_MODEL_ERROR)
        body: Dict[str, Any] = {"scenario": scenario, "cellId": cell_id, "runAttemptId": run_attempt_id, "rep": rep, "seed": seed}
        if placement is not None:
            body["placement"] = placement
        if generation is not None:
            body["generation"] = generation
        if cycle_id is not None:
            body["cycleId"] = cycle_id
        try:
            answer = self._http.call("POST", "/dispatch", body)
        except ModelError as err:
            if on_model_error == "raise":
                raise
            return Dispatched(kind="model", artifact=None, files={}, cost_receipts=err.cost_receipts, error=ErrorInfo(err.type, str(err)))
        return Dispatched(kind="ok", artifact=answer.get("artifact"), files=dict(answer.get("files") or {}), cost_receipts=list(answer.get("costReceipts") or []))

    # ── the runs API ────────────────────────────────────────────────────────
    def map_rollouts(
        self,
        drafts: Iterable[Mapping[str, Any]],
        run_id: str,
        *,
        ack_interval_s: float = 0.2,
        on_delivered: str = "raise",
        gold_keys: Optional[Iterable[str]] = None,
        weight: Optional[float] = None,
    ) -> Iterator[Result]:
        """Runs every draft as one rollout; yields each Result once, in completion order.

        ``drafts``: dicts as in schema/rollout-spec.json without ``v``, ``leaseId``, ``runId``,
        ``runAttemptId`` (see ``rollout_queue.drafts``); give each a ``meta`` (small JSON, at most
        4096 bytes) and match Results to candidates by ``result.meta``. ``model``,
        ``infrastructure`` and ``caller`` Results are yielded, not raised.

        Resumable: calling it again with the same ``run_id`` and drafts (also from a new process, or
        after the gateway restarted) enqueues nothing twice and continues after the last
        acknowledged Result. A Result counts as consumed once the loop asks for the next one;
        consumed Results are acknowledged (``POST /runs/ID/ack``) at most every ``ack_interval_s``
        seconds (0: each one), so a process killed even with SIGKILL sees again only the Result it
        was handling and those consumed in the last ``ack_interval_s``.

        ``on_delivered``: what to do when every Result of ``run_id`` was delivered before (the run
        id was used again): ``"raise"`` (default) raises RunDeliveredError before anything is
        yielded; ``"replay"`` yields those Results again; ``"empty"`` yields nothing.

        The gold stays with the reward: workers remove the keys a reward scores against (a
        built-in reward's goldKey, goldKey/gold_key in the reward Ref's config) from the task the
        run receives. ``gold_keys`` lists more task keys to keep from the run, added to each
        draft's own ``"goldKeys"``; a draft with ``"goldVisibleToRun": True`` hands its run the
        whole task. Each Result says which: ``result.gold_visible_to_run``.

        ``weight``: the run's share of the queue's workers relative to the other runs on it
        (0.01–100, default 1: equal shares; see docs/fair-share.md).

        Raises ValueError/TypeError for bad arguments (at the call), CallerError for drafts the
        gateway refuses (400 naming ``drafts[i]``, nothing enqueued), for other drafts under a
        ``run_id`` posted before (409 ``RunConflict``), or when a caller Result stopped the run;
        CancelledError when the run was cancelled; InfrastructureError when the gateway stays
        unreachable after the retries.
        """
        _choice("on_delivered", on_delivered, ON_DELIVERED)
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.01 <= weight <= 100):
            raise ValueError("weight=%r must be a number from 0.01 to 100 (the run's share of the workers; default 1)" % (weight,))
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("run_id=%r must be a non-empty string of letters, digits, '_' and '-'" % (run_id,))
        listed = list(drafts)
        for index, draft in enumerate(listed):
            if not isinstance(draft, Mapping):
                raise TypeError("drafts[%d] is a %s; each draft is a dict like {\"rendered\": ..., \"task\": {...}, \"run\": ref(...), \"reward\": ref(...)}" % (index, type(draft).__name__))
            where = _non_json_number(draft, "drafts[%d]" % index)
            if where is not None:
                raise ValueError("%s is NaN or infinite, which JSON cannot carry; give it a finite number or null" % where)
        if gold_keys:
            extra = list(gold_keys)
            listed = [dict(draft, goldKeys=list(draft.get("goldKeys") or []) + [key for key in extra if key not in (draft.get("goldKeys") or [])]) for draft in listed]
        return self._stream(listed, run_id, ack_interval_s, on_delivered, weight)

    def _stream(self, drafts: List[Mapping[str, Any]], run_id: str, ack_interval_s: float, on_delivered: str, weight: Optional[float] = None) -> Iterator[Result]:
        quoted = urllib.parse.quote(run_id, safe="")
        cursor = None  # type: Optional[int]
        acked_at = time.monotonic()
        first_post = True
        # One retry budget for the whole loop: posting the run, reading its status and opening its
        # results stream all spend from it, so an unreachable gateway fails after `retries` pauses
        # of the documented schedule (each request retrying on its own inside a reconnect loop that
        # retried too multiplied them: 9 × 9 tries, 212 s instead of 21 s by default). A Result
        # arriving resets it: a stream that was connected and dropped gets the whole budget to
        # reconnect.
        budget = self._http.budget("POST", "/runs (run %s)" % run_id)
        body = {"runId": run_id, "drafts": drafts}  # type: Dict[str, Any]
        if weight is not None:
            body["weight"] = weight
        while True:
            # Posting again on a reconnect is how the run resumes: the gateway enqueues nothing
            # twice and restarts the run's loop if it had stopped (a gateway restart).
            posted = self._http.call("POST", "/runs", body, budget)
            if first_post:
                first_post = False
                before = self._status(run_id, budget) if posted.get("state") == "completed" else None
                if before is not None and before.delivered_before:
                    if on_delivered == "raise":
                        raise RunDeliveredError(run_id, before.results)
                    if on_delivered == "empty":
                        return
                    cursor = 0  # replay: read the log from its start
            query = "" if cursor is None else "?after=%d" % cursor
            try:
                with self._http.open("GET", "/runs/%s/results%s" % (quoted, query)) as response:
                    if cursor is None:
                        cursor = int(response.headers.get("x-rollout-queue-cursor") or 0)
                    for raw in response:
                        line = raw.strip()
                        if not line:
                            continue
                        item = json.loads(line.decode("utf-8"))
                        if item.get("end"):
                            self._acknowledge(quoted, cursor)
                            self._raise_for_end(run_id, item)
                            return
                        result = Result.from_dict(item)
                        budget.reset()
                        cursor += 1
                        yield result
                        # Back here, the caller has consumed `result` (it asked for the next one).
                        if time.monotonic() - acked_at >= ack_interval_s:
                            self._acknowledge(quoted, cursor)
                            acked_at = time.monotonic()
                # The stream ended without its trailer: the gateway went away; reconnect.
                failure = InfrastructureError("the results stream of run %s ended early" % run_id, "StreamCut")  # type: RolloutQueueError
                reason = failure  # type: Any
            except urllib.error.HTTPError as err:
                failure = typed_error(err.code, json_of(err))
                if err.code not in RETRYABLE_STATUSES:
                    raise failure
                reason = failure
            except InfrastructureError as err:
                # RunFailed (the run's end line): posting it again restarts its loop. Other
                # InfrastructureErrors (a malformed Result) are not cured by reconnecting.
                if err.type not in _RECONNECTABLE:
                    raise
                failure, reason = err, err
            except TRANSPORT_ERRORS as err:
                failure, reason = self._http.unreachable(err), err
            budget.spend(failure, reason)

    @staticmethod
    def _raise_for_end(run_id: str, trailer: Mapping[str, Any]) -> None:
        """The run's end line: returns for ``completed``, raises for the other ends."""
        state = trailer.get("state")
        if state == "completed":
            return
        if state == "cancelled":
            raise CancelledError("run %s was cancelled: %s" % (run_id, trailer.get("error")), "Cancelled")
        if state == "stopped":
            raise CallerError("run %s stopped: %s" % (run_id, trailer.get("error")), "RunStopped")
        raise InfrastructureError("run %s failed in the gateway: %s" % (run_id, trailer.get("error")), "RunFailed")

    def _acknowledge(self, quoted_run_id: str, count: Optional[int]) -> None:
        """Moves the gateway's cursor to ``count`` Results consumed. Best effort: an ack that
        fails (gateway restarting) only means those Results may be read once more after a
        restart of this client; the next ack, or the reconnect's ``after``, moves it on."""
        try:
            with self._http.open("POST", "/runs/%s/ack" % quoted_run_id, {"count": count or 0}) as response:
                response.read()
        except TRANSPORT_ERRORS:
            pass

    def status(self, run_id: str) -> RunStatus:
        """``GET /runs/ID`` as a RunStatus. Raises CallerError (404 ``NoSuchRun``) for an unknown run,
        InfrastructureError when the gateway stays unreachable after the retries."""
        return self._status(run_id, None)

    def _status(self, run_id: str, budget: Optional[RetryBudget]) -> RunStatus:
        return RunStatus.from_dict(self._http.call("GET", "/runs/%s" % urllib.parse.quote(run_id, safe=""), None, budget))

    def cancel(self, run_id: str) -> Dict[str, Any]:
        """Cancels a run (``POST /runs/ID/cancel``): waiting rollouts removed, workers told to stop its
        active ones; a ``map_rollouts`` loop of it then raises CancelledError. Returns
        ``{runId, removed, workersNotified}`` (with ``alreadyEnded`` for a run that had ended)."""
        return self._http.call("POST", "/runs/%s/cancel" % urllib.parse.quote(run_id, safe=""))


def _non_json_number(value: Any, path: str) -> Optional[str]:
    """The path of the first NaN or infinite float inside ``value`` (dicts and lists), or None.

    Python's ``json.dumps`` writes them as ``NaN``/``Infinity``, which the gateway (strict JSON,
    RFC 8259) refuses as a malformed body; caught here, the error names the draft and the field."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _non_json_number(item, "%s.%s" % (path, key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _non_json_number(item, "%s[%d]" % (path, i))
            if found is not None:
                return found
    return None
