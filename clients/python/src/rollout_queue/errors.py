"""Errors of the rollout-queue client, typed by the Result kinds (``caller``, ``model``, ``infrastructure``).

Map them to what to do: CallerError is terminal (fix the request; never retried), ModelError is
the dispatched work's own failure (evidence), InfrastructureError is the plane or the network
after the client's retries (try again later), CancelledError means someone cancelled.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

__all__ = [
    "RolloutQueueError",
    "CallerError",
    "AuthError",
    "RunDeliveredError",
    "ModelError",
    "InfrastructureError",
    "CancelledError",
]


class RolloutQueueError(Exception):
    """Base of the client's errors.

    ``kind``: the Result kind; ``type``: the error type string the gateway sent (``InvalidRunRequest``,
    ``RunConflict``, ``WrongAnswer``, ...); ``status``: the HTTP status (None for a lost connection);
    ``cost_receipts``: receipts the gateway sent with the error (replay them: the work may have paid).
    """

    kind = "infrastructure"

    def __init__(self, message: str, type_: str = "Error", status: Optional[int] = None, cost_receipts: Optional[List[Dict[str, Any]]] = None) -> None:
        super().__init__(message)
        self.type = type_
        self.status = status
        self.cost_receipts = list(cost_receipts or [])


class CallerError(RolloutQueueError):
    """A broken caller contract (HTTP 4xx: a bad draft, a run id posted before with other drafts,
    a caller Result that stopped the run): terminal, never retried."""

    kind = "caller"


class AuthError(CallerError):
    """HTTP 401: no bearer token, or not the one the gateway was started with."""


class RunDeliveredError(CallerError):
    """``map_rollouts`` of a run id whose Results were all delivered before (a run id used again):
    nothing would run and nothing would be yielded. ``run_id``; ``results``: how many were delivered.
    Use a new run id to run the drafts again, ``on_delivered="replay"`` to read those Results again,
    or drafts of ``"class": "evaluation"`` to have repeats answered from the evaluation cache."""

    def __init__(self, run_id: str, results: int) -> None:
        super().__init__(
            "run %r completed earlier and all %d of its Results were delivered: posting it again runs nothing and yields nothing. "
            "Use a new run_id to run these drafts again; pass on_delivered=\"replay\" to read its Results again "
            "(or on_delivered=\"empty\" to get nothing); to re-score a candidate without paying twice, give its drafts "
            "\"class\": \"evaluation\" (answered from the evaluation cache by content)" % (run_id, results),
            "RunDelivered",
        )
        self.run_id = run_id
        self.results = results


class ModelError(RolloutQueueError):
    """The dispatched work itself failed (HTTP 500): keep it as evidence."""

    kind = "model"


class InfrastructureError(RolloutQueueError):
    """A transient of the plane that outlasted the client's retries (HTTP 502/503/504, lost connections)."""

    kind = "infrastructure"


class CancelledError(RolloutQueueError):
    """The dispatch (HTTP 499) or the run was cancelled."""

    kind = "caller"
