"""The client's HTTP transport: JSON requests with a bearer token, retried with back-off (urllib only)."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

from .errors import AuthError, CallerError, CancelledError, InfrastructureError, ModelError, RolloutQueueError

#: HTTP statuses retried with back-off: the harness client's rule, minus 500 (a model error is final).
RETRYABLE_STATUSES = frozenset([408, 429, 502, 503, 504])

#: Failures of the connection itself (refused, reset, cut mid-answer, timed out): retried.
TRANSPORT_ERRORS = (urllib.error.URLError, ConnectionError, http.client.HTTPException, socket.timeout, OSError)


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

    def pause(self, attempt: int) -> None:
        """Sleeps before try ``attempt + 1``: backoff_s × 2^attempt, at most max_backoff_s."""
        time.sleep(min(self.max_backoff_s, self.backoff_s * (2 ** attempt)))

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One JSON request, retried on RETRYABLE_STATUSES and lost connections; its JSON answer.
        Raises the typed error of the final status (see typed_error), or InfrastructureError
        (``Unreachable``) when no connection was made after the retries."""
        attempt = 0
        while True:
            try:
                with self.open(method, path, body) as response:
                    return json.loads(response.read().decode("utf-8") or "null")
            except urllib.error.HTTPError as err:
                if err.code in RETRYABLE_STATUSES and attempt < self.retries:
                    self.pause(attempt)
                    attempt += 1
                    continue
                raise typed_error(err.code, json_of(err))
            except TRANSPORT_ERRORS as err:
                if attempt < self.retries:
                    self.pause(attempt)
                    attempt += 1
                    continue
                raise self.unreachable(err)

    def unreachable(self, err: BaseException) -> InfrastructureError:
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
