"""Issue 15, snapshots from our SDK: create_snapshot, list_snapshots, delete_snapshot,
Sandbox.create(snapshot=...), fork and pause(keep_memory=False), async and sync, against
the real daemon."""
from __future__ import annotations

import pytest
from agent_sandbox import InvalidArgumentException, RateLimitException, Sandbox, SnapshotInfo
from agent_sandbox.sync import Sandbox as SyncSandbox

NOTE = "/home/user/note.txt"


async def test_snapshot_then_start_on_it_then_delete(conn):
    async with await Sandbox.create(**conn) as source:
        await source.files.write(NOTE, "carried\n")
        info = await source.create_snapshot(name="checkpoint")
        assert isinstance(info, SnapshotInfo) and info.snapshot_id.startswith("snap")
        assert info.names == ["checkpoint"] and info.sandbox_id == source.sandbox_id
        assert info.size_bytes > 0 and info.created_at is not None
        await source.files.write(NOTE, "changed later\n")  # the source goes on

        listed = await Sandbox.list_snapshots(sandbox_id=source.sandbox_id, **conn)
        assert [s.snapshot_id for s in listed] == [info.snapshot_id]
        async with await Sandbox.create(snapshot=info.snapshot_id, **conn) as started:
            assert await started.files.read(NOTE) == "carried\n"
        assert await Sandbox.delete_snapshot(info.snapshot_id, **conn) is True
        assert await Sandbox.delete_snapshot(info.snapshot_id, **conn) is False
        assert info.snapshot_id not in [s.snapshot_id for s in
                                        await Sandbox.list_snapshots(**conn)]


async def test_fork_gives_independent_sandboxes(conn):
    async with await Sandbox.create(**conn) as source:
        await source.files.write(NOTE, "carried\n")
        forks = await source.fork(count=2, timeout=120)
        sandboxes = [f for f in forks if isinstance(f, Sandbox)]
        try:
            assert len(sandboxes) == 2, forks
            assert len({s.sandbox_id for s in sandboxes} | {source.sandbox_id}) == 3
            await sandboxes[0].files.write(NOTE, "mine\n")
            assert await sandboxes[1].files.read(NOTE) == "carried\n"
            assert await source.files.read(NOTE) == "carried\n"
        finally:
            for sandbox in sandboxes:
                await sandbox.kill()
        with pytest.raises(InvalidArgumentException, match="from 1 to 20"):
            await source.fork(count=21)


async def test_pause_keeping_files_only(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.files.write(NOTE, "carried\n")
        handle = await sandbox.commands.run("sleep 600", background=True)
        assert await sandbox.pause(keep_memory=False) is True
        assert (await sandbox.get_info()).state == "paused"
        assert await sandbox.resume(timeout=120) is True
        assert await sandbox.files.read(NOTE) == "carried\n"
        assert handle.pid not in [p.pid for p in await sandbox.commands.list()]


def test_sync_snapshot_and_fork(conn):
    with SyncSandbox.create(**conn) as source:
        source.files.write(NOTE, "carried\n")
        info = source.create_snapshot()
        try:
            assert info.snapshot_id in [s.snapshot_id for s in SyncSandbox.list_snapshots(**conn)]
            with SyncSandbox.create(snapshot=info.snapshot_id, **conn) as started:
                assert started.files.read(NOTE) == "carried\n"
            (fork,) = source.fork()
            assert isinstance(fork, SyncSandbox), fork
            with fork:
                assert fork.files.read(NOTE) == "carried\n"
        finally:
            assert SyncSandbox.delete_snapshot(info.snapshot_id, **conn)


def test_a_full_snapshot_quota_is_a_rate_limit_error(daemon, conn):
    with daemon.api() as api:
        before = api.get("/abx/v1/teams/default/quota").json()
        kept = len(api.get("/snapshots").json())  # the session daemon is shared with other tests
        r = api.put("/abx/v1/teams/default/quota", json={"maxSnapshots": kept + 1})
        assert r.status_code == 200, r.text
        try:
            with SyncSandbox.create(**conn) as source:
                first = source.create_snapshot()
                try:
                    with pytest.raises(RateLimitException, match="maxSnapshots|snapshots"):
                        source.create_snapshot()
                finally:
                    SyncSandbox.delete_snapshot(first.snapshot_id, **conn)
        finally:
            api.put("/abx/v1/teams/default/quota",
                    json={"maxSnapshots": before.get("maxSnapshots", 100)})
