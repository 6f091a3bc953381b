"""Runs the JavaScript E2B SDK suite (tests/compat/js, node --test) against the session daemon."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"


def node_version() -> tuple[int, ...]:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(part) for part in out.strip().lstrip("v").split("."))


@pytest.mark.timeout(600)
def test_js_sdks_e2b_and_code_interpreter(daemon):
    """node --test over e2b and @e2b/code-interpreter from npm (pinned in package-lock.json)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the JavaScript SDK suite")
    if node_version() < (20, 18, 1):
        pytest.skip("the e2b JavaScript SDK needs node >= 20.18.1")
    if not (JS_DIR / "node_modules" / "e2b").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, check=True)
    env = dict(os.environ,
               E2B_API_URL=daemon.url, E2B_SANDBOX_URL=daemon.url, E2B_API_KEY=daemon.api_key,
               E2B_DOMAIN=f"localhost:{urlparse(daemon.url).port}")
    tests = sorted(str(p.name) for p in JS_DIR.glob("*.test.mjs"))
    run = subprocess.run(["node", "--test", "--test-concurrency=1", *tests], cwd=JS_DIR, env=env,
                         capture_output=True, text=True, timeout=580)
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
