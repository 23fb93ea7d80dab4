"""Drafts and helpers shared by the tests (not collected: no test_ prefix)."""

from rollout_queue import ref

#: Fixture Refs the test workers allow (test/fixtures/rq-fixtures/failures.js).
ECHO = ref("rq-fixtures/failures:echo")
CONSTANT = ref("rq-fixtures/failures:constant")
THROWS = ref("rq-fixtures/failures:throws", name="WrongAnswer", message="2 + 2 is not 5")


def draft(task_id, meta=None, run=ECHO, reward=CONSTANT, **task):
    """A fixture draft: echo's output (the task id, the child's pid), reward 1; a ``delayMs`` in
    the task slows the run by that many milliseconds."""
    value = {"rendered": "r", "task": dict(task, id=task_id), "run": run, "reward": reward}
    if meta is not None:
        value["meta"] = meta
    return value
