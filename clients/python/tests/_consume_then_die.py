"""Consumes map_rollouts as a user's loop would, then dies without any cleanup.

argv: BASE_URL TOKEN RUN_ID DRAFTS STOP_AFTER ACK_INTERVAL_S. Prints each Result's lease id as it
handles it; after handling STOP_AFTER Results (0: never) it SIGKILLs itself inside the loop body,
as `kill -9` would, so nothing after the loop (no acknowledgement on the way out) runs.
"""

import json
import os
import signal
import sys

from rollout_queue import Client
from support import draft

base_url, token, run_id = sys.argv[1], sys.argv[2], sys.argv[3]
count, stop_after, ack_interval_s = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
drafts = [draft("t%d" % i, delayMs=20) for i in range(count)]
handled = 0
for result in Client(base_url, token=token, backoff_s=0.05).map_rollouts(drafts, run_id, ack_interval_s=ack_interval_s):
    print(json.dumps({"leaseId": result.lease_id}), flush=True)
    handled += 1
    if handled == stop_after:
        os.kill(os.getpid(), signal.SIGKILL)
