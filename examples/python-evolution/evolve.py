"""A tiny evolution loop in Python over rollout-queue's gateway (README "Python").

Each generation renders one Python program per candidate, scores every candidate on every
task through the durable queue (one rollout per candidate × task, run by the built-in
codeRunner with the argv entrypoint ["python3", "main.py"], scored by lastNumber), keeps the
best and mutates them. Nothing here knows about Redis or workers; crashes of workers, the
gateway or this script lose nothing: re-running with the same RUN_PREFIX resumes each
generation's run.

    RQ_GATEWAY_URL=http://127.0.0.1:8080 RQ_GATEWAY_TOKEN=... python3 examples/python-evolution/evolve.py
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from rollout_queue_client import Client  # noqa: E402

OPERATORS = ["-", "*", "//", "+", "%"]
TASKS = [{"id": "add-%d" % i, "a": a, "b": b, "answer": a + b} for i, (a, b) in enumerate([(2, 3), (10, 7), (41, 1)])]


def render(op):
    """The artifact of one candidate: reads the task as JSON on stdin, prints its answer."""
    return "import json, sys\ntask = json.load(sys.stdin)\nprint(task['a'] %s task['b'])\n" % op


def evaluate(client, population, run_id):
    """Mean reward of each candidate over TASKS, from one run of len(population) × len(TASKS) rollouts."""
    drafts = []
    for k, op in enumerate(population):
        for task in TASKS:
            drafts.append({
                "taskKey": "c%d-%s" % (k, task["id"]),
                "rendered": {"files": {"main.py": render(op)}},
                "task": task,
                "run": {"$ref": "rollout-queue/runners:codeRunner", "config": {"entrypoint": ["python3", "main.py"], "timeoutMs": 10000}},
                "reward": {"$ref": "rollout-queue/rewards:lastNumber", "config": {"goldKey": "answer"}},
            })
    scores = {k: [] for k in range(len(population))}
    for result in client.map_rollouts(drafts, run_id=run_id):
        k = int(result["leaseId"].split(".", 1)[1].split("-", 1)[0][1:])
        # A model failure (the program crashed) scores 0; infrastructure results are retried by the plane.
        scores[k].append(result["reward"] if result["kind"] == "ok" else 0.0)
    return [sum(scores[k]) / len(TASKS) for k in range(len(population))]


def main():
    client = Client(os.environ.get("RQ_GATEWAY_URL", "http://127.0.0.1:8080"), token=os.environ.get("RQ_GATEWAY_TOKEN"))
    prefix = os.environ.get("RUN_PREFIX", "evolve")
    generations = int(os.environ.get("GENERATIONS", "3"))
    rng = random.Random(7)
    population = ["-", "*", "//", "+"]
    best = None
    for generation in range(generations):
        fitness = evaluate(client, population, run_id="%s-g%d" % (prefix, generation))
        ranked = sorted(zip(fitness, population), key=lambda pair: -pair[0])
        best = ranked[0]
        print(json.dumps({"generation": generation, "best": best[1], "fitness": best[0], "population": population}), flush=True)
        survivors = [op for _, op in ranked[:2]]
        population = survivors + [rng.choice(OPERATORS) for _ in range(2)]
    print(json.dumps({"done": True, "best": best[1], "fitness": best[0]}), flush=True)


if __name__ == "__main__":
    main()
