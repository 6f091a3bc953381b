"""One daemon per data dir: a second `abx serve` on the same dir refuses to
start, and the CLI never starts a second daemon beside one that does not
answer; it names the running one and how to stop it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest

from harness import ABX_BIN, start_daemon, stop_daemon


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """No test here creates a sandbox: skip the session's template build."""


def cli_env(data_dir) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(data_dir), ABX_CONFIG_DIR=str(data_dir / "config"))
    return env


def test_second_serve_on_the_same_data_dir_refuses(state_dir):
    first = start_daemon(state_dir / "state", extra_args=("--warm-pool", "0"))
    try:
        second = subprocess.run(
            [str(ABX_BIN), "serve", "--listen", "127.0.0.1:0", "--data-dir",
             str(first.data_dir), "--address-file", str(state_dir / "second.addr")],
            capture_output=True, text=True, timeout=60)
        assert second.returncode != 0
        lines = [line for line in second.stderr.splitlines() + second.stdout.splitlines()
                 if "another abx daemon" in line]
        assert len(lines) == 1, second.stderr + second.stdout
        assert f"pid {first.proc.pid}" in lines[0] and str(first.data_dir) in lines[0]
        assert not (state_dir / "second.addr").exists()
        assert httpx.get(f"{first.url}/health", timeout=10).status_code == 204
    finally:
        stop_daemon(first)


def test_cli_does_not_start_a_second_daemon_beside_a_silent_one(state_dir):
    data_dir = state_dir / "state"
    first = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    env = cli_env(data_dir)
    try:
        first.proc.send_signal(signal.SIGSTOP)  # holds the lock, answers nothing
        started = subprocess.run([str(ABX_BIN), "daemon", "start"], capture_output=True,
                                 text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
        assert started.returncode != 0
        assert "does not answer" in started.stderr, started.stderr
        assert f"pid {first.proc.pid}" in started.stderr
        assert "abx daemon stop" in started.stderr
        assert not (data_dir / "daemon.pid").exists()  # nothing was spawned
    finally:
        first.proc.send_signal(signal.SIGCONT)
    try:
        assert httpx.get(f"{first.url}/health", timeout=10).status_code == 204
        status = subprocess.run([str(ABX_BIN), "daemon", "status"], capture_output=True,
                                text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)
        assert status.returncode == 0 and f"{first.proc.pid}" in status.stdout, status.stdout
    finally:
        stop_daemon(first)


def test_daemon_stop_stops_a_foreground_serve(state_dir):
    data_dir = state_dir / "state"
    first = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    try:
        stopped = subprocess.run([str(ABX_BIN), "daemon", "stop"], capture_output=True, text=True,
                                 env=cli_env(data_dir), stdin=subprocess.DEVNULL, timeout=60)
        assert stopped.returncode == 0 and "stopped the local daemon" in stopped.stdout, stopped
        assert first.proc.wait(10) == 0
    finally:
        stop_daemon(first)


def test_cli_names_the_process_that_really_holds_the_lock(state_dir):
    """The lock file records a pid (here ours, as a stale or foreign record would); the
    CLI names the process /proc/locks says holds the lock, with its command line."""
    data_dir = state_dir / "state"
    data_dir.mkdir(parents=True)
    (data_dir / "daemon.lock").write_text(f"{os.getpid()}\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\ntime.sleep(600)",
         str(data_dir / "daemon.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        listed = subprocess.run([str(ABX_BIN), "list"], capture_output=True, text=True,
                                env=cli_env(data_dir), stdin=subprocess.DEVNULL, timeout=120)
        assert listed.returncode != 0
        lines = listed.stderr.strip().splitlines()
        assert len(lines) == 1, listed.stderr
        assert f"pid {holder.pid}: {sys.executable} -c import fcntl" in lines[0], lines[0]
        assert f"kill {holder.pid}`" in lines[0], lines[0]
        assert f"pid {os.getpid()}" not in lines[0], lines[0]
        assert not (data_dir / "daemon.pid").exists()  # nothing was spawned
        # Not an abx: `abx daemon stop` says whom to stop and leaves it alone.
        stopped = subprocess.run([str(ABX_BIN), "daemon", "stop"], capture_output=True,
                                 text=True, env=cli_env(data_dir), stdin=subprocess.DEVNULL,
                                 timeout=120)
        assert stopped.returncode != 0 and f"kill {holder.pid}`" in stopped.stderr, stopped
        assert holder.poll() is None, "abx daemon stop signalled a program that is not abx"
    finally:
        holder.kill()
        holder.wait()
