"""e2b sandbox.commands and sandbox.pty."""
from __future__ import annotations

import time

import pytest
from e2b import CommandExitException, PtySize, Sandbox
from e2b.exceptions import TimeoutException

from helpers import wait_until


def running_pids(sandbox) -> set[int]:
    return {p.pid for p in sandbox.commands.list()}


def test_commands_run_foreground_with_callbacks(sandbox):
    """commands.run(cmd, on_stdout, on_stderr)."""
    out, err = [], []
    result = sandbox.commands.run("echo out; echo err >&2", on_stdout=out.append, on_stderr=err.append)
    assert result.exit_code == 0
    assert result.stdout == "out\n" and result.stderr == "err\n"
    assert "".join(out) == "out\n" and "".join(err) == "err\n"


def test_commands_run_envs_cwd_user(sandbox):
    """commands.run(envs, cwd, user='root' | 'user')."""
    assert sandbox.commands.run("echo $X", envs={"X": "42"}).stdout == "42\n"
    assert sandbox.commands.run("pwd", cwd="/tmp").stdout == "/tmp\n"
    assert sandbox.commands.run("whoami", user="root").stdout == "root\n"
    assert sandbox.commands.run("whoami", user="user").stdout == "user\n"


def test_sudo_as_user_and_scoped_env_vars(sandbox):
    """Mirrors E2B's test_bash_command_scoped_env_vars (e2b-python-sdk
    tests/{sync,async}/.../commands/test_env_vars.py, e2b-js-sdk envVars.test.ts 'bash command
    scoped env vars'): `user` runs sudo with no password, as in E2B's base image, and a
    command's envs do not reach the next command."""
    assert sandbox.commands.run("echo $FOO", envs={"FOO": "bar"}).stdout == "bar\n"
    again = sandbox.commands.run('sudo echo "$FOO"')
    assert again.exit_code == 0 and again.stdout.strip() == ""
    assert sandbox.commands.run("sudo whoami").stdout == "root\n"
    assert sandbox.commands.run("sudo id -un; id -un").stdout == "root\nuser\n"


def test_commands_run_nonzero_exit_raises(sandbox):
    """commands.run with a non-zero exit raises CommandExitException."""
    with pytest.raises(CommandExitException) as caught:
        sandbox.commands.run("echo bad >&2; exit 3")
    assert caught.value.exit_code == 3 and caught.value.stderr == "bad\n"


def test_commands_run_timeout_ends_process(sandbox):
    """commands.run(timeout=...) sends Connect-Timeout-Ms; the process is ended."""
    with pytest.raises(TimeoutException):
        sandbox.commands.run("sleep 30; echo never", timeout=1)
    wait_until(lambda: not any("sleep 30" in " ".join([p.cmd, *p.args])
                               for p in sandbox.commands.list()),
               what="the timed-out command to end")


def test_commands_background_stdin_list_kill(sandbox):
    """commands.run(background=True, stdin=True), send_stdin, close_stdin, list, kill."""
    handle = sandbox.commands.run("cat", background=True, stdin=True)
    sandbox.commands.send_stdin(handle.pid, "hello\n")
    sandbox.commands.close_stdin(handle.pid)
    result = handle.wait()
    assert result.stdout == "hello\n"
    sleeper = sandbox.commands.run("sleep 60", background=True)
    assert sleeper.pid in [p.pid for p in sandbox.commands.list()]
    assert sandbox.commands.kill(sleeper.pid)
    wait_until(lambda: sleeper.pid not in running_pids(sandbox),
               what="the killed process to leave the list (its exit reaped)")
    assert sandbox.commands.kill(sleeper.pid) is False


def test_commands_connect_after_first_client_left(sandbox):
    """commands.connect(pid) to a background process after its first handle disconnected."""
    handle = sandbox.commands.run("sleep 1; echo done", background=True)
    handle.disconnect()
    again = sandbox.commands.connect(handle.pid)
    assert again.wait().stdout.endswith("done\n")


def test_pty_create_input_resize_kill(sandbox):
    """pty.create, pty.send_stdin, pty.resize, output stream, pty.kill."""
    output = bytearray()
    handle = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=30)
    sandbox.pty.resize(handle.pid, PtySize(rows=30, cols=100))
    sandbox.pty.send_stdin(handle.pid, b"stty size; echo pty-$((40+2))\n")
    deadline = time.monotonic() + 10
    for stdout, stderr, pty in handle:
        if pty:
            output += pty
        if b"pty-42" in output or time.monotonic() > deadline:
            break
    assert b"30 100" in output and b"pty-42" in output
    assert sandbox.pty.kill(handle.pid)


def test_pty_kill_answers_once_the_process_is_gone(sandbox):
    """Mirrors E2B's test_kill_pty (e2b-python-sdk tests/async/sandbox_async/pty/
    test_pty_kill.py): right after pty.kill() answers, `kill -0 <pid>` finds no process.
    A few rounds, since an answer given too early only shows sometimes."""
    for _ in range(5):
        terminal = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=30)
        assert sandbox.pty.kill(terminal.pid)
        with pytest.raises(CommandExitException):
            sandbox.commands.run(f"kill -0 {terminal.pid}")
    assert not sandbox.pty.kill(999999)


def test_dropped_client_leaves_no_process_past_its_timeout(sandbox):
    """commands.run(timeout=2) then handle.disconnect(): the process ends at its deadline, not never."""
    handle = sandbox.commands.run("sleep 30", background=True, timeout=2)
    handle.disconnect()
    assert handle.pid in [p.pid for p in sandbox.commands.list()]  # kept, as envd keeps it
    wait_until(lambda: handle.pid not in running_pids(sandbox), timeout=15,
               what="the process to end at its 2 s deadline")
