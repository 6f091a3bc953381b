"""The seed script from the design, verbatim, against the test daemon."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SEED_SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "seed_sdk.py"  # the seed, verbatim


def test_seed_script_prints_totals(daemon):
    env = dict(os.environ, ABX_SANDBOX_API_URL=daemon.url, ABX_SANDBOX_API_KEY=daemon.api_key)
    done = subprocess.run([sys.executable, str(SEED_SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines == ["shanghai   200", "hangzhou   165", "beijing    110", "exit code: 0"]
