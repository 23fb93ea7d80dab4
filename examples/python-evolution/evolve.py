"""Evolves small Python programs through rollout-queue's gateway (docs/python.md, "The evolution example").

Each candidate is a program, main.py, that reads a task as JSON on stdin and prints its answer.
A generation scores every candidate on every task through the durable queue (one rollout per
candidate x task, run on the workers by codeRunner with the argv entrypoint
["python3", "main.py"], scored by judge.py, a Python reward the workers run as a program),
keeps the best and mutates them. Results are tied to candidates by the
draft's ``meta``, never by parsing lease ids.

    pip install ./clients/python
    RQ_GATEWAY_URL=http://127.0.0.1:8080 RQ_GATEWAY_TOKEN=... python3 examples/python-evolution/evolve.py

Environment: RQ_GATEWAY_URL (default http://127.0.0.1:8080), RQ_GATEWAY_TOKEN (none: a gateway
started with --no-auth), RUN_PREFIX (default "evolve"), GENERATIONS (default 3), SLOW_S (seconds
each program sleeps before answering, default 0: slow enough to kill a worker mid-generation).

Prints one JSON line per generation and a last one with the best candidate. Crashes lose
nothing: a worker killed mid-generation has its rollouts re-dispatched under the same lease ids
(the generation's line counts them in "redispatched"); this script killed and started again with
the same RUN_PREFIX replays the generations it finished (on_delivered="replay": same Results,
nothing runs again) and resumes the one in flight.
"""

import json
import os
import random

from rollout_queue import Client, command_reward, ref

OPERATORS = ["-", "*", "//", "+", "%"]
TASKS = [{"id": "add-%d" % i, "a": a, "b": b, "answer": a + b} for i, (a, b) in enumerate([(2, 3), (10, 7), (41, 1)])]

# ── The run: each candidate's program, executed by the built-in codeRunner ─────────────────
RUN = ref("rollout-queue/runners:codeRunner", entrypoint=["python3", "main.py"], timeoutMs=20000)

# ── The reward: a swappable piece ────────────────────────────────────────────────────────────
# judge.py next to this file, a Python program run by the workers as the program reward
# (rollout-queue/rewards:command, docs/python.md "Rewards in Python"): contained like the
# candidates, it reads {"task", "output"} on stdin and prints {"reward": r, "details": {...}};
# the details come back as result.reward_details. The task's "answer" (its gold) reaches the
# judge and never the candidates. To score with a built-in instead, this one line would be
#     REWARD = ref("rollout-queue/rewards:lastNumber", goldKey="answer")
# Nothing else in this file changes: the reward only ever shows up as result.reward.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge.py")) as judge_file:
    REWARD = command_reward(["python3", "judge.py"], {"judge.py": judge_file.read()}, gold_keys=["answer"])

def render(op, slow_s):
    """The artifact of one candidate: a program that reads the task on stdin and prints its answer."""
    return "import json, sys, time\ntask = json.load(sys.stdin)\ntime.sleep(%r)\nprint(task['a'] %s task['b'])\n" % (slow_s, op)


def evaluate(client, population, generation, run_id, slow_s):
    """Scores every candidate on TASKS in one run; returns (mean reward per candidate, Results)."""
    drafts = [
        {
            "taskKey": "c%d-%s" % (k, task["id"]),
            "rendered": {"files": {"main.py": render(op, slow_s)}},
            "task": task,
            "run": RUN,
            "reward": REWARD,
            # Our own tag, returned untouched on the Result: which candidate of which generation.
            "meta": {"candidate": k, "program": op, "generation": generation},
        }
        for k, op in enumerate(population)
        for task in TASKS
    ]
    scores = {k: [] for k in range(len(population))}
    results = []
    # on_delivered="replay": started again after a crash, a finished generation's Results are read again.
    for result in client.map_rollouts(drafts, run_id=run_id, on_delivered="replay"):
        results.append(result)
        # A model failure (the program crashed, printed no number) scores 0; infrastructure
        # failures were retried by the plane before they became a Result.
        scores[result.meta["candidate"]].append(result.reward if result.ok else 0.0)
    return [sum(scores[k]) / len(TASKS) for k in range(len(population))], results


def main():
    client = Client(os.environ.get("RQ_GATEWAY_URL", "http://127.0.0.1:8080"), token=os.environ.get("RQ_GATEWAY_TOKEN") or None)
    prefix = os.environ.get("RUN_PREFIX", "evolve")
    generations = int(os.environ.get("GENERATIONS", "3"))
    slow_s = float(os.environ.get("SLOW_S", "0"))
    rng = random.Random(7)
    population = ["-", "*", "//", "%"]
    best = None
    for generation in range(generations):
        fitness, results = evaluate(client, population, generation, "%s-g%d" % (prefix, generation), slow_s)
        ranked = sorted(zip(fitness, population), key=lambda pair: -pair[0])
        best = ranked[0]
        print(json.dumps({
            "generation": generation,
            "best": best[1],
            "fitness": best[0],
            "population": population,
            "rollouts": len(results),
            "redispatched": sum(result.redispatched for result in results),
            "kinds": sorted(set(result.kind for result in results)),
            # Results the judge kept details on (every ok one: judge.py always gives them).
            "judged": sum(1 for result in results if result.reward_details is not None),
        }), flush=True)
        survivors = [op for _, op in ranked[:2]]
        population = survivors + [rng.choice(OPERATORS) for _ in range(2)]
    print(json.dumps({"done": True, "best": best[1], "fitness": best[0]}), flush=True)


if __name__ == "__main__":
    main()
