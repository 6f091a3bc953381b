"""Issue 16, items 1-3, 6 and 8: `abx exec` keeps Docker's and E2B's habits. -t needs a
terminal; a command's --timeout exits 124 and says so; a sandbox that ends under a command is
named as the reason; a closed pipe stops the remote command; signals reach the command; the
sandbox is kept alive while a command runs; `abx set-timeout`; one question for `kill --all`."""
from __future__ import annotations

import os
import pty
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from harness import ABX_BIN, Daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build


@pytest.fixture
def sandbox(daemon: Daemon) -> Iterator[str]:
    r = abx(daemon, "create", "--template", "host")
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stdout.strip()
    yield sandbox_id
    abx(daemon, "kill", sandbox_id, "--yes")


def popen_exec(daemon: Daemon, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([str(ABX_BIN), "exec", *args], env=daemon.env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def processes(daemon: Daemon, sandbox_id: str) -> list[str]:
    r = abx(daemon, "exec", sandbox_id, "--", "ps", "-eo", "comm=")
    return r.stdout.split()


def test_tty_without_a_terminal_is_refused_not_hung(daemon, sandbox):
    r = abx(daemon, "exec", "-t", sandbox, "--", "bash", input="echo hi\n", timeout=20)
    assert r.returncode != 0
    assert "-t needs a terminal" in r.stderr and "without -t" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_interactive_flag_sends_piped_input(daemon, sandbox):
    r = abx(daemon, "exec", "-i", sandbox, "--", "cat", input="from stdin\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "from stdin\n"


def test_command_timeout_exits_124_with_a_message(daemon, sandbox):
    r = abx(daemon, "exec", "--timeout", "1", sandbox, "--", "sleep", "20")
    assert r.returncode == 124
    assert "timeout of 1 s" in r.stderr


def test_a_killed_sandbox_under_exec_is_named(daemon, sandbox):
    p = popen_exec(daemon, sandbox, "--", "sh", "-c", "echo ready; sleep 60")
    try:
        assert p.stdout.readline() == "ready\n"
        assert abx(daemon, "kill", sandbox, "--yes").returncode == 0
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 137
    assert f"sandbox {sandbox} ended while the command ran" in err


def test_closed_pipe_stops_the_remote_command(daemon, sandbox):
    r = subprocess.run(f"'{ABX_BIN}' exec {sandbox} -- yes | head -2", shell=True, text=True,
                       capture_output=True, env=daemon.env(), timeout=30)
    assert r.stdout == "y\ny\n"
    deadline = time.monotonic() + 10
    while "yes" in processes(daemon, sandbox) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "yes" not in processes(daemon, sandbox)


def test_sigint_runs_the_remote_trap(daemon, sandbox):
    script = "trap 'echo got-int; exit 3' INT; echo ready; sleep 60 & wait"
    p = popen_exec(daemon, sandbox, "--", "bash", "-c", script)
    try:
        assert p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert "got-int" in out, err
    assert p.returncode == 3


def test_a_running_command_keeps_its_sandbox_alive(daemon):
    r = abx(daemon, "create", "--template", "host", "--timeout", "2")
    sandbox_id = r.stdout.strip()
    try:
        r = abx(daemon, "exec", sandbox_id, "--", "sh", "-c", "sleep 5; echo survived")
        assert r.returncode == 0, r.stderr
        assert r.stdout == "survived\n"
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


def test_set_timeout_moves_the_end(daemon, sandbox):
    before = abx(daemon, "info", sandbox, "--json")
    assert abx(daemon, "set-timeout", sandbox, "3600").returncode == 0
    after = abx(daemon, "info", sandbox, "--json")
    import json
    assert json.loads(after.stdout)["endAt"] > json.loads(before.stdout)["endAt"]
    r = abx(daemon, "set-timeout", "nosuchsandbox0", "60")
    assert r.returncode != 0 and "not found" in r.stderr


def test_kill_all_asks_once(daemon):
    ids = [abx(daemon, "create", "--template", "host").stdout.strip() for _ in range(3)]
    main, secondary = pty.openpty()
    try:
        p = subprocess.Popen([str(ABX_BIN), "kill", "--all"], env=daemon.env(), stdin=secondary,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.close(secondary)
        os.write(main, b"y\n")
        out, err = p.communicate(timeout=60)
    finally:
        os.close(main)
    assert p.returncode == 0, err
    assert all(f"killed {i}" in out for i in ids)
    listed = abx(daemon, "list", "--json").stdout
    assert not any(i in listed for i in ids)
