"""Issue 15, "each command in its own cgroup": a kill ends the command and everything it
started, however it left the command's process group; what a finished command left running
is not touched; and one command that takes every pid it may leave room for the next."""
from __future__ import annotations

import asyncio

from agent_sandbox import Sandbox

# Each process's command line, one per line, for the sleeps the tests tag by duration.
SLEEPS = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -c '^sleep 10[0-9][0-9]'"


async def sleeps(sandbox: Sandbox) -> int:
    return int((await sandbox.commands.run(SLEEPS, check=False)).stdout.strip() or 0)


async def test_kill_reaches_what_left_the_process_group(conn):
    async with await Sandbox.create(**conn) as sandbox:
        # A new session, a double fork, and the command's own child.
        handle = await sandbox.commands.run(
            "setsid sleep 1001 & (sleep 1002 &); sleep 1000", background=True)
        for _ in range(50):
            if await sleeps(sandbox) == 3:
                break
            await asyncio.sleep(0.1)
        assert await sleeps(sandbox) == 3
        assert await sandbox.commands.kill(handle.pid) is True
        assert await sleeps(sandbox) == 0


async def test_what_a_finished_command_left_running_lives_on(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.commands.run("setsid sleep 1003 >/dev/null 2>&1 < /dev/null &")
        # Later commands start (and sweep ended commands' groups) without touching it.
        for _ in range(3):
            await sandbox.commands.run("true")
        assert await sleeps(sandbox) == 1


async def test_a_command_that_takes_every_pid_leaves_room_for_the_next(conn):
    async with await Sandbox.create(**conn) as sandbox:
        bomb = await sandbox.commands.run(
            "for i in $(seq 400); do sleep 1010 & done 2>/dev/null; wait", background=True)
        # Its forks fail at its group's limit: the sandbox's 256 less a headroom of 16.
        counts = []
        for _ in range(100):
            counts.append(await sleeps(sandbox))
            if len(counts) > 3 and counts[-1] == counts[-4] and counts[-1] > 200:
                break
            await asyncio.sleep(0.1)
        assert 200 < counts[-1] < 256
        assert (await sandbox.commands.run("echo still here")).stdout == "still here\n"
        assert await sandbox.commands.kill(bomb.pid) is True
        assert await sleeps(sandbox) == 0
