"""One retry budget per logical request: a gateway that never answers fails after ``retries``
pauses of the documented schedule (``backoff_s`` doubling up to ``max_backoff_s``), whichever
call it was; a results stream that was connected and dropped still reconnects.

No gateway needed: local sockets that refuse, cut or answer 503, and a fake results stream.
Pauses are read, not waited for: ``rollout_queue._http._sleep`` is replaced (no wall-clock
thresholds in tests)."""

import http.server
import json
import logging
import socket
import threading

import pytest

import rollout_queue._http
from rollout_queue import Client, InfrastructureError
from support import draft

#: docs/python.md's defaults: retries=8, backoff_s=0.2 doubling up to max_backoff_s=5.0.
DEFAULT_SCHEDULE_S = [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]


@pytest.fixture()
def sleeps(monkeypatch):
    """The pauses the client takes, seconds, in order (none is actually slept)."""
    taken = []
    monkeypatch.setattr(rollout_queue._http, "_sleep", taken.append)
    return taken


@pytest.fixture()
def refused_url():
    """An address where nothing listens: a socket bound to the port (so nothing else takes it)
    but not listening, which the kernel answers with a refusal (ECONNREFUSED)."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    yield "http://127.0.0.1:%d" % holder.getsockname()[1]
    holder.close()


class Server:
    """A local HTTP server on a free port; ``handle(handler)`` answers each request; ``seen``:
    (method, path) of every request, i.e. the client's tries."""

    def __init__(self, handle):
        self.seen = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _any(self):
                server.seen.append((self.command, self.path))
                self.rfile.read(int(self.headers.get("content-length") or 0))
                handle(self)

            do_GET = do_POST = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def serve():
    made = []

    def make(handle):
        made.append(Server(handle))
        return made[-1]

    yield make
    for each in made:
        each.close()


def cut(handler):
    """Closes the connection without an answer (a gateway that died mid-request)."""
    handler.close_connection = True
    handler.connection.close()


def closing(handler):
    """503 GatewayClosing, as a gateway shutting down answers."""
    send_json(handler, 503, {"error": {"type": "GatewayClosing", "message": "try again"}})


def send_json(handler, status, value):
    payload = json.dumps(value).encode("utf-8")
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


#: Every public call that goes to the gateway, as (name, call on a Client).
CALLS = [
    ("map_rollouts", lambda client: list(client.map_rollouts([draft("t")], "pyerr-port"))),
    ("dispatch", lambda client: client.dispatch({"kind": "scripted"}, "cell-0", "attempt-0")),
    ("status", lambda client: client.status("pyerr-port")),
    ("cancel", lambda client: client.cancel("pyerr-port")),
]


def test_the_users_unreachable_port_fails_after_the_documented_schedule_and_says_so_once(refused_url, sleeps, caplog):
    # The user's input, default settings: was 9 posts × 9 tries and 212.6 s of pauses.
    caplog.set_level(logging.WARNING, logger="rollout_queue")
    client = Client(refused_url, token="x")
    with pytest.raises(InfrastructureError) as caught:
        list(client.map_rollouts([draft("t")], run_id="pyerr-port"))
    assert (caught.value.type, caught.value.status) == ("Unreachable", None)
    assert "after 8 retries" in str(caught.value)
    assert sleeps == DEFAULT_SCHEDULE_S
    assert sum(sleeps) == pytest.approx(21.2)
    warnings = [record for record in caplog.records if record.name == "rollout_queue"]
    assert len(warnings) == 1, [record.getMessage() for record in warnings]
    assert "retrying up to 8 times" in warnings[0].getMessage()


@pytest.mark.parametrize("call", [call for _, call in CALLS], ids=[name for name, _ in CALLS])
def test_every_call_tries_retries_plus_one_times_when_connections_are_cut(serve, sleeps, call):
    server = serve(cut)
    client = Client(server.url, token="x", retries=3, backoff_s=0.01, max_backoff_s=0.02)
    with pytest.raises(InfrastructureError) as caught:
        call(client)
    assert caught.value.type == "Unreachable"
    assert len(server.seen) == 4
    assert sleeps == [0.01, 0.02, 0.02]


@pytest.mark.parametrize("call", [call for _, call in CALLS], ids=[name for name, _ in CALLS])
def test_every_call_tries_retries_plus_one_times_on_503(serve, sleeps, call):
    server = serve(closing)
    client = Client(server.url, token="x", retries=2, backoff_s=0.01)
    with pytest.raises(InfrastructureError) as caught:
        call(client)
    assert (caught.value.type, caught.value.status) == ("GatewayClosing", 503)
    assert len(server.seen) == 3
    assert sleeps == [0.01, 0.02]


def wire_result(index):
    return {"leaseId": "pyerr-port.t%d" % index, "runId": "pyerr-port", "taskId": "t%d" % index, "kind": "ok",
            "reward": 1, "attempts": 1, "redispatched": 0, "finishedAt": "2026-01-01T00:00:00Z", "meta": {"i": index}}


def fake_gateway(results, per_connection):
    """A gateway whose results stream sends at most ``per_connection`` Results after ``after``,
    then drops the connection, until all ``results`` were sent: then the completed trailer."""

    def handle(handler):
        if handler.command == "POST":
            return send_json(handler, 200, {"runId": "pyerr-port", "state": "running"})
        after = int(handler.path.split("after=")[1]) if "after=" in handler.path else 0
        handler.send_response(200)
        handler.send_header("content-type", "application/x-ndjson")
        handler.send_header("x-rollout-queue-cursor", "0")
        handler.end_headers()
        sent = list(range(after, min(results, after + per_connection)))
        for index in sent:
            handler.wfile.write(json.dumps(wire_result(index)).encode("utf-8") + b"\n")
        if after + len(sent) >= results:
            handler.wfile.write(b'{"end": true, "state": "completed"}\n')
        handler.close_connection = True

    return handle


def test_a_stream_that_delivers_then_drops_reconnects_each_time_with_the_whole_budget(serve, sleeps):
    # Dropped after every Result, more times than `retries`: each drop follows progress.
    server = serve(fake_gateway(results=4, per_connection=1))
    client = Client(server.url, token="x", retries=1, backoff_s=0.01)
    results = list(client.map_rollouts([draft("t")], "pyerr-port", ack_interval_s=0))
    assert [result.meta for result in results] == [{"i": 0}, {"i": 1}, {"i": 2}, {"i": 3}]
    reads = [path for method, path in server.seen if method == "GET"]
    assert reads == ["/runs/pyerr-port/results", "/runs/pyerr-port/results?after=1", "/runs/pyerr-port/results?after=2", "/runs/pyerr-port/results?after=3"]
    # One first pause per drop: the budget started over after each Result.
    assert sleeps == [0.01, 0.01, 0.01]


def test_a_stream_that_never_delivers_fails_after_the_documented_schedule(serve, sleeps):
    server = serve(fake_gateway(results=1, per_connection=0))
    client = Client(server.url, token="x", retries=3, backoff_s=0.01)
    with pytest.raises(InfrastructureError) as caught:
        list(client.map_rollouts([draft("t")], "pyerr-port"))
    assert caught.value.type == "StreamCut"
    assert len([path for method, path in server.seen if method == "GET"]) == 4
    # Posting the run again before each reconnect is one try of the same budget, not a new one.
    assert len([path for method, path in server.seen if path == "/runs"]) == 4
    assert sleeps == [0.01, 0.02, 0.04]
