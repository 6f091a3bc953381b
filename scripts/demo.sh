#!/usr/bin/env bash
# The seed's sales example, end to end on the embedded local runtime:
# the CLI flow (create, upload, exec, download, list, kill), then the same
# analysis through the Python SDK. Uses a private state dir and stops the
# daemon it started, so it leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
abx=$PWD/build/abx
export ABX_STATE_DIR=$PWD/build/demo-state ABX_CONFIG_DIR=$PWD/build/demo-state/config
unset ABX_SANDBOX_API_URL ABX_SANDBOX_API_KEY
work=$(mktemp -d)
id=
cleanup() {
  [[ -n $id ]] && "$abx" kill "$id" --yes >/dev/null 2>&1 || true
  "$abx" daemon stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step abx create --template base
id=$("$abx" create --template base)
echo "$id"
step abx upload "$id" examples/sales.csv /home/user/sales.csv
"$abx" upload "$id" examples/sales.csv /home/user/sales.csv
step abx upload "$id" examples/analyze.py /home/user/analyze.py
"$abx" upload "$id" examples/analyze.py /home/user/analyze.py
step abx exec "$id" -- python /home/user/analyze.py
"$abx" exec "$id" -- python /home/user/analyze.py
step abx download "$id" /home/user/out.txt "$work/out.txt"
"$abx" download "$id" /home/user/out.txt "$work/out.txt"
cat "$work/out.txt"
step abx list
"$abx" list
step abx kill "$id" --yes
"$abx" kill "$id" --yes
id=

if build/venv/bin/python -c 'import agent_sandbox' 2>/dev/null; then
  step python examples/seed_sdk.py
  build/venv/bin/python examples/seed_sdk.py
fi
