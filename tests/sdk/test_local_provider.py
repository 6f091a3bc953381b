"""provider="local" finds the daemon like `abx` does, and starts it when none answers."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ABX_BIN = Path(os.environ.get("ABX_BIN", Path(__file__).resolve().parents[2] / "build" / "abx"))

SCRIPT = """
from agent_sandbox.sync import Sandbox
with Sandbox.create() as sandbox:
    print(sandbox.commands.run("echo autostarted").stdout, end="")
"""


@pytest.mark.needs_template  # its own daemon builds base from the shared mmdebstrap cache
def test_create_starts_the_daemon_when_none_answers():
    # Short: the unix socket paths of the sandboxes live in it.
    tmp_path = Path(tempfile.mkdtemp(prefix="abx-sdk-"))
    tmp_path.chmod(0o711)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(state), ABX_CONFIG_DIR=str(tmp_path / "config"),
               ABX_BIN=str(ABX_BIN))
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "autostarted\n"
        assert (state / "daemon.addr").exists()
    finally:
        subprocess.run([str(ABX_BIN), "daemon", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_existing_daemon_is_found_through_the_state_dir(daemon, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(daemon.data_dir), ABX_CONFIG_DIR=str(tmp_path),
               ABX_BIN=str(tmp_path / "absent"))
    done = subprocess.run([sys.executable, "-c", SCRIPT.replace("autostarted", "found")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "found\n"
