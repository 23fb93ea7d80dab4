# Writes a file at each path of task["paths"] (outside its work dir) and lists task["look"]
# (the work root holding other attempts' dirs, the worker's cwd, /root).
import json, os, sys
task = json.load(sys.stdin)
out = {"wrote": {}, "listed": {}}
for path in task["paths"]:
    try:
        with open(path, "w") as f:
            f.write("written by an artifact")
        out["wrote"][path] = "ok"
    except Exception as e:
        out["wrote"][path] = type(e).__name__
for path in task["look"]:
    try:
        out["listed"][path] = sorted(os.listdir(path))
    except Exception as e:
        out["listed"][path] = type(e).__name__
print(json.dumps(out))
