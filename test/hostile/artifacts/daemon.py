# Leaves a process behind: a double-forked daemon in its own session (sleep task["linger"]), then exits 0.
import json, os, sys, time
task = json.load(sys.stdin)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", str(task["linger"])])
    os._exit(0)
os.wait()
time.sleep(0.2)
print(json.dumps({"left": "sleep %s" % task["linger"]}))
