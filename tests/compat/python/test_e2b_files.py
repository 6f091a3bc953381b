"""e2b sandbox.files and signed upload/download URLs."""
from __future__ import annotations

import asyncio
import io

import httpx
import pytest
from e2b import AsyncSandbox, FileType, Sandbox
from e2b.exceptions import NotFoundException
from e2b.sandbox.filesystem.filesystem import WriteEntry

from helpers import wait_until


def test_files_write_read_text_bytes_stream(sandbox):
    """files.write / files.read in text, bytes and stream formats."""
    sandbox.files.write("/home/user/t.txt", "héllo")
    assert sandbox.files.read("/home/user/t.txt") == "héllo"
    sandbox.files.write("b.bin", bytes(range(256)))
    assert sandbox.files.read("b.bin", format="bytes") == bytearray(range(256))
    big = b"0123456789" * 300_000
    sandbox.files.write("big.bin", io.BytesIO(big))
    assert b"".join(sandbox.files.read("big.bin", format="stream")) == big


def test_files_write_and_read_gzip(sandbox, daemon):
    """files.write(gzip=True) and files.read(gzip=True): gzip request and response bodies."""
    sandbox.files.write("gz.txt", "zipped " * 1000, gzip=True)
    assert sandbox.files.read("gz.txt", gzip=True) == "zipped " * 1000
    headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "Accept-Encoding": "gzip",
               "X-Access-Token": sandbox._envd_access_token or ""}
    with httpx.stream("GET", f"{daemon.url}/files", params={"path": "gz.txt", "username": "user"},
                      headers=headers) as reply:
        assert reply.headers["content-encoding"] == "gzip"
        assert len(b"".join(reply.iter_raw())) < 200


def test_files_write_several_at_once(sandbox):
    """files.write_files([WriteEntry, ...])."""
    infos = sandbox.files.write_files([WriteEntry(path="m/a.txt", data="a"), WriteEntry(path="/tmp/b.txt", data=b"b")])
    assert sorted(i.path for i in infos) == ["/home/user/m/a.txt", "/tmp/b.txt"]
    assert sandbox.files.read("/tmp/b.txt") == "b"


def test_files_list_exists_get_info_make_dir(sandbox):
    """files.list(depth), files.exists, files.get_info, files.make_dir (False if it exists)."""
    assert sandbox.files.make_dir("d/e") is True
    assert sandbox.files.make_dir("d/e") is False
    sandbox.files.write("d/e/f.txt", "x")
    assert [e.name for e in sandbox.files.list("d")] == ["e"]
    assert {e.name for e in sandbox.files.list("d", depth=2)} == {"e", "f.txt"}
    assert sandbox.files.exists("d/e/f.txt") and not sandbox.files.exists("d/nope")
    info = sandbox.files.get_info("d/e/f.txt")
    assert info.type == FileType.FILE and info.size == 1 and info.path == "/home/user/d/e/f.txt"


def test_files_rename_and_remove(sandbox):
    """files.rename, files.remove; reading a removed file raises NotFoundException."""
    sandbox.files.write("old.txt", "x")
    entry = sandbox.files.rename("old.txt", "new.txt")
    assert entry.name == "new.txt"
    sandbox.files.remove("new.txt")
    with pytest.raises(NotFoundException):
        sandbox.files.read("new.txt")


def test_files_watch_dir_sync_polling(sandbox):
    """files.watch_dir in the sync SDK (CreateWatcher/GetWatcherEvents/RemoveWatcher)."""
    sandbox.files.make_dir("w")
    handle = sandbox.files.watch_dir("w")
    try:
        sandbox.files.write("w/a.txt", "x")
        events = []

        def saw_a_txt() -> bool:
            events.extend(handle.get_new_events())
            return any(e.name == "a.txt" for e in events)

        wait_until(saw_a_txt, what="the watcher to report a.txt")
        assert any(e.name == "a.txt" and e.type.name == "CREATE" for e in events), events
    finally:
        handle.stop()


def test_files_watch_dir_async_stream_recursive():
    """files.watch_dir(recursive=True, on_event) in the async SDK (WatchDir server stream)."""

    async def scenario():
        sb = await AsyncSandbox.create()
        try:
            await sb.files.make_dir("r/sub")
            events = []
            handle = await sb.files.watch_dir("r", on_event=events.append, recursive=True)
            await sb.commands.run("echo hi > r/sub/deep.txt && rm r/sub/deep.txt")
            for _ in range(50):
                if {"CREATE", "REMOVE"} <= {e.type.name for e in events if e.name == "sub/deep.txt"}:
                    break
                await asyncio.sleep(0.1)
            await handle.stop()
            return events
        finally:
            await sb.kill()

    events = asyncio.run(scenario())
    kinds = {e.type.name for e in events if e.name == "sub/deep.txt"}
    assert {"CREATE", "WRITE", "REMOVE"} <= kinds, events


def test_upload_url_and_download_url_signed():
    """sandbox.upload_url / download_url on a secure sandbox, with signatures, used as
    handed out: a plain POST/GET with no sandbox header (a user sends none)."""
    sb = Sandbox.create(secure=True)
    try:
        up = sb.upload_url("/home/user/up.txt", use_signature_expiration=60)
        reply = httpx.post(up, files={"file": ("up.txt", b"uploaded")})
        assert reply.status_code == 200, reply.text
        down = sb.download_url("/home/user/up.txt", use_signature_expiration=60)
        reply = httpx.get(down)
        assert reply.status_code == 200 and reply.content == b"uploaded"
        tampered = down.replace("signature=", "signature=x")
        assert httpx.get(tampered).status_code == 401
    finally:
        sb.kill()
