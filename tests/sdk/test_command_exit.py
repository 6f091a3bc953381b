"""Issue 36: CommandExitException carries the command's stdout, stderr and exit code, as
E2B's does (it is also the CommandResult), and its message shows the end of stderr."""
from __future__ import annotations

import pickle

import pytest
from agent_sandbox import AsyncSandbox, CommandExitException, CommandResult
from agent_sandbox import sync as agent_sync

# 30 numbered stderr lines, one stdout line, exit 5.
FAILING = "echo out; for i in $(seq 1 30); do echo err-line-$i >&2; done; exit 5"


def check_raised(error: CommandExitException) -> None:
    assert isinstance(error, CommandResult), "E2B's CommandExitException is a CommandResult"
    assert (error.exit_code, error.stdout) == (5, "out\n")
    assert error.stderr == "".join(f"err-line-{i}\n" for i in range(1, 31)), "stderr is whole"
    message = str(error)
    assert "code 5" in message, message
    # The tail: the last lines, in order, not the first ones.
    assert "err-line-21\nerr-line-22" in message and message.rstrip().endswith("err-line-30"), \
        message
    assert "err-line-1\n" not in message and "err-line-20\n" not in message, message
    again = pickle.loads(pickle.dumps(error))
    assert (again.stderr, again.exit_code, str(again)) == (error.stderr, 5, message)
    assert hash(error) == hash(error), "an exception stays hashable"


async def test_async_exit_exception_has_stderr_and_its_tail(conn):
    async with await AsyncSandbox.create(**conn) as sandbox:
        with pytest.raises(CommandExitException) as raised:
            await sandbox.commands.run(FAILING)
        check_raised(raised.value)
        handle = await sandbox.commands.run(FAILING, background=True)
        with pytest.raises(CommandExitException) as waited:
            await handle.wait()
        check_raised(waited.value)
        # Without stderr the message is the code alone.
        with pytest.raises(CommandExitException) as quiet:
            await sandbox.commands.run("exit 3")
        assert quiet.value.stderr == "" and "stderr" not in str(quiet.value)
        assert "code 3" in str(quiet.value)


def test_sync_exit_exception_has_stderr_and_its_tail(conn):
    with agent_sync.Sandbox.create(**conn) as sandbox:
        with pytest.raises(CommandExitException) as raised:
            sandbox.commands.run(FAILING)
        check_raised(raised.value)
