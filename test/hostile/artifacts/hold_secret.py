# Holds a secret in its environment (sandbox.env) until it is cancelled.
import json, sys, time
json.load(sys.stdin)
time.sleep(3600)
