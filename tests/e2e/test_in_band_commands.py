"""In-band commands (`abx serve --in-band-commands`, issue 32): the sandbox's agent holds every
command's pipes or terminal and the daemon only follows their output from it, as a daemon on
another host must. Driven by the unmodified E2B SDK on the offline `host` template: output,
exit codes, stdin, a terminal, deadlines and kills work as by default, the daemon holds no pipe
per command, and after a SIGKILL a new daemon takes the commands up from where the old one was."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from durable_helpers import Collector, start_in_band
from helpers import wait_until

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")


def daemon_pipes(pid: int) -> int:
    fd_dir = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fd_dir.iterdir():
        try:
            count += os.readlink(fd).startswith("pipe:")
        except OSError:
            continue
    return count


def test_commands_run_as_by_default_and_the_daemon_holds_no_pipe_of_them(in_band):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    done = sb.commands.run("echo out; echo err >&2")
    assert (done.stdout, done.stderr, done.exit_code) == ("out\n", "err\n", 0)
    with pytest.raises(e2b.CommandExitException) as failed:
        sb.commands.run("echo bad >&2; exit 3")
    assert failed.value.exit_code == 3 and failed.value.stderr == "bad\n"
    big = sb.commands.run("head -c 3000000 /dev/zero | tr '\\0' x")
    assert big.stdout == "x" * 3_000_000

    pipes = daemon_pipes(in_band["d"].proc.pid)
    sleepers = [sb.commands.run("sleep 300", background=True) for _ in range(5)]
    assert daemon_pipes(in_band["d"].proc.pid) <= pipes, "the daemon holds pipes of commands"

    reader = sb.commands.run("read a; read b; echo got $a $b", background=True, stdin=True)
    sb.commands.send_stdin(reader.pid, "one\n")
    sb.commands.send_stdin(reader.pid, "two\n")
    assert reader.wait().stdout == "got one two\n"

    with pytest.raises(e2b.TimeoutException):
        sb.commands.run("sleep 30", timeout=1)
    for sleeper in sleepers:
        assert sb.commands.kill(sleeper.pid)
    wait_until(lambda: not sb.commands.list(), what="the killed commands to leave the list")
    sb.kill()


def test_a_terminal_types_resizes_and_shows(in_band):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    shown = bytearray()
    terminal = sb.pty.create(e2b.PtySize(rows=24, cols=80), timeout=60)
    sb.pty.resize(terminal.pid, e2b.PtySize(rows=40, cols=100))
    sb.pty.send_stdin(terminal.pid, b"stty size; exit\n")
    terminal.wait(on_pty=shown.extend)
    assert b"40 100" in bytes(shown)
    sb.kill()


def test_a_new_daemon_follows_on_from_where_the_killed_one_was(in_band, monkeypatch):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    script = "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.02; done"
    handle = sb.commands.run(script, background=True)
    before = Collector(handle)
    wait_until(lambda: len(before.seen()) >= 10, what="the command to write")
    d = in_band["d"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    last_before = before.seen()[-1]
    in_band["d"] = start_in_band(d.data_dir, monkeypatch)

    again = e2b.Sandbox.connect(sb.sandbox_id)
    assert handle.pid in {p.pid for p in again.commands.list()}
    after = Collector(again.commands.connect(handle.pid))
    wait_until(lambda: len(after.seen()) >= 100, timeout=30, what="output after the restart")
    seen = after.seen()
    # What it wrote while no daemon ran comes first, from where the old daemon had got to:
    # nothing the client saw comes again.
    assert last_before < seen[0] <= last_before + 5, (last_before, seen[:5])
    assert seen == list(range(seen[0], seen[0] + len(seen))), "a gap in the output"
    assert again.commands.kill(handle.pid)
    again.kill()


def test_after_a_restart_a_commands_stdin_is_as_it_was(in_band, monkeypatch):
    """The next daemon takes a command's stdin state from the agent: one without stdin, or
    whose stdin was closed, refuses input as before the restart; an open one takes it."""
    sb = e2b.Sandbox.create(template="host", timeout=300)
    deaf = sb.commands.run("sleep 300", background=True, stdin=False, timeout=0)
    closed = sb.commands.run("cat; sleep 300", background=True, stdin=True, timeout=0)
    sb.commands.close_stdin(closed.pid)
    reader = sb.commands.run("read a; echo got $a; sleep 300", background=True, stdin=True,
                             timeout=0)
    for pid in (deaf.pid, closed.pid):
        with pytest.raises(e2b.InvalidArgumentException):
            sb.commands.send_stdin(pid, "before\n")
    d = in_band["d"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    in_band["d"] = start_in_band(d.data_dir, monkeypatch)

    again = e2b.Sandbox.connect(sb.sandbox_id)
    for pid in (deaf.pid, closed.pid):
        with pytest.raises(e2b.InvalidArgumentException):
            again.commands.send_stdin(pid, "after\n")
    after = Collector(again.commands.connect(reader.pid))
    again.commands.send_stdin(reader.pid, "one\n")
    wait_until(lambda: "got one" in after.text, what="input sent after the restart")
    again.kill()
