# Connects to each [host, port] of task["targets"]: the queue's Redis, another loopback service,
# the gateway, the host's own address.
import json, socket, sys
task = json.load(sys.stdin)
out = {}
for host, port in task["targets"]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        out["%s:%d" % (host, port)] = "connected"
    except Exception as e:
        out["%s:%d" % (host, port)] = type(e).__name__
print(json.dumps(out))
