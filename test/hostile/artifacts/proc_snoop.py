# Reads other processes through /proc: environ and cmdline files holding task["marker"] (or
# task["environMarker"] / task["cmdlineMarker"]), and the worker's own environ and memory by pid.
import glob, json, os, sys
task = json.load(sys.stdin)
markers = {kind: task.get(kind + "Marker", task.get("marker", "")).encode() for kind in ("environ", "cmdline")}
found = {"pids": len(glob.glob("/proc/[0-9]*")), "environ_with_marker": 0, "cmdline_with_marker": 0}
for kind in ("environ", "cmdline"):
    for path in glob.glob("/proc/[0-9]*/" + kind):
        try:
            if markers[kind] in open(path, "rb").read():
                found[kind + "_with_marker"] += 1
        except Exception:
            pass
for what in ("environ", "mem"):
    try:
        with open("/proc/%d/%s" % (task["worker"], what), "rb") as f:
            f.read(1) if what == "environ" else None
        found["worker_" + what] = "opened"
    except Exception as e:
        found["worker_" + what] = type(e).__name__
print(json.dumps(found))
