"""Client.dispatch against a real gateway (started with --dispatch rq-fixtures/dispatches:scripted)."""

import os
import uuid

import pytest

from rollout_queue import AuthError, CallerError, Client, Dispatched, InfrastructureError, ModelError


def cell():
    return "py-cell-%s" % uuid.uuid4().hex[:8]


def test_returns_the_artifact_the_files_and_the_receipts(client, gateway):
    log = os.path.join(gateway.work_dir, "dispatch-%s.log" % uuid.uuid4().hex[:8])
    scenario = {"echo": "from python", "logFile": log, "paidCalls": 1, "files": {"trace.txt": "step 1\n", "out/answer.json": "{\"x\": 1}"}}
    name = cell()
    answer = client.dispatch(scenario, name, "py-attempt", rep=1, seed=9)
    assert isinstance(answer, Dispatched) and answer.ok and answer.error is None
    assert answer.artifact["echo"] == "from python" and (answer.artifact["cellId"], answer.artifact["rep"], answer.artifact["seed"]) == (name, 1, 9)
    assert answer.files == {"trace.txt": "step 1\n", "out/answer.json": "{\"x\": 1}"}
    assert [receipt["callId"] for receipt in answer.cost_receipts] == ["%s-call-0" % name]
    # The same (run_attempt_id, cell_id) again attaches to the same lease: it ran once.
    again = client.dispatch(scenario, name, "py-attempt", rep=1, seed=9)
    assert again.artifact == answer.artifact and again.files == answer.files
    with open(log) as handle:
        assert len(handle.read().splitlines()) == 1


def test_a_model_failure_raises_by_default_or_is_returned_as_data(client):
    scenario = {"paidCalls": 2, "throw": {"name": "WrongAnswer", "message": "no"}}
    with pytest.raises(ModelError) as caught:
        client.dispatch(scenario, cell(), "py-attempt")
    assert (caught.value.kind, caught.value.type, caught.value.status, len(caught.value.cost_receipts)) == ("model", "WrongAnswer", 500, 2)
    returned = client.dispatch(scenario, cell(), "py-attempt", on_model_error="return")
    assert (returned.kind, returned.ok, returned.artifact, returned.files, returned.error.type) == ("model", False, None, {}, "WrongAnswer")
    assert "no" in returned.error.message and len(returned.cost_receipts) == 2


def test_a_scenario_over_the_task_limit_still_fits_the_body_limit(client):
    assert len(client.dispatch({"echo": "x" * 400000}, cell(), "py-attempt").artifact["echo"]) == 400000


def test_a_bad_request_is_a_caller_error_never_retried(client):
    with pytest.raises(CallerError) as caught:
        client.dispatch({}, cell(), "")
    assert (caught.value.kind, caught.value.type, caught.value.status) == ("caller", "InvalidDispatchRequest", 400)


def test_a_wrong_token_is_an_auth_error(gateway):
    with pytest.raises(AuthError) as caught:
        Client(gateway.url, token="wrong-token-wrong-token").dispatch({}, cell(), "py-attempt")
    assert caught.value.status == 401 and isinstance(caught.value, CallerError)


def test_a_dispatch_failing_on_every_try_is_an_infrastructure_error(gateway):
    log = os.path.join(gateway.work_dir, "down-%s.log" % uuid.uuid4().hex[:8])
    with pytest.raises(InfrastructureError) as caught:
        gateway.client(retries=1, backoff_s=0.01).dispatch({"transientUntil": 100, "logFile": log}, cell(), "py-attempt")
    assert (caught.value.status, caught.value.type) == (503, "RedispatchLimit")
