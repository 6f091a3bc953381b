"""sandbox.commands: foreground, streaming callbacks, background handles, stdin, errors."""
from __future__ import annotations

import asyncio

import pytest
from helpers import wait_until_async
from agent_sandbox import CommandExitException, Sandbox, TimeoutException


async def test_run_returns_output_and_exit_code(conn):
    async with await Sandbox.create(**conn) as sandbox:
        result = await sandbox.commands.run("echo out; echo err >&2")
        assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 0)
        with pytest.raises(CommandExitException) as raised:
            await sandbox.commands.run("echo partial; exit 7")
        assert raised.value.exit_code == 7 and raised.value.stdout == "partial\n"
        unchecked = await sandbox.commands.run("exit 3", check=False)
        assert unchecked.exit_code == 3


async def test_envs_cwd_and_user(conn):
    async with await Sandbox.create(**conn) as sandbox:
        result = await sandbox.commands.run("echo $A-$(pwd)-$(whoami)", envs={"A": "x"}, cwd="/tmp")
        assert result.stdout == "x-/tmp-user\n"
        assert (await sandbox.commands.run("pwd")).stdout == "/home/user\n"
        assert (await sandbox.commands.run("whoami", user="root")).stdout == "root\n"


async def test_on_stdout_is_called_before_the_command_ends(conn):
    # The command waits for a file that is written only once its first line has been
    # seen: if output came only at the end, the wait below could never finish.
    async with await Sandbox.create(**conn) as sandbox:
        seen: list[str] = []
        handle = await sandbox.commands.run(
            "echo first; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second",
            background=True, on_stdout=seen.append)
        await wait_until_async(lambda: _true_when("first\n" in "".join(seen)), timeout=30,
                               what="the first line while the command still runs")
        await sandbox.files.write("/tmp/go", "")
        result = await handle.wait()
        assert "".join(seen) == "first\nsecond\n" == result.stdout


async def test_async_callbacks_are_awaited(conn):
    async with await Sandbox.create(**conn) as sandbox:
        seen = []

        async def collect(chunk: str) -> None:
            await asyncio.sleep(0)
            seen.append(chunk)

        await sandbox.commands.run("echo a >&2", on_stderr=collect)
        assert seen == ["a\n"]


async def test_background_wait_list_kill(conn):
    async with await Sandbox.create(**conn) as sandbox:
        handle = await sandbox.commands.run("echo started; sleep 30", background=True)
        assert handle.pid > 0
        assert handle.pid in {p.pid for p in await sandbox.commands.list()}
        for _ in range(200):  # let bash print before the kill, or there is nothing to assert
            if handle.stdout:
                break
            await asyncio.sleep(0.05)
        assert await handle.kill() is True
        with pytest.raises(CommandExitException):
            await handle.wait()
        assert handle.stdout == "started\n"
        assert handle.pid not in {p.pid for p in await sandbox.commands.list()}
        assert await sandbox.commands.kill(handle.pid) is False
        quick = await sandbox.commands.run("sleep 0.2; echo done", background=True)
        assert (await quick.wait()).stdout == "done\n"


async def test_stdin_on_handle_and_by_pid(conn):
    async with await Sandbox.create(**conn) as sandbox:
        handle = await sandbox.commands.run("cat", background=True, stdin=True)
        await handle.send_stdin("hello ")
        await sandbox.commands.send_stdin(handle.pid, b"world\n")
        await handle.close_stdin()
        assert (await handle.wait()).stdout == "hello world\n"


async def test_connect_to_running_process(conn):
    async with await Sandbox.create(**conn) as sandbox:
        handle = await sandbox.commands.run("sleep 1; echo late", background=True)
        attached = await sandbox.commands.connect(handle.pid)
        result = await attached.wait()
        assert result.stdout == "late\n"
        await handle.wait()


async def test_timeout_kills_the_command(conn):
    async with await Sandbox.create(**conn) as sandbox:
        with pytest.raises(TimeoutException, match="deadline exceeded"):
            await sandbox.commands.run("sleep 30", timeout=1)
        # Killed, not left running past its deadline.
        running = [" ".join([p.cmd, *p.args]) for p in await sandbox.commands.list()]
        assert not any("sleep 30" in line for line in running), running
        assert (await sandbox.commands.run("echo alive")).stdout == "alive\n"


async def _true_when(condition: bool) -> bool:
    return condition
