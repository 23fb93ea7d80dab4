# Signals (signal 0: a probe, nothing is sent) and ptraces the worker by its pid.
import ctypes, json, os, sys
task = json.load(sys.stdin)
out = {}
try:
    os.kill(task["worker"], 0)
    out["kill"] = "allowed"
except Exception as e:
    out["kill"] = type(e).__name__
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE = 0x4206
if libc.ptrace(PTRACE_SEIZE, task["worker"], None, None) == 0:
    out["ptrace"] = "attached"
    libc.ptrace(17, task["worker"], None, None)  # PTRACE_DETACH
else:
    out["ptrace"] = os.strerror(ctypes.get_errno())
print(json.dumps(out))
