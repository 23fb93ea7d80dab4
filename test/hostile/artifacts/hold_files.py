# Leaves notes holding task["marker"] in its work dir, then holds still (a sleeper whose argv says
# "<marker>-ready", the only sign a sealed attempt gives the host) until the test kills the sleeper.
import json, subprocess, sys
task = json.load(sys.stdin)
with open("notes.txt", "w") as f:
    f.write("notes of " + task["marker"])
subprocess.run([sys.executable, "-c", "import time; time.sleep(600)", task["marker"] + "-ready"])
print(json.dumps({"held": True}))
