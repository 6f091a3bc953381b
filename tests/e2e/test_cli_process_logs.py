"""`abx logs ID PID`: a command's output as the sandbox keeps it, from its first line, its
stdout and stderr to ours; `-f` follows it to its end and exits with its exit code; after a
daemon SIGKILL and restart it is all there again with no gap or duplicate. Drives the real
`abx` binary, on the offline `host` template."""
from __future__ import annotations

import signal
import subprocess

import pytest
from durable_helpers import e2b_env, numbers
from harness import ABX_BIN, Daemon, start_daemon
from helpers import abx, wait_until

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")


def follow(d: Daemon, sandbox_id: str, pid: int, until_line: str) -> subprocess.Popen:
    """`abx logs ID PID -f`, once it printed `until_line` (so what comes next is followed)."""
    follower = subprocess.Popen([str(ABX_BIN), "logs", sandbox_id, str(pid), "-f"],
                                env=d.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    seen = ""
    while until_line not in seen.splitlines():
        line = follower.stdout.readline()
        assert line, f"abx logs -f ended before {until_line!r}: {seen[-300:]}"
        seen += line
    follower.seen = seen
    return follower


def test_logs_of_a_pid_show_its_output_so_far_then_follow_it_to_its_exit_code(own_daemon):
    d = own_daemon["d"]
    sb = e2b.Sandbox.create(template="host", timeout=300)
    script = ("for i in $(seq 1 50); do echo line $i; echo err $i >&2; done; "
              "until [ -e /tmp/go ]; do sleep 0.1; done; "
              "for i in $(seq 51 60); do echo line $i; done; exit 7")
    pid = sb.commands.run(script, background=True).pid

    wait_until(lambda: numbers(abx(d, "logs", sb.sandbox_id, str(pid)).stdout)[-1:] == [50],
               what="the first 50 lines")
    shown = abx(d, "logs", sb.sandbox_id, str(pid))
    assert shown.returncode == 0, shown.stderr
    assert numbers(shown.stdout) == list(range(1, 51))
    assert numbers(shown.stderr, "err") == list(range(1, 51))

    follower = follow(d, sb.sandbox_id, pid, "line 50")
    sb.commands.run("touch /tmp/go")
    rest, err = follower.communicate(timeout=60)
    assert follower.returncode == 7, err
    assert numbers(follower.seen + rest) == list(range(1, 61))
    assert numbers(err, "err") == list(range(1, 51))

    missing = abx(d, "logs", sb.sandbox_id, "99999")
    assert missing.returncode != 0
    assert missing.stderr.strip().count("\n") == 0, missing.stderr
    assert "99999" in missing.stderr and f"abx ps {sb.sandbox_id}" in missing.stderr
    sb.kill()


def test_logs_of_a_pid_after_a_daemon_sigkill_start_at_its_first_line(own_daemon, monkeypatch):
    d = own_daemon["d"]
    sb = e2b.Sandbox.create(template="host", timeout=300)
    script = ("for i in $(seq 1 300); do echo line $i; sleep 0.01; done; "
              "until [ -e /tmp/go ]; do sleep 0.1; done; echo line 301; exit 3")
    pid = sb.commands.run(script, background=True).pid
    wait_until(lambda: len(numbers(abx(d, "logs", sb.sandbox_id, str(pid)).stdout)) >= 100,
               what="100 lines before the kill")
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    own_daemon["d"] = d = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    e2b_env(monkeypatch, d)

    wait_until(lambda: numbers(abx(d, "logs", sb.sandbox_id, str(pid)).stdout)[-1:] == [300],
               timeout=30, what="all 300 lines after the restart")
    shown = abx(d, "logs", sb.sandbox_id, str(pid))
    assert shown.returncode == 0, shown.stderr
    assert numbers(shown.stdout) == list(range(1, 301)), "a gap or a duplicate"

    follower = follow(d, sb.sandbox_id, pid, "line 300")
    e2b.Sandbox.connect(sb.sandbox_id).commands.run("touch /tmp/go")
    rest, err = follower.communicate(timeout=60)
    assert follower.returncode == 3, err
    assert numbers(follower.seen + rest) == list(range(1, 302))
    e2b.Sandbox.connect(sb.sandbox_id).kill()
