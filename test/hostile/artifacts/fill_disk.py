# Writes 1 MiB chunks to task["path"] until the write fails; exits 1 with the error.
import json, sys
task = json.load(sys.stdin)
written = 0
chunk = b"\0" * (1 << 20)
try:
    with open(task["path"], "wb") as f:
        while written < task["maxMb"] << 20:
            f.write(chunk)
            f.flush()
            written += len(chunk)
except OSError as e:
    print(json.dumps({"written": written, "error": e.strerror}), flush=True)
    sys.exit(1)
print(json.dumps({"written": written, "error": None}))
