"""The client's HTTP transport: JSON requests with a bearer token, retried with back-off (urllib only)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

from .errors import AuthError, CallerError, CancelledError, InfrastructureError, ModelError, RolloutQueueError

#: HTTP statuses retried with back-off: the harness client's rule, minus 500 (a model error is final).
RETRYABLE_STATUSES = frozenset([408, 429, 502, 503, 504])

#: Failures of the connection itself (refused, reset, cut mid-answer, timed out): retried.
TRANSPORT_ERRORS = (urllib.error.URLError, ConnectionError, http.client.HTTPException, socket.timeout, OSError)

#: Where the client says it is waiting on the gateway (one warning per outage, not one per try).
#: Without logging configured, Python prints warnings to stderr.
LOG = logging.getLogger("rollout_queue")

#: The pause between tries; a module name so that tests can replace it and read the pauses.
_sleep = time.sleep


class RetryBudget:
    """The retries of one logical request: ``transport.retries`` failed tries after the first,
    each followed by the next pause of the documented schedule (``backoff_s`` doubling up to
    ``max_backoff_s``). Every request made for the same logical request spends from the same
    budget, so nesting never multiplies the tries (``map_rollouts``: posting the run, reading its
    status, opening its results stream). ``reset()``: progress was made (a Result arrived), the
    next failure starts a new outage with the whole budget."""

    def __init__(self, transport: "Transport", what: str) -> None:
        self.transport = transport
        self.what = what
        self.failures = 0
        self.warned = False

    def spend(self, error: RolloutQueueError, reason: Any = None) -> None:
        """After a retryable failure: pauses before the next try, or raises ``error`` when the
        budget is spent (``retries`` pauses taken since the last reset). ``reason``: the failure
        as the warning names it (default: ``error``)."""
        if self.failures >= self.transport.retries:
            raise error
        if not self.warned:
            # Once per outage: a full schedule can take ~21 s by default, which should not look
            # like a hang; one line per try would be noise.
            self.warned = True
            LOG.warning(
                "%s: %s; retrying up to %d times, pausing %s s (about %.1f s in all)",
                self.what, error if reason is None else reason, self.transport.retries - self.failures,
                self.transport.schedule_text(self.failures), sum(self.transport.schedule_s()[self.failures:]),
            )
        self.transport.pause(self.failures)
        self.failures += 1

    def reset(self) -> None:
        self.failures = 0
        self.warned = False


class Transport:
    """One gateway: ``base_url``, ``token`` (None: the gateway runs with --no-auth on loopback);
    ``retries`` tries after the first for a retryable failure; pauses of ``backoff_s`` doubling up
    to ``max_backoff_s`` seconds; ``timeout_s``: socket timeout of one request, seconds (None: none)."""

    def __init__(self, base_url: str, token: Optional[str], retries: int, backoff_s: float, max_backoff_s: float, timeout_s: Optional[float]) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s

    def open(self, method: str, path: str, body: Any = None) -> http.client.HTTPResponse:
        """One request; the response is the caller's to read and close. Raises urllib's errors."""
        data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("accept", "application/json")
        if data is not None:
            request.add_header("content-type", "application/json")
        if self.token is not None:
            request.add_header("authorization", "Bearer " + self.token)
        return urllib.request.urlopen(request, timeout=self.timeout_s)

    def pause_s(self, attempt: int) -> float:
        """The pause after failed try ``attempt + 1`` (0-based ``attempt``), seconds:
        backoff_s × 2^attempt, at most max_backoff_s."""
        return min(self.max_backoff_s, self.backoff_s * (2 ** attempt))

    def schedule_s(self) -> List[float]:
        """Every pause of one budget, seconds, in order (``retries`` of them)."""
        return [self.pause_s(attempt) for attempt in range(self.retries)]

    def schedule_text(self, start: int = 0) -> str:
        pauses = self.schedule_s()[start:]
        shown = ", ".join("%g" % pause for pause in pauses[:6])
        return shown + (", ..." if len(pauses) > 6 else "")

    def pause(self, attempt: int) -> None:
        """Sleeps pause_s(attempt) seconds before the next try."""
        _sleep(self.pause_s(attempt))

    def budget(self, method: str, path: str) -> RetryBudget:
        """A fresh retry budget for one logical request (named ``method path`` in the warning)."""
        return RetryBudget(self, "%s %s%s" % (method, self.base_url, path))

    def call(self, method: str, path: str, body: Any = None, budget: Optional[RetryBudget] = None) -> Any:
        """One JSON request, retried on RETRYABLE_STATUSES and lost connections; its JSON answer.

        ``budget``: the retry budget of the logical request this one is part of (``map_rollouts``
        shares one between its requests); None: a fresh one, so at most ``retries`` + 1 tries.
        Raises the typed error of the final status (see typed_error), or InfrastructureError
        (``Unreachable``) when no connection was made after the retries."""
        if budget is None:
            budget = self.budget(method, path)
        while True:
            try:
                with self.open(method, path, body) as response:
                    return json.loads(response.read().decode("utf-8") or "null")
            except urllib.error.HTTPError as err:
                error = typed_error(err.code, json_of(err))
                if err.code not in RETRYABLE_STATUSES:
                    raise error
                budget.spend(error)
            except TRANSPORT_ERRORS as err:
                budget.spend(self.unreachable(err), err)

    def unreachable(self, err: BaseException) -> InfrastructureError:
        """InfrastructureError ``Unreachable`` for a connection that failed on the last try."""
        return InfrastructureError("cannot reach the gateway at %s after %d retries: %s" % (self.base_url, self.retries, err), "Unreachable")


def json_of(err: urllib.error.HTTPError) -> Dict[str, Any]:
    """The JSON object of an error answer, {} when it has none."""
    try:
        value = json.loads(err.read().decode("utf-8") or "{}")
        return value if isinstance(value, dict) else {}
    except (ValueError, OSError):
        return {}


def typed_error(status: int, payload: Dict[str, Any]) -> RolloutQueueError:
    """The error of an HTTP answer: 401 AuthError, 499 CancelledError, 500 ModelError, other 4xx
    CallerError, else InfrastructureError; type and message are the gateway's ``error``."""
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
