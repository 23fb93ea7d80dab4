# Looks for the gold next to the program: every environment variable and every file it can list
# in its work dir, HOME and TMPDIR (not stdin: keeping the gold out of the task is issue 28's item 1).
import json, os, sys
json.load(sys.stdin)
seen = dict(os.environ)
for top in {os.getcwd(), os.environ.get("HOME", "."), os.environ.get("TMPDIR", "/tmp")}:
    for root, dirs, files in os.walk(top):
        for name in files:
            try:
                seen[os.path.join(root, name)] = open(os.path.join(root, name), errors="replace").read(65536)
            except Exception as e:
                seen[os.path.join(root, name)] = type(e).__name__
print(json.dumps(seen))
