"""The package itself: installs offline into a fresh venv, imports, types its Results, checks its arguments."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

import rollout_queue
from rollout_queue import Client, InfrastructureError, Result, RunStatus, command_reward, ref

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreters():
    """Debian's python3 and the python3 on PATH (pyenv's here), each once, Python >= 3.9."""
    found = []
    for candidate in ("/usr/bin/python3", shutil.which("python3"), sys.executable):
        if not candidate or not os.path.exists(candidate):
            continue
        real = os.path.realpath(candidate)
        version = subprocess.run([real, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True).stdout.strip()
        if tuple(int(part) for part in version.split(".")) >= (3, 9) and real not in [r for r, _ in found]:
            found.append((real, version))
    return found


def offline_env(tmp_path):
    """An environment in which pip can reach no index: no pip config, no index or find-links."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_") and key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HOME": str(tmp_path)})
    return env


@pytest.mark.parametrize("python", [path for path, _ in interpreters()], ids=["%s %s" % (version, path) for path, version in interpreters()])
def test_installs_offline_into_a_fresh_venv_and_imports(python, tmp_path):
    venv = tmp_path / "venv"
    # A plain venv: only what python3-venv (ensurepip) puts there, no system site-packages.
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", PROJECT], env=offline_env(tmp_path), capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    probe = (
        "import json, os, rollout_queue; from rollout_queue import Result; "
        "d = os.path.dirname(rollout_queue.__file__); "
        "print(json.dumps({'version': rollout_queue.__version__, 'typed': os.path.exists(os.path.join(d, 'py.typed')), "
        "'site': 'site-packages' in d, 'fields': list(Result.__dataclass_fields__)}))"
    )
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=str(tmp_path), env=offline_env(tmp_path), capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["version"] == rollout_queue.__version__
    assert seen["typed"] and seen["site"]
    assert seen["fields"][:16] == ["lease_id", "run_id", "task_id", "kind", "output", "reward", "error", "attempts", "redispatched", "worker", "queued_ms", "run_ms", "finished_at", "cost", "cached", "meta"]


def test_the_build_backend_reads_pyproject_alike_with_and_without_tomllib():
    spec = importlib.util.spec_from_file_location("rollout_queue_build", os.path.join(PROJECT, "build_backend", "rollout_queue_build.py"))
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    with open(os.path.join(PROJECT, "pyproject.toml"), encoding="utf-8") as handle:
        flat = backend._read_flat_project(handle.read())
    project = backend.read_project()
    assert project == {key: flat[key] for key in backend.PROJECT_KEYS}
    assert project["name"] == "rollout-queue" and project["version"] == rollout_queue.__version__
    assert project["requires-python"] == ">=3.9"


def test_a_result_is_typed_from_its_wire_dict_and_keeps_the_dict():
    wire = {
        "leaseId": "g1.c3-t1", "runId": "g1", "taskId": "t1", "kind": "ok", "reward": 0.5, "output": {"stdout": "5\n"}, "error": None,
        "attempts": 1, "redispatched": 0, "worker": "w-1", "queuedMs": 3.5, "runMs": 120, "finishedAt": "2026-01-01T00:00:00.000Z",
        "cost": [{"id": "r1", "usd": 0.002, "label": "llm", "units": {"inputTokens": 10}}], "meta": {"candidate": 3}, "newerField": 1,
    }
    result = Result.from_dict(wire)
    assert (result.lease_id, result.kind, result.ok, result.reward, result.run_ms, result.meta) == ("g1.c3-t1", "ok", True, 0.5, 120, {"candidate": 3})
    assert result.cost[0].usd == 0.002 and result.cost[0].units == {"inputTokens": 10}
    assert result.cached is False and result.error is None
    assert result.to_dict() == wire
    assert result.reward_details is None
    assert Result.from_dict(dict(wire, rewardDetails={"got": 5})).reward_details == {"got": 5}
    failed = Result.from_dict(dict(wire, kind="model", reward=None, error={"type": "RunThrew", "message": "boom"}, meta=None))
    assert (failed.ok, failed.error.type, failed.error.message, failed.meta) == (False, "RunThrew", "boom", None)
    with pytest.raises(InfrastructureError, match="without field 'finishedAt'"):
        Result.from_dict({key: value for key, value in wire.items() if key != "finishedAt"})


