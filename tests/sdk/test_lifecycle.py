"""Sandbox lifecycle over the control plane: create, connect, list, timeout, info, pause,
resume, kill."""
from __future__ import annotations

import asyncio

import pytest
from agent_sandbox import Sandbox, SandboxNotFound, SandboxQuery


async def test_create_info_kill(conn):
    sandbox = await Sandbox.create(template="base", metadata={"test": "lifecycle"}, **conn)
    try:
        assert sandbox.sandbox_id
        assert await sandbox.is_running()
        info = await sandbox.get_info()
        assert info.sandbox_id == sandbox.sandbox_id and info.metadata == {"test": "lifecycle"}
        await sandbox.set_timeout(120)
        extended = await sandbox.get_info()
        assert extended.end_at is not None and extended.started_at is not None
    finally:
        assert await sandbox.kill() is True
    probe = await Sandbox.create(**conn)
    async with probe:
        other = await Sandbox.connect(probe.sandbox_id, **conn)
        await other.close()
    with pytest.raises(SandboxNotFound):
        await Sandbox.connect(sandbox.sandbox_id, **conn)


async def test_kill_twice_returns_false(conn):
    sandbox = await Sandbox.create(**conn)
    again = await Sandbox.connect(sandbox.sandbox_id, **conn)
    assert await sandbox.kill() is True
    assert await again.kill() is False


async def test_connect_shares_the_sandbox(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.files.write("shared.txt", "from first client")
        other = await Sandbox.connect(sandbox.sandbox_id, **conn)
        try:
            assert await other.files.read("shared.txt") == "from first client"
        finally:
            await other.close()


async def test_list_filters_and_paginates(conn):
    created = [await Sandbox.create(metadata={"suite": "list", "n": str(i)}, **conn) for i in range(3)]
    try:
        mine = await Sandbox.list(query=SandboxQuery(metadata={"suite": "list"}), **conn)
        assert {s.sandbox_id for s in mine} == {s.sandbox_id for s in created}
        one = await Sandbox.list(query=SandboxQuery(metadata={"suite": "list", "n": "1"}), **conn)
        assert [s.sandbox_id for s in one] == [created[1].sandbox_id]
        limited = await Sandbox.list(query=SandboxQuery(metadata={"suite": "list"}), limit=2, **conn)
        assert len(limited) == 2
        running = await Sandbox.list(query=SandboxQuery(state=["running"]), **conn)
        assert {s.sandbox_id for s in created} <= {s.sandbox_id for s in running}
    finally:
        for sandbox in created:
            await sandbox.kill()


async def test_async_with_kills_when_the_body_raises(conn):
    with pytest.raises(RuntimeError):
        async with await Sandbox.create(**conn) as sandbox:
            sandbox_id = sandbox.sandbox_id
            raise RuntimeError("boom")
    with pytest.raises(SandboxNotFound):
        await Sandbox.connect(sandbox_id, **conn)


async def test_envs_given_at_create_reach_commands(conn):
    async with await Sandbox.create(envs={"GREETING": "hello"}, **conn) as sandbox:
        assert (await sandbox.commands.run("echo $GREETING")).stdout == "hello\n"


async def test_pause_freezes_and_resume_continues(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.commands.run(
            "while :; do date +%s%N >> /tmp/ticks; sleep 0.05; done", background=True)
        await asyncio.sleep(0.3)
        assert await sandbox.pause() is True
        assert await sandbox.pause() is False  # already paused
        info = await sandbox.get_info()
        assert info.state == "paused"
        assert not await sandbox.is_running()
        assert [s.state for s in await Sandbox.list(**conn)
                if s.sandbox_id == sandbox.sandbox_id] == ["paused"]
        await asyncio.sleep(0.5)
        assert await sandbox.resume(timeout=120) is True
        assert await sandbox.resume() is False  # running again
        ticks = [int(t) for t in (await sandbox.files.read("/tmp/ticks")).split()]
        gaps = [b - a for a, b in zip(ticks, ticks[1:])]
        # The loop stood still while paused (one gap of at least the pause's 0.5 s) ...
        assert max(gaps) >= 400_000_000
        await asyncio.sleep(0.3)
        # ... and goes on after the resume.
        assert len((await sandbox.files.read("/tmp/ticks")).split()) > len(ticks)
        ended = (await sandbox.get_info()).end_at
        assert ended is not None and info.end_at != ended


def test_pause_and_resume_sync(conn):
    from agent_sandbox.sync import Sandbox as SyncSandbox

    with SyncSandbox.create(**conn) as sandbox:
        assert sandbox.pause() is True
        assert sandbox.get_info().state == "paused"
        assert sandbox.resume() is True
        assert sandbox.commands.run("echo back").stdout == "back\n"
