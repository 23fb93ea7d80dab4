# Hunts for a judge of the command reward running beside it (another rollout's reward): walks the
# directories where sandboxes live (task["roots"]) and the cwd of every process it can see in /proc,
# looking for a file named judge.py that holds task["marker"]; reads each and tries to overwrite it.
import json, os, sys
task = json.load(sys.stdin)
marker = task["marker"]
found, read, written, errors = [], 0, 0, {}
seen = set()

def visit(path):
    global read, written
    if not os.path.isfile(path):
        return
    try:
        key = os.stat(path).st_ino, os.stat(path).st_dev
    except Exception:
        return
    if key in seen:
        return
    seen.add(key)
    try:
        with open(path) as f:
            text = f.read()
    except Exception as e:
        errors[path] = type(e).__name__
        return
    if marker not in text:
        return
    found.append(path)
    read += 1
    try:
        with open(path, "w") as f:
            f.write("print(1)\n")
        written += 1
    except Exception as e:
        errors[path] = type(e).__name__

def walk(root, depth=3):
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.count(os.sep) - root.count(os.sep) >= depth:
            dirnames[:] = []
        if "judge.py" in filenames:
            visit(os.path.join(dirpath, "judge.py"))

for root in task["roots"]:
    walk(root)
try:
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
except Exception:
    pids = []
for pid in pids:
    try:
        visit(os.path.join("/proc/%s/cwd" % pid, "judge.py"))
    except Exception:
        pass
print(json.dumps({"found": len(found), "read": read, "written": written, "errors": len(errors)}))
