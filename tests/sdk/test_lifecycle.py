"""Sandbox lifecycle over the control plane: create, connect, list, timeout, info, kill."""
from __future__ import annotations

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
