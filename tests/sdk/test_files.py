"""sandbox.files: write/read in every form, listing, stat, mkdir, rename, remove, watch."""
from __future__ import annotations

import asyncio
import io

import pytest
from agent_sandbox import FileType, NotFoundError, Sandbox, WriteEntry

from helpers import wait_until


async def test_write_and_read_forms(conn, tmp_path):
    async with await Sandbox.create(**conn) as sandbox:
        info = await sandbox.files.write("/home/user/a.txt", "héllo\n")
        assert info.path == "/home/user/a.txt"
        assert await sandbox.files.read("/home/user/a.txt") == "héllo\n"
        await sandbox.files.write("b.bin", bytes(range(256)))
        assert await sandbox.files.read("/home/user/b.bin", format="bytes") == bytes(range(256))
        big = tmp_path / "big.bin"
        big.write_bytes(b"0123456789abcdef" * 200_000)  # 3.2 MB, streamed from the file
        with big.open("rb") as source:
            await sandbox.files.write("nested/dir/big.bin", source)
        chunks = [chunk async for chunk in await sandbox.files.read("nested/dir/big.bin", format="stream")]
        assert len(chunks) > 1 and b"".join(chunks) == big.read_bytes()
        await sandbox.files.write("text-io.txt", io.StringIO("from a text stream"))
        assert await sandbox.files.read("text-io.txt") == "from a text stream"


async def test_write_many_in_one_request(conn):
    async with await Sandbox.create(**conn) as sandbox:
        written = await sandbox.files.write([WriteEntry("m/one.txt", "1"), WriteEntry("/tmp/two.txt", b"2")])
        assert sorted(w.path for w in written) == ["/home/user/m/one.txt", "/tmp/two.txt"]
        assert await sandbox.files.read("m/one.txt") == "1"
        assert await sandbox.files.read("/tmp/two.txt") == "2"


async def test_list_stat_mkdir_rename_remove(conn):
    async with await Sandbox.create(**conn) as sandbox:
        files = sandbox.files
        assert await files.make_dir("d/e") is True
        assert await files.make_dir("d/e") is False
        await files.write("d/e/f.txt", "abc")
        names = {(e.name, e.type) for e in await files.list("d")}
        assert names == {("e", FileType.DIR)}
        deep = {e.path for e in await files.list("d", depth=2)}
        assert "/home/user/d/e/f.txt" in deep
        info = await files.get_info("d/e/f.txt")
        assert (info.type, info.size, info.name) == (FileType.FILE, 3, "f.txt")
        assert await files.exists("d/e/f.txt") and not await files.exists("d/nope")
        moved = await files.rename("d/e/f.txt", "d/g.txt")
        assert moved.path == "/home/user/d/g.txt"
        assert not await files.exists("d/e/f.txt")
        await files.remove("d")
        assert not await files.exists("d")


async def test_missing_file_raises_not_found(conn):
    async with await Sandbox.create(**conn) as sandbox:
        with pytest.raises(NotFoundError):
            await sandbox.files.read("/home/user/missing.txt")
        with pytest.raises(NotFoundError):
            await sandbox.files.get_info("missing")
        with pytest.raises(NotFoundError):
            await sandbox.files.list("/no/such/dir")


async def test_watch_dir_reports_changes(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.files.make_dir("watched")
        events = []
        handle = await sandbox.files.watch_dir("watched", events.append)
        try:
            await sandbox.files.write("watched/new.txt", "x")
            for _ in range(50):
                if any(e.name == "new.txt" for e in events):
                    break
                await asyncio.sleep(0.1)
        finally:
            await handle.stop()
        assert any(e.name == "new.txt" for e in events), events


def test_sync_watch_dir_reports_changes(conn):
    from agent_sandbox.sync import Sandbox as SyncSandbox

    with SyncSandbox.create(**conn) as sandbox:
        sandbox.files.make_dir("watched")
        handle = sandbox.files.watch_dir("watched")
        try:
            sandbox.files.write("watched/new.txt", "x")
            events = []

            def saw_new_txt() -> bool:
                events.extend(handle.get_new_events())
                return any(e.name == "new.txt" for e in events)

            wait_until(saw_new_txt, what="the watcher to report new.txt")
        finally:
            handle.stop()
        assert any(e.name == "new.txt" for e in events), events
