"""map_rollouts, status and cancel against a real gateway and real workers: typed Results, meta,
no silent empties, resuming, and the typed errors of each way a run can go wrong."""

import json
import os
import signal
import subprocess
import sys

import pytest

from rollout_queue import CallerError, CancelledError, Result, RunDeliveredError, ref
from support import THROWS, draft

HERE = os.path.dirname(os.path.abspath(__file__))


def test_results_are_typed_come_in_completion_order_and_carry_each_drafts_meta(client, run_id):
    # t2 is the fastest draft, t0 the slowest: completion order, not submission order.
    drafts = [draft("t%d" % i, meta={"candidate": i, "tags": ["gen-1"], "parent": None}, delayMs=400 * (2 - i)) for i in range(3)]
    drafts.append(draft("broken", meta="a string tag works too", run=THROWS))
    drafts.append(draft("untagged"))
    results = list(client.map_rollouts(drafts, run_id))
    assert all(isinstance(result, Result) for result in results)
    by_task = {result.task_id: result for result in results}
    assert set(by_task) == {"t0", "t1", "t2", "broken", "untagged"}
    assert [r.task_id for r in results if r.task_id.startswith("t")] == ["t2", "t1", "t0"]
    for i in range(3):
        result = by_task["t%d" % i]
        assert (result.kind, result.ok, result.reward, result.error, result.meta) == ("ok", True, 1, None, {"candidate": i, "tags": ["gen-1"], "parent": None})
        assert result.lease_id == "%s.t%d" % (run_id, i) and result.run_id == run_id
        assert result.attempts == 1 and result.redispatched == 0 and isinstance(result.worker, str)
        assert result.run_ms >= 0 and result.finished_at.endswith("Z")
        assert result.output["taskId"] == "t%d" % i
    broken = by_task["broken"]
    assert (broken.kind, broken.ok, broken.reward, broken.error.type, broken.meta) == ("model", False, None, "WrongAnswer", "a string tag works too")
    assert "2 + 2 is not 5" in broken.error.message
    assert by_task["untagged"].meta is None and "meta" not in by_task["untagged"].to_dict()


def test_a_run_id_used_again_raises_run_delivered_instead_of_yielding_nothing(client, run_id):
    drafts = [draft("a", meta={"k": "a"}), draft("b", meta={"k": "b"})]
    first = list(client.map_rollouts(drafts, run_id))
    assert sorted(r.meta["k"] for r in first) == ["a", "b"]
    # The evolution loop's mistake: the same run id to re-score. Before: an empty loop, read as "no results".
    with pytest.raises(RunDeliveredError) as caught:
        list(client.map_rollouts(drafts, run_id))
    err = caught.value
    assert (err.run_id, err.results, err.kind, err.type) == (run_id, 2, "caller", "RunDelivered")
    assert isinstance(err, CallerError)
    assert "Use a new run_id" in str(err) and "on_delivered=\"replay\"" in str(err) and "\"class\": \"evaluation\"" in str(err)
    replayed = list(client.map_rollouts(drafts, run_id, on_delivered="replay"))
    assert [(r.lease_id, r.meta, r.reward) for r in replayed] == [(r.lease_id, r.meta, r.reward) for r in first]
    assert list(client.map_rollouts(drafts, run_id, on_delivered="empty")) == []


def test_re_scoring_an_incumbent_as_an_evaluation_is_answered_from_the_cache_with_this_drafts_meta(client, run_id):
    incumbent = dict(draft("e1", meta={"candidate": "incumbent", "generation": 1}), **{"class": "evaluation"})
    [first] = list(client.map_rollouts([incumbent], run_id + "-g1"))
    assert (first.kind, first.cached, first.meta) == ("ok", False, {"candidate": "incumbent", "generation": 1})
    again = dict(incumbent, meta={"candidate": "incumbent", "generation": 2})
    [cached] = list(client.map_rollouts([again], run_id + "-g2"))
    assert (cached.kind, cached.cached, cached.reward, cached.worker, cached.meta) == ("ok", True, first.reward, None, {"candidate": "incumbent", "generation": 2})


def test_a_draft_the_gateway_refuses_is_a_caller_error_naming_it_and_nothing_runs(client, run_id):
    with pytest.raises(CallerError) as caught:
        list(client.map_rollouts([draft("ok"), draft("big", meta={"blob": "x" * 5000})], run_id))
    assert caught.value.status == 400 and caught.value.type == "InvalidRunRequest"
    assert "drafts[1]" in str(caught.value) and "over the 4096-byte limit" in str(caught.value) and "nothing was enqueued" in str(caught.value)
    with pytest.raises(CallerError, match="NoSuchRun|no run"):
        client.status(run_id)


def test_other_drafts_under_a_run_id_posted_before_are_a_run_conflict(client, run_id):
    list(client.map_rollouts([draft("a")], run_id))
    with pytest.raises(CallerError) as caught:
        list(client.map_rollouts([draft("a"), draft("b")], run_id))
    assert (caught.value.status, caught.value.type) == (409, "RunConflict")


def test_a_caller_result_is_yielded_with_its_meta_then_the_run_stops(client, run_id):
    denied = draft("denied", meta={"candidate": 9}, run=ref("not-allowed-pkg/x:run"))
    seen = []
    with pytest.raises(CallerError) as caught:
        for result in client.map_rollouts([denied], run_id):
            seen.append(result)
    assert [(r.kind, r.meta) for r in seen] == [("caller", {"candidate": 9})]
    assert caught.value.type == "RunStopped" and "not-allowed-pkg" in str(caught.value)


def test_status_and_cancel(client, run_id):
    drafts = [draft("fast")] + [draft("slow-%d" % i, delayMs=60000) for i in range(2)]
    seen = []
    with pytest.raises(CancelledError) as caught:
        for result in client.map_rollouts(drafts, run_id):
            seen.append(result.task_id)
            if len(seen) == 1:
                assert client.status(run_id).state == "running"
                answer = client.cancel(run_id)
                assert answer["runId"] == run_id
    assert seen[0] == "fast" and caught.value.kind == "caller"
    status = client.status(run_id)
    assert status.state == "cancelled" and status.results == len(seen)


def consume(gateway, run_id, count, stop_after, ack_interval_s):
    """Runs _consume_then_die.py: a user's loop that SIGKILLs itself after handling stop_after Results."""
    script = os.path.join(HERE, "_consume_then_die.py")
    done = subprocess.run([sys.executable, script, gateway.url, gateway.token, run_id, str(count), str(stop_after), str(ack_interval_s)], capture_output=True, text=True, timeout=120)
    handled = [json.loads(line)["leaseId"] for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, handled, done.stderr


def test_a_client_sigkilled_mid_loop_sees_again_only_the_result_it_was_handling(gateway, run_id):
    # ack_interval_s 0: every Result the loop asked past is acknowledged before the next is handled.
    code, before, stderr = consume(gateway, run_id, 60, 30, 0)
    assert code == -signal.SIGKILL, stderr
    assert len(before) == 30
    code, after, stderr = consume(gateway, run_id, 60, 0, 0)
    assert code == 0, stderr
    # The 30th was being handled when the process died (the loop never asked for the 31st).
    assert [lease for lease in after if lease in before] == [before[29]]
    assert len(set(before) | set(after)) == 60 and len(after) == 31
