"""The evolution example's reward as a Python program: the swappable piece of evolve.py.

evolve.py ships this file to the workers in its reward, ``rollout-queue/rewards:command``
(docs/python.md "Rewards in Python"), which runs it per rollout, contained like the candidates:

- stdin: one JSON object ``{"task": <the whole task, gold included>, "output": <the run's output>}``;
  codeRunner's output is ``{"stdout": ..., "stderr": ..., "exitCode": ...}``;
- stdout: the reward, a number in the rollout's rewardRange (default [0, 1]), or
  ``{"reward": r, "details": {...}}`` to keep details with the Result;
- a judge that crashes ends the rollout ``model`` (evidence about the candidate), one that
  prints no number ``caller``; this one scores an output without a number 0, as lastNumber does.

Run it by hand: ``echo '{"task": {"answer": 5}, "output": {"stdout": "5\\n"}}' | python3 judge.py``
prints ``{"reward": 1.0, "details": {"got": 5.0, "gold": 5}}``.
"""

import json
import re
import sys

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def score(task, output):
    """1.0 when the last number the program printed equals task["answer"], else 0.0."""
    text = output.get("stdout", "") if isinstance(output, dict) else str(output)
    numbers = NUMBER.findall(text or "")
    if not numbers:
        return 0.0, {"why": "no number in the output"}
    got = float(numbers[-1])
    return (1.0 if got == float(task["answer"]) else 0.0), {"got": got, "gold": task["answer"]}


if __name__ == "__main__":
    request = json.load(sys.stdin)
    reward, details = score(request["task"], request["output"])
    print(json.dumps({"reward": reward, "details": details}))
