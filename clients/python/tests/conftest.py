"""Fixtures of the rollout_queue tests.

The tests of the runs API and the dispatch wire run against a real gateway and real workers,
which `npm test` starts (test/integration/gateway/python-client.test.ts) and names here:

- RQ_TEST_GATEWAY_URL, RQ_TEST_GATEWAY_TOKEN: a `rollout-queue gateway` started with
  `--dispatch rq-fixtures/dispatches:scripted`, over workers started with `--allow 'rq-fixtures/*'`;
- RQ_TEST_WORK_DIR: a directory the workers can write (the dispatch fixture's log files).

Without them those tests fail (never skip) saying how to run them.
"""

import os
import re
import uuid

import pytest

from rollout_queue import Client

HOW_TO_RUN = (
    "these tests need a real gateway and workers: run them through npm test "
    "(npx vitest run --project integration test/integration/gateway/python-client.test.ts), "
    "or set RQ_TEST_GATEWAY_URL, RQ_TEST_GATEWAY_TOKEN and RQ_TEST_WORK_DIR (see tests/conftest.py)"
)

class Gateway:
    def __init__(self, url, token, work_dir):
        self.url = url
        self.token = token
        self.work_dir = work_dir

    def client(self, **options):
        options.setdefault("backoff_s", 0.05)
        return Client(self.url, token=self.token, **options)


@pytest.fixture(scope="session")
def gateway():
    names = ("RQ_TEST_GATEWAY_URL", "RQ_TEST_GATEWAY_TOKEN", "RQ_TEST_WORK_DIR")
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        pytest.fail("%s unset: %s" % (", ".join(missing), HOW_TO_RUN), pytrace=False)
    return Gateway(*(os.environ[name] for name in names))


@pytest.fixture()
def client(gateway):
    return gateway.client()


@pytest.fixture()
def run_id(request):
    """A run id of this test alone (run ids live as long as the gateway's Redis)."""
    return "py-%s-%s" % (re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[:40].strip("-"), uuid.uuid4().hex[:8])

