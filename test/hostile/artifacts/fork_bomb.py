# Forks children that exec sleep until fork fails, then exits 1 saying (on stderr) how many it made.
import json, os, sys
task = json.load(sys.stdin)
made = 0
try:
    while made < task["max"]:
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "600"])
        made += 1
except OSError as e:
    print(json.dumps({"made": made, "error": e.strerror}), file=sys.stderr, flush=True)
    sys.exit(1)
print(json.dumps({"made": made, "error": None}))
