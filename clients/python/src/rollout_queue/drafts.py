"""Building rollout drafts: ``ref()`` for Refs, ``Draft`` for type checkers (schema/rollout-spec.json).

A draft is a plain dict, the spec of one rollout without the fields the plane fills in (``v``,
``leaseId``, ``runId``, ``runAttemptId``)::

    {"taskKey": "c7-add-1",                 # names the lease within the run (default: task["id"])
     "rendered": {"files": {"main.py": source}},   # or one string
     "task": {"id": "add-1", "a": 2, "b": 3, "answer": 5},
     "run": ref("rollout-queue/runners:codeRunner", entrypoint=["python3", "main.py"]),
     "reward": ref("rollout-queue/rewards:lastNumber", goldKey="answer"),
     "meta": {"candidate": 7, "generation": 2}}    # your tag, returned on the Result
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, TypedDict, Union

__all__ = ["ref", "Ref", "Draft", "MAX_META_BYTES"]

#: Largest ``meta``, bytes of its JSON text: the gateway refuses a larger one (400, naming ``drafts[i]``).
MAX_META_BYTES = 4096

#: A Ref as it travels: ``{"$ref": "module:export", "config": {...}}``.
Ref = Dict[str, Any]

#: A rollout draft. ``class`` is a Python keyword, hence the functional form.
Draft = TypedDict(
    "Draft",
    {
        "taskKey": Union[str, int],
        "rendered": Union[str, Dict[str, Dict[str, str]]],
        "task": Dict[str, Any],
        "run": Ref,
        "reward": Ref,
        "meta": Any,
        "class": str,
        "sandbox": Dict[str, Any],
        "placement": Dict[str, str],
        "timeouts": Dict[str, int],
        "rewardRange": List[float],
        "goldKeys": List[str],
        "goldVisibleToRun": bool,
    },
    total=False,
)


def ref(target: str, config: Optional[Mapping[str, Any]] = None, **options: Any) -> Ref:
    """A Ref to a factory installed on the workers: ``ref("rollout-queue/rewards:lastNumber", goldKey="answer")``.

    ``target`` is ``"module:export"``; ``config`` and keyword ``options`` (merged, options win) are
    the factory's config: JSON data only (the worker validates it; a bad one ends the lease
    ``caller``). Raises ValueError for a target without ``:``.
    """
    if not isinstance(target, str) or ":" not in target:
        raise ValueError("ref target %r must be \"module:export\", e.g. \"rollout-queue/rewards:lastNumber\"" % (target,))
    merged = dict(config or {})
    merged.update(options)
    return {"$ref": target, "config": merged}
