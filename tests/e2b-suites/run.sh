#!/bin/bash
# E2B's own SDK test suites against a private daemon, compared with expected.toml.
# Usage: tests/e2b-suites/run.sh [run.py options]   (--help lists them; --table prints
# the README's numbers). ABX_BIN picks the daemon (default build/abx); ABX_E2B_SUITES the
# suites' folder (default ../shared/e2b-suites beside the checkout: absent means skip).
# The network tests run last, with a daemon inside tests/net's private world (--network).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
suites=${ABX_E2B_SUITES:-$repo/../shared/e2b-suites}
if [[ ! -d $suites ]]; then
  echo "e2b-suites: $suites is absent: skipping E2B's own suites"
  exit 0
fi
export ABX_E2B_SUITES=$suites
export ABX_BIN=${ABX_BIN:-$repo/build/abx}
# A venv of its own: the suites need pytest-asyncio and pytest-xdist, the repo's tests do not.
venv=${ABX_E2B_SUITES_VENV:-$repo/build/e2b-suites-venv}
stamp=$venv/.requirements
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi
exec "$venv/bin/python" "$here/run.py" "$@"
