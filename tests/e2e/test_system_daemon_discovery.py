"""Issue 36: with the daemon running as the system service (data in /var/lib/abx, here a dir
named by ABX_SYSTEM_DATA_DIR), the CLI of a user who may read that dir (root) and who names no
state dir, URL or key of their own uses it, rather than starting a second daemon beside it."""
from __future__ import annotations

import os
import subprocess

from harness import start_daemon, stop_daemon
from helpers import ABX_BIN


def cli_env(home, system_dir) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ABX_", "E2B_")) or k == "ABX_BIN"}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"),
               XDG_CONFIG_HOME=str(home / "config"), ABX_SYSTEM_DATA_DIR=str(system_dir))
    return env


def abx(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(ABX_BIN), *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_the_cli_finds_the_system_daemon_without_any_setting(state_dir):
    tmp_path = state_dir
    system_dir = tmp_path / "var-lib-abx"
    daemon = start_daemon(system_dir)
    home = tmp_path / "home"
    home.mkdir()
    env = cli_env(home, system_dir)
    try:
        made = abx(env, "create", "--template", "host")
        assert made.returncode == 0, made.stderr
        sandbox_id = made.stdout.strip()
        # It is the system daemon's sandbox: that daemon lists it.
        listed = subprocess.run([str(ABX_BIN), "list", "-q"], env=daemon.env(),
                                capture_output=True, text=True, timeout=60)
        assert sandbox_id in listed.stdout.split(), listed.stdout
        assert abx(env, "kill", sandbox_id).returncode == 0
        # No daemon of the user's own was started beside it.
        own = home / "state" / "abx"
        assert not (own / "daemon.pid").exists() and not (own / "daemon.addr").exists()
        # Naming a state dir of one's own opts out: that one is asked (none runs there).
        env_own = dict(env, ABX_STATE_DIR=str(tmp_path / "mine"))
        status = abx(env_own, "daemon", "status")
        assert status.returncode == 3, (status.returncode, status.stdout, status.stderr)
    finally:
        stop_daemon(daemon)
