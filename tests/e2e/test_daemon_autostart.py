"""With no daemon running, the CLI starts one for the user, says so once, and
`abx daemon start|stop|status` manage it."""
from __future__ import annotations

import os
import subprocess

import pytest

from harness import ABX_BIN

# The CLI starts its own daemon; nothing here creates a sandbox.
pytestmark = pytest.mark.offline


def run(env, *args):
    return subprocess.run([str(ABX_BIN), *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60)


def test_cli_starts_a_daemon_once_and_daemon_commands_manage_it(state_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(state_dir / "state"), ABX_CONFIG_DIR=str(state_dir / "config"))
    try:
        assert run(env, "daemon", "status").returncode == 3
        first = run(env, "list")
        assert first.returncode == 0, first.stderr
        assert "started the local daemon" in first.stderr
        key_file = state_dir / "state" / "api_key"
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        second = run(env, "list")
        assert second.returncode == 0 and "started" not in second.stderr
        status = run(env, "daemon", "status")
        assert status.returncode == 0 and "running" in status.stdout
    finally:
        stopped = run(env, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert run(env, "daemon", "status").returncode == 3
