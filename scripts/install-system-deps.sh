#!/usr/bin/env bash
# Installs every Debian package the test suite needs beyond Node (one command for a fresh
# machine; .ci/run calls it). Idempotent: a package is installed only when what the tests run
# of it is missing, and apt-get update runs at most once, only when something is missing.
# Runs apt-get as root, or through sudo when not root.
#
#   scripts/install-system-deps.sh           install what is missing
#   scripts/install-system-deps.sh --check   list what is missing, exit 1 if anything is (installs nothing)
#
# To add a tool a test needs: one line in PACKAGES below, and make the test fail (never skip)
# with a message naming this script when the tool is missing (test/helpers/system-tool.ts).
set -euo pipefail

# One line per Debian package: "<package> <what shows it is there>", where the second word is a
# command on PATH, or "dpkg" when the package has no command of its own (then dpkg-query asks).
# Who needs it is said beside it.
PACKAGES=(
  "redis-server redis-server"   # every Redis test: test/helpers/redis.ts starts a private one per file
  "python3 python3"             # clients/python against a real gateway; Python artifacts run by codeRunner (user cases)
  "python3-venv dpkg"           # the Python client installed into a fresh venv (python3 -m venv)
  "python3-pytest dpkg"         # the Python client's own tests (pytest)
  "util-linux unshare"          # per-attempt containment (src/sandbox): unshare, setpriv, prlimit
  "gcc cc"                      # builds native/rq-launch (scripts/build-launcher.mjs)
  "libc6-dev dpkg"              # libc.a for the static rq-launch
  "bubblewrap bwrap"            # containment of model-written programs (src/sandbox)
  "faketime faketime"           # clock-skew tests (a worker whose clock is wrong)
  "prometheus promtool"         # promtool check metrics: test/integration/consumer/metrics.test.ts
  "chromium chromium"           # the dashboard's runs view in headless Chromium (test/integration/dashboard)
  "bsdutils script"             # script(1): a pty for the CLI's terminal tests (progress bar, pretty logs)
)

# Installed without their recommended packages (prometheus would bring a whole server setup).
NO_RECOMMENDS="prometheus chromium"

check_only=false
if [ "${1:-}" = "--check" ]; then check_only=true; fi

present() {
  local package="$1" probe="$2"
  if [ "$probe" = "dpkg" ]; then
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"
  else
    command -v "$probe" >/dev/null 2>&1
  fi
}

missing=()
for entry in "${PACKAGES[@]}"; do
  read -r package probe <<<"$entry"
  present "$package" "$probe" || missing+=("$package")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-system-deps: every package the tests need is installed"
  exit 0
fi

if $check_only; then
  echo "install-system-deps: missing: ${missing[*]} (run scripts/install-system-deps.sh)"
  exit 1
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-system-deps: not root and no sudo: install these Debian packages as root: ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

plain=()
lean=()
for package in "${missing[@]}"; do
  if [[ " $NO_RECOMMENDS " == *" $package "* ]]; then lean+=("$package"); else plain+=("$package"); fi
done

echo "install-system-deps: installing ${missing[*]} with apt-get"
"${sudo_cmd[@]}" apt-get update -qq
if [ "${#plain[@]}" -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${plain[@]}" >/dev/null
fi
if [ "${#lean[@]}" -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
fi
echo "install-system-deps: done"
