"""A sandbox killed mid-request, a command past its deadline, and pty.kill, as the
E2B SDKs report them (issue 14 items 5 and 6)."""
from __future__ import annotations

import asyncio
import threading

import pytest
from e2b import AsyncSandbox, CommandExitException, Sandbox, TimeoutException
from e2b.sandbox.commands.command_handle import PtySize


def assert_daemon_serves(daemon) -> None:
    assert daemon.proc.poll() is None, "the daemon must still be the same process"
    with daemon.api() as api:
        assert api.get("/health").is_success


def test_kill_sandbox_while_command_is_running(daemon):
    """Mirrors e2b-python-sdk tests/sync/sandbox_sync/commands/test_sandbox_killed_during_run.py:
    the stream ends as E2B's proxy ends it (the connection drops), so the SDK's health
    probe finds the sandbox gone and says so, instead of an exit with code -1."""
    sandbox = Sandbox.create(timeout=120)
    cmd = sandbox.commands.run("sleep 60", background=True)
    sandbox.kill()
    with pytest.raises(TimeoutException) as caught:
        cmd.wait()
    assert "sandbox was killed or reached its end of life" in str(caught.value)
    assert_daemon_serves(daemon)


def test_run_code_raises_when_sandbox_is_killed_during_execution(daemon):
    """Mirrors code-interpreter tests/sync/test_killed.py: run_code in flight when the
    sandbox is killed raises the SDK's 'sandbox was killed' TimeoutException."""
    from e2b_code_interpreter import Sandbox as CodeInterpreter

    sandbox = CodeInterpreter.create(timeout=120)
    sandbox.run_code("1")  # the context is up: the kill lands mid-execution
    timer = threading.Timer(1.0, sandbox.kill)
    timer.start()
    try:
        with pytest.raises(TimeoutException, match="sandbox was killed while the request was in progress"):
            sandbox.run_code("import time; time.sleep(300)", timeout=300)
    finally:
        timer.cancel()
        sandbox.kill()
    assert_daemon_serves(daemon)


def test_run_with_too_short_timeout(daemon):
    """Mirrors e2b-python-sdk tests/async/sandbox_async/commands/test_run.py::
    test_run_with_too_short_timeout: past Connect-Timeout-Ms the stream ends with
    Connect deadline_exceeded (a TimeoutException), not an exit with code 137."""

    async def scenario() -> None:
        sandbox = await AsyncSandbox.create(timeout=120)
        try:
            with pytest.raises(TimeoutException):
                await sandbox.commands.run("sleep 10", timeout=2)
            # The process was ended at its deadline, as envd ends it.
            listed = await sandbox.commands.list()
            assert not any(p.cmd == "/bin/bash" and "sleep 10" in " ".join(p.args) for p in listed)
        finally:
            await sandbox.kill()

    asyncio.run(scenario())
    assert_daemon_serves(daemon)


def test_kill_pty_is_gone_when_kill_answers(daemon):
    """Mirrors e2b-python-sdk tests/async/sandbox_async/pty/test_pty_kill.py::test_kill_pty:
    once pty.kill() answers, the process is reaped, so `kill -0 <pid>` fails."""
    sandbox = Sandbox.create(timeout=120)
    try:
        for _ in range(5):  # a zombie left behind would show on some round
            terminal = sandbox.pty.create(PtySize(80, 24), timeout=30)
            assert sandbox.pty.kill(terminal.pid)
            with pytest.raises(CommandExitException):
                sandbox.commands.run(f"kill -0 {terminal.pid}")
    finally:
        sandbox.kill()
    assert_daemon_serves(daemon)
