"""Typed values the gateway answers with: Result (schema/result.json), a dispatch's answer, a run's status.

Wire names are camelCase (``leaseId``); attributes are snake_case (``lease_id``). Each value
keeps the dict it was read from in ``raw`` (fields a newer gateway adds are there too), and
``to_dict()`` gives it back for ``json.dumps``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from .errors import InfrastructureError

__all__ = ["ErrorInfo", "CostReceipt", "Result", "Dispatched", "RunStatus", "RESULT_KINDS"]

#: How a rollout ended: ``ok`` (reward is a finite number), ``model`` (the thing under test failed:
#: keep it as evidence), ``infrastructure`` (the plane gave up after its re-dispatches: keep going),
#: ``caller`` (a broken caller contract: a bad Ref, a bad draft, a reward outside rewardRange).
RESULT_KINDS = ("ok", "model", "infrastructure", "caller")


@dataclass(frozen=True)
class ErrorInfo:
    """What went wrong, as data: ``type`` is a stable string (``RunThrew``, ``NoWorker``,
    ``InvalidSpec``, ...), ``message`` says what happened and the fix."""

    type: str
    message: str

    @classmethod
    def from_dict(cls, value: Any) -> Optional["ErrorInfo"]:
        if not isinstance(value, Mapping):
            return None
        return cls(type=str(value.get("type") or "Error"), message=str(value.get("message") or ""))


@dataclass(frozen=True)
class CostReceipt:
    """Paid work a rollout did: ``id`` (unique per receipt: replay each once), ``usd`` (US dollars),
    ``label``, ``units`` (e.g. ``{"inputTokens": 1200}``)."""

    id: str
    usd: float
    label: Optional[str] = None
    units: Optional[Dict[str, float]] = None


def _required(value: Mapping[str, Any], key: str) -> Any:
    if key not in value:
        raise InfrastructureError("the gateway sent a Result without field %r (a gateway of another version?): %s" % (key, sorted(value)), "BadResult")
    return value[key]


@dataclass(frozen=True)
class Result:
    """The one outcome of one lease (schema/result.json), delivered once.

    - ``lease_id``: ``<run_id>.<task key>``; ``run_id``; ``task_id``: the task's ``id`` (else its key);
    - ``kind``: one of RESULT_KINDS; ``reward``: a finite number when ``kind == "ok"`` (inside the
      draft's rewardRange, default [0, 1]), else None; ``output``: what the run returned (JSON);
    - ``error``: ErrorInfo, None for ``ok``;
    - ``attempts``: times a worker started it; ``redispatched``: times it was sent out again after a
      worker was lost or a child crashed (at most 2; then it ends ``infrastructure``);
    - ``worker``: the worker's name, None when no worker answered (a refused draft, a deadline);
    - ``queued_ms``: enqueue to the start of the last attempt, milliseconds (None when unknown);
      ``run_ms``: the last attempt's duration, milliseconds (None when it never ran);
      ``finished_at``: ISO 8601 time, by the Redis clock;
    - ``cost``: CostReceipt list; ``cached``: True when an evaluation was answered from the cache;
    - ``meta``: the draft's ``meta``, untouched (None when it had none): match Results to your
      candidates by it;
    - ``reward_details``: what the reward kept with its score (a program reward that printed
      ``{"reward": r, "details": ...}``), JSON data up to 8192 bytes; None when it gave none;
    - ``gold_visible_to_run``: False when the worker removed the task's gold keys from what the run
      saw, True when the draft set ``goldVisibleToRun``; None on a Result no worker wrote.
    """

    lease_id: str
    run_id: str
    task_id: str
    kind: str
    output: Any
    reward: Optional[float]
    error: Optional[ErrorInfo]
    attempts: int
    redispatched: int
    worker: Optional[str]
    queued_ms: Optional[float]
    run_ms: Optional[float]
    finished_at: str
    cost: List[CostReceipt] = field(default_factory=list)
    cached: bool = False
    meta: Any = None
    gold_visible_to_run: Optional[bool] = None
    reward_details: Any = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the rollout ran and was scored (``kind == "ok"``)."""
        return self.kind == "ok"

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Result":
        """A Result from its wire dict. Raises InfrastructureError (``BadResult``) for a dict that
        lacks a field of schema/result.json; unknown fields are kept in ``raw`` only."""
        if not isinstance(value, Mapping):
            raise InfrastructureError("the gateway sent a Result that is not a JSON object: %r" % (value,), "BadResult")
        receipts = []
        for receipt in value.get("cost") or []:
            if isinstance(receipt, Mapping):
                receipts.append(CostReceipt(id=str(receipt.get("id")), usd=float(receipt.get("usd") or 0), label=receipt.get("label"), units=receipt.get("units")))
        return cls(
            lease_id=_required(value, "leaseId"),
            run_id=_required(value, "runId"),
            task_id=_required(value, "taskId"),
            kind=_required(value, "kind"),
            output=value.get("output"),
            reward=value.get("reward"),
            error=ErrorInfo.from_dict(value.get("error")),
            attempts=int(value.get("attempts") or 0),
            redispatched=int(value.get("redispatched") or 0),
            worker=value.get("worker"),
            queued_ms=value.get("queuedMs"),
            run_ms=value.get("runMs"),
            finished_at=_required(value, "finishedAt"),
            cost=receipts,
            cached=value.get("cached") is True,
            meta=value.get("meta"),
            gold_visible_to_run=value.get("goldVisibleToRun"),
            reward_details=value.get("rewardDetails"),
            raw=dict(value),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The wire dict (camelCase), as the gateway sent it."""
        return dict(self.raw)


@dataclass(frozen=True)
class Dispatched:
    """The answer of ``Client.dispatch``.

    - ``kind``: ``"ok"``, or ``"model"`` (the dispatch itself failed; only with ``on_model_error="return"``);
    - ``artifact``: what the Dispatch returned (None for ``model``);
    - ``files``: files it wrote with ``ctx.artifacts.write``, relative path → text (``{}`` when none,
      and for ``model``: a Dispatch that throws leaves no files);
    - ``cost_receipts``: the harness' receipts ``{callId, usd, label?, units?}`` of paid calls,
      also for ``model``: replay them into your ledger;
    - ``error``: ErrorInfo for ``model``, else None.
    """

    kind: str
    artifact: Any
    files: Dict[str, str]
    cost_receipts: List[Dict[str, Any]]
    error: Optional[ErrorInfo] = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


@dataclass(frozen=True)
class RunStatus:
    """``GET /runs/ID``: ``state`` (``running``, ``completed``, ``stopped``, ``cancelled``, ``failed``,
    None before the gateway listed anything), ``error`` (why it stopped), ``results`` (Results listed),
    ``acked_through`` (Results the client acknowledged), ``run`` (the run record: counts, status, ...)."""

    run_id: str
    state: Optional[str]
    error: Optional[str]
    results: int
    acked_through: int
    run: Optional[Dict[str, Any]]

    @property
    def delivered_before(self) -> bool:
        """True when the run completed and every Result was acknowledged: posting it again yields nothing new."""
        return self.state == "completed" and self.acked_through >= self.results

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "RunStatus":
        return cls(
            run_id=str(value.get("runId")),
            state=value.get("state"),
            error=value.get("error"),
            results=int(value.get("results") or 0),
            acked_through=int(value.get("ackedThrough") or 0),
            run=value.get("run"),
        )
