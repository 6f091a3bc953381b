"""Issue 37: uploads and downloads are in the flight record with their size and SHA-256, and the
record can be followed as it grows (server-sent events; `abx events -f`) until the sandbox
ends. Real daemon, `abx` binary, HTTP."""
from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time

import pytest
from helpers import ABX_BIN, abx, wait_until

pytestmark = pytest.mark.offline


def events(d, sandbox_id: str, *extra: str) -> list[dict]:
    r = abx(d, "events", sandbox_id, "--json", *extra)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_uploads_and_downloads_are_recorded_with_size_and_sha256(own_daemon, tmp_path):
    d = own_daemon["d"]
    sandbox_id = abx(d, "create", "--template", "host").stdout.strip()
    payload = bytes(range(256)) * 4096 + b"tail"
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    assert abx(d, "upload", sandbox_id, str(local), "/tmp/payload.bin").returncode == 0
    back = tmp_path / "back.bin"
    r = abx(d, "download", sandbox_id, "/tmp/payload.bin", str(back))
    assert r.returncode == 0, r.stderr
    digest = hashlib.sha256(payload).hexdigest()
    files = events(d, sandbox_id, "--type", "files")
    assert [(e["event"], e["path"], e["bytes"], e.get("sha256")) for e in files] == [
        ("uploaded", "/tmp/payload.bin", len(payload), digest),
        ("downloaded", "/tmp/payload.bin", len(payload), digest),
    ], files
    assert files[1]["complete"] is True
    # The filter keeps other types out, and the whole record has them in order.
    everything = events(d, sandbox_id)
    assert [e["type"] for e in everything].count("files") == 2
    assert [e["seq"] for e in everything] == sorted(e["seq"] for e in everything)


def test_following_prints_each_new_event_until_the_sandbox_ends(own_daemon):
    d = own_daemon["d"]
    sandbox_id = abx(d, "create", "--template", "host").stdout.strip()
    follower = subprocess.Popen([str(ABX_BIN), "events", sandbox_id, "-f", "--json"],
                                env=d.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    lines: list[dict] = []
    reader = threading.Thread(target=lambda: lines.extend(
        json.loads(line) for line in follower.stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(e["event"] == "created" for e in lines), what="the history")
        assert abx(d, "exec", sandbox_id, "--", "true").returncode == 0
        wait_until(lambda: any(e["type"] == "commands" and e["event"] == "ended" for e in lines),
                   what="a command's end, live")
        assert abx(d, "kill", sandbox_id, "--yes").returncode == 0
        follower.wait(timeout=30)  # it ends with the sandbox
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    reader.join(timeout=5)
    assert follower.returncode == 0, follower.stderr.read()
    assert lines[-1]["type"] == "lifecycle" and lines[-1]["event"] == "ended", lines[-1]
    seqs = [e["seq"] for e in lines]
    assert seqs == sorted(set(seqs)), "an event came twice or out of order"


def test_a_follower_resumes_after_the_last_event_it_had(own_daemon):
    """Last-Event-ID (what a browser's EventSource sends on reconnect) skips what it had."""
    d = own_daemon["d"]
    sandbox_id = abx(d, "create", "--template", "host").stdout.strip()
    assert abx(d, "exec", sandbox_id, "--", "true").returncode == 0
    had = events(d, sandbox_id)
    assert abx(d, "kill", sandbox_id, "--yes").returncode == 0
    with d.api() as api:
        r = api.get(f"/abx/v1/sandboxes/{sandbox_id}/events", params={"follow": "1"},
                    headers={"Last-Event-ID": str(had[-1]["seq"])}, timeout=30)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        data = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        assert data and all(e["seq"] > had[-1]["seq"] for e in data), data
        assert data[-1]["event"] == "ended"
        bad = api.get(f"/abx/v1/sandboxes/{sandbox_id}/events", params={"follow": "maybe"})
        assert bad.status_code == 400 and "follow" in bad.text
    time.sleep(0)  # the stream ended by itself: nothing left open
