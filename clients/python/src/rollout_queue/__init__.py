"""rollout_queue: the Python client of rollout-queue's gateway (standard library only, Python >= 3.9).

    from rollout_queue import Client, ref

    client = Client("http://127.0.0.1:8080", token=os.environ["RQ_GATEWAY_TOKEN"])
    drafts = [{"rendered": {"files": {"main.py": source}}, "task": task,
               "run": ref("rollout-queue/runners:codeRunner", entrypoint=["python3", "main.py"]),
               "reward": ref("rollout-queue/rewards:lastNumber", goldKey="answer"),
               "meta": {"candidate": k}} for task in tasks]
    for result in client.map_rollouts(drafts, run_id="gen-12"):
        scores[result.meta["candidate"]].append(result.reward if result.ok else 0.0)

Results are typed (``Result``, a frozen dataclass of schema/result.json's fields); failures of
a rollout are Results (``kind`` model / infrastructure / caller), never exceptions; the
client's own errors are typed by kind (``CallerError``, ``ModelError``,
``InfrastructureError``, ``CancelledError``). Documentation: docs/python.md.
"""

from .client import ON_DELIVERED, ON_MODEL_ERROR, Client
from .drafts import MAX_META_BYTES, Draft, Ref, command_reward, ref
from .errors import AuthError, CallerError, CancelledError, InfrastructureError, ModelError, RolloutQueueError, RunDeliveredError
from .results import RESULT_KINDS, CostReceipt, Dispatched, ErrorInfo, Result, RunStatus

__version__ = "0.1.0"

__all__ = [
    "Client",
    "ON_DELIVERED",
    "ON_MODEL_ERROR",
    "ref",
    "command_reward",
    "Ref",
    "Draft",
    "MAX_META_BYTES",
    "Result",
    "ErrorInfo",
    "CostReceipt",
    "Dispatched",
    "RunStatus",
    "RESULT_KINDS",
    "RolloutQueueError",
    "CallerError",
    "AuthError",
    "RunDeliveredError",
    "ModelError",
    "InfrastructureError",
    "CancelledError",
]
