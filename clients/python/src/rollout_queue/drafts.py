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

from typing import Any, Dict, List, Mapping, Optional, Sequence, TypedDict, Union

__all__ = ["ref", "command_reward", "Ref", "Draft", "MAX_META_BYTES"]

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


def command_reward(
    command: Sequence[str],
    files: Optional[Mapping[str, str]] = None,
    *,
    timeout_ms: Optional[int] = None,
    memory_mb: Optional[int] = None,
    gold_keys: Optional[Union[str, Sequence[str]]] = None,
    see_work_dir: bool = False,
) -> Ref:
    """The Ref of the program reward, ``rollout-queue/rewards:command`` (docs/python.md, "Rewards in Python").

    The workers run ``command`` (e.g. ``["python3", "judge.py"]``, or ``["python3", "-m",
    "mypkg.judge"]`` for a judge installed on the workers) in a fresh directory of its own holding
    ``files`` (relative path -> file text, e.g. ``{"judge.py": source}``), contained like the
    artifact; it reads ``{"task": ..., "output": ...}`` as JSON on stdin and prints the reward (a
    number, or ``{"reward": r, "details": {...}}``; details come back as ``Result.reward_details``).

    ``timeout_ms``: the judge's own limit, milliseconds (default 30000; past it the rollout ends
    ``model`` / ``RewardTimeout``). ``memory_mb``: its memory, MiB (default and maximum: the
    draft's ``sandbox.memoryMb``). ``gold_keys``: the task keys it scores against, removed from
    what the run sees (default ``["answer"]``; ``[]`` for none). ``see_work_dir``: True hands the
    judge a copy of the files the run's program left, under ``artifact/`` in its directory.

    Raises ValueError for an empty ``command`` or a non-text file; the worker checks the rest (a
    bad config ends each lease ``caller``, naming the field).
    """
    if isinstance(command, str) or not command or not all(isinstance(part, str) for part in command):
        raise ValueError("command %r must be a non-empty list of strings, e.g. [\"python3\", \"judge.py\"]" % (command,))
    config: Dict[str, Any] = {"command": list(command)}
    if files:
        for path, text in files.items():
            if not isinstance(path, str) or not isinstance(text, str):
                raise ValueError("files[%r] must be the file's text (a str) under a relative path; read the file first, e.g. open(path).read()" % (path,))
        config["files"] = dict(files)
    if timeout_ms is not None:
        config["timeoutMs"] = timeout_ms
    if memory_mb is not None:
        config["memoryMb"] = memory_mb
    if gold_keys is not None:
        config["goldKeys"] = gold_keys if isinstance(gold_keys, str) else list(gold_keys)
    if see_work_dir:
        config["seeWorkDir"] = True
    return {"$ref": "rollout-queue/rewards:command", "config": config}
