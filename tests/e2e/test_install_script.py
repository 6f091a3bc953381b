"""Issue 16: `scripts/install.sh` end to end, as a user runs it from a checkout: Debian
packages (already there), a stripped Release build (build-release, shared with `make install`
and `make deb`), the install into a prefix, the SDK into a venv of its own from this
checkout's sdk/ (pip fetches its dependencies from PyPI), then what it printed is what
works: the installed abx runs a sandbox and the venv's SDK drives it."""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from harness import REPO, private_state_dir, start_daemon, stop_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def test_install_script_from_a_checkout(tmp_path: Path):
    prefix, venv = tmp_path / "prefix", tmp_path / "sdk-venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ABX_", "VIRTUAL_ENV"))}
    env.update(PREFIX=str(prefix), ABX_SDK_VENV=str(venv), ABX_JOBS=str(os.cpu_count() or 2))
    done = subprocess.run(["sh", str(REPO / "scripts/install.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=2100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    abx = prefix / "bin/abx"
    assert f"{venv}/bin/python -c 'import agent_sandbox'" in done.stdout
    assert "(add " + str(prefix / "bin") + " to PATH)" in done.stdout
    assert subprocess.run([str(abx), "--version"], capture_output=True, text=True,
                          timeout=60).stdout in done.stdout

    data = private_state_dir()
    d = start_daemon(data, binary=abx, shared_templates=False, env={"ABX_TEMPLATE_SPECS": ""})
    try:
        env.update(ABX_SANDBOX_API_URL=d.url, ABX_SANDBOX_API_KEY=d.api_key,
                   ABX_STATE_DIR=str(data), ABX_CONFIG_DIR=str(data / "config"))
        script = textwrap.dedent("""
            from agent_sandbox.sync import Sandbox
            with Sandbox.create(template="host") as sandbox:
                print(sandbox.commands.run("echo installed sdk").stdout, end="")
        """)
        ran = subprocess.run([str(venv / "bin/python"), "-c", script], env=env,
                             capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == "installed sdk\n"
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)
        shutil.rmtree(data, ignore_errors=True)
