"""Retries against the real gateway behind a proxy that fails the first requests: 503s and cut
connections are retried with back-off until the gateway answers; a 4xx never is."""

import http.server
import threading
import urllib.error
import urllib.request

import pytest

from rollout_queue import CallerError, Client, InfrastructureError
from support import draft


class FlakyProxy:
    """Forwards to the gateway, after failing the first ``failures`` requests: a 503 with
    Retry-After, or (``cut``) a connection closed without an answer. Counts requests by path."""

    def __init__(self, target, failures, cut=False):
        self.target = target.rstrip("/")
        self.failures = failures
        self.cut = cut
        self.seen = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self):
                proxy.seen.append((self.command, self.path))
                body = self.rfile.read(int(self.headers.get("content-length") or 0)) or None
                if len(proxy.seen) <= proxy.failures:
                    if proxy.cut:
                        self.close_connection = True
                        self.connection.close()
                        return
                    self.send_response(503)
                    self.send_header("retry-after", "0")
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"type": "GatewayClosing", "message": "try again"}}')
                    return
                request = urllib.request.Request(proxy.target + self.path, data=body, method=self.command)
                for name in ("authorization", "content-type", "accept"):
                    if self.headers.get(name):
                        request.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(request) as answer:
                        status, headers, payload = answer.status, answer.headers, answer.read()
                except urllib.error.HTTPError as err:
                    status, headers, payload = err.code, err.headers, err.read()
                self.send_response(status)
                for name in ("content-type", "x-rollout-queue-cursor"):
                    if headers.get(name):
                        self.send_header(name, headers[name])
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def proxy(gateway):
    made = []

    def make(failures, cut=False):
        made.append(FlakyProxy(gateway.url, failures, cut))
        return made[-1]

    yield make
    for each in made:
        each.close()


@pytest.mark.parametrize("cut", [False, True], ids=["503", "cut connection"])
def test_a_request_is_retried_until_the_gateway_answers(gateway, proxy, run_id, cut):
    flaky = proxy(3, cut=cut)
    client = Client(flaky.url, token=gateway.token, retries=5, backoff_s=0.01)
    [result] = list(client.map_rollouts([draft("t", meta={"try": "again"})], run_id))
    assert (result.kind, result.meta) == ("ok", {"try": "again"})
    # Three failed posts of the run, then the one that reached the gateway.
    assert flaky.seen[:4] == [("POST", "/runs")] * 4
    assert client.status(run_id).state == "completed"


def test_past_its_retries_the_last_failure_is_raised(gateway, proxy):
    flaky = proxy(10)
    client = Client(flaky.url, token=gateway.token, retries=2, backoff_s=0.01)
    with pytest.raises(InfrastructureError) as caught:
        client.status("any-run")
    assert (caught.value.kind, caught.value.status, caught.value.type) == ("infrastructure", 503, "GatewayClosing")
    assert len(flaky.seen) == 3


def test_a_caller_error_is_never_retried(gateway, proxy, run_id):
    flaky = proxy(0)
    client = Client(flaky.url, token=gateway.token, retries=5, backoff_s=0.01)
    with pytest.raises(CallerError):
        client.status(run_id)
    assert flaky.seen == [("GET", "/runs/%s" % run_id)]