def test_a_run_status_says_when_every_result_was_delivered_before():
    assert RunStatus.from_dict({"runId": "r", "state": "completed", "results": 3, "ackedThrough": 3}).delivered_before
    assert not RunStatus.from_dict({"runId": "r", "state": "completed", "results": 3, "ackedThrough": 2}).delivered_before
    assert not RunStatus.from_dict({"runId": "r", "state": "running", "results": 3, "ackedThrough": 3}).delivered_before


def test_bad_arguments_are_refused_at_the_call_naming_the_argument():
    with pytest.raises(ValueError, match=r"ref target 'lastNumber' must be \"module:export\""):
        ref("lastNumber")
    assert ref("rollout-queue/rewards:lastNumber", {"goldKey": "a"}, goldKey="answer") == {"$ref": "rollout-queue/rewards:lastNumber", "config": {"goldKey": "answer"}}
    with pytest.raises(ValueError, match="base_url '127.0.0.1:8080' must be the gateway's http:// or https:// address"):
        Client("127.0.0.1:8080")
    client = Client("http://127.0.0.1:9")
    with pytest.raises(ValueError, match=r"on_delivered='skip' is not one of 'raise', 'replay', 'empty'"):
        client.map_rollouts([], "r", on_delivered="skip")
    with pytest.raises(TypeError, match=r"drafts\[1\] is a str; each draft is a dict"):
        client.map_rollouts([{}, "not a draft"], "r")
    # Fresh-user report: meta=float("nan") went out as NaN and came back a MalformedJson CallerError.
    with pytest.raises(ValueError, match=r"drafts\[0\]\.meta is NaN or infinite, which JSON cannot carry"):
        client.map_rollouts([{"meta": float("nan")}], "r")
    with pytest.raises(ValueError, match=r"drafts\[1\]\.task\.xs\[1\] is NaN or infinite"):
        client.map_rollouts([{}, {"task": {"xs": [1.0, float("inf")]}}], "r")
    with pytest.raises(ValueError, match=r"on_model_error='ignore' is not one of 'raise', 'return'"):
        client.dispatch({}, "cell", "attempt", on_model_error="ignore")


def test_an_unreachable_gateway_is_an_infrastructure_error_after_the_retries():
    # Port 9 (discard) has no listener on loopback: each try is refused at once.
    client = Client("http://127.0.0.1:9", retries=2, backoff_s=0.01)
    with pytest.raises(InfrastructureError, match="cannot reach the gateway at http://127.0.0.1:9 after 2 retries") as caught:
        client.status("r")
    assert caught.value.type == "Unreachable" and caught.value.status is None


def test_command_reward_builds_the_program_reward_ref():
    assert command_reward(["python3", "-m", "mypkg.judge"]) == {"$ref": "rollout-queue/rewards:command", "config": {"command": ["python3", "-m", "mypkg.judge"]}}
    assert command_reward(("python3", "judge.py"), {"judge.py": "print(1)"}, timeout_ms=5000, memory_mb=128, gold_keys="solution") == {
        "$ref": "rollout-queue/rewards:command",
        "config": {"command": ["python3", "judge.py"], "files": {"judge.py": "print(1)"}, "timeoutMs": 5000, "memoryMb": 128, "goldKeys": "solution"},
    }
    assert command_reward(["python3", "judge.py"], see_work_dir=True)["config"] == {"command": ["python3", "judge.py"], "seeWorkDir": True}
    with pytest.raises(ValueError, match="must be a non-empty list of strings"):
        command_reward("python3 judge.py")
    with pytest.raises(ValueError, match=r"files\['judge.py'\] must be the file's text"):
        command_reward(["python3", "judge.py"], {"judge.py": b"print(1)"})
