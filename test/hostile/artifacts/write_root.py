# Writes a file at each path of task["files"] and makes each directory of task["dirs"] (at the
# tenant's root: outside its work dir, /tmp and /dev/shm), reporting ok or the errno's name.
import errno, json, os, sys
task = json.load(sys.stdin)
out = {}
def attempt(path, act):
    try:
        act(path)
        out[path] = "ok"
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, type(e).__name__)
for path in task["files"]:
    attempt(path, lambda p: open(p, "w").write("x" * 4096))
for path in task["dirs"]:
    attempt(path, lambda p: os.makedirs(p))
print(json.dumps(out))
