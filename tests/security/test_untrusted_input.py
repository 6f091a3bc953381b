"""Untrusted input is bounded (issue 12, attacks 3, 4 and 9): a proxied server's
oversized header or trailer, deeply nested JSON, a gzip bomb, a huge sparse file
downloaded as gzip, a NUL in a path and a file name that is not UTF-8 each get a
clear answer, and the daemon is the same process and answers /health afterwards."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import subprocess
import zlib
from pathlib import Path

import httpx
import pytest
from harness import ABX_BIN, start_daemon, stop_daemon
from helpers import wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

ENVD_PORT = 49983
SERVER_PORT = 8000
DISK_MB = 16  # the smallest disk a sandbox may have: the gzip bound

# Answers /trailer with a chunked body whose trailer holds one 70 KB field (Beast threw
# std::length_error for any field over 64 KiB, out of the daemon's I/O loop), /trailers
# with a megabyte of small trailer fields, and /header with a 40 KB header field.
SERVER = r'''
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(16)
while True:
    c, _ = s.accept()
    try:
        target = c.recv(65536).split(b" ")[1]
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
        if target == b"/header":
            c.sendall(head + b"X-Big: " + b"h" * 40000 + b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        elif target == b"/trailer":
            c.sendall(head + b"\r\n5\r\nhello\r\n0\r\nX-Big: " + b"t" * 70000 + b"\r\n\r\n")
        elif target == b"/trailers":
            fields = b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 100) for i in range(10000))
            c.sendall(head + b"\r\n5\r\nhello\r\n0\r\n" + fields + b"\r\n")
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
    c.close()
'''


def still_serving(d) -> None:
    assert d.proc.poll() is None, "the daemon died"
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204


def exec_in(d, sandbox_id: str, script: str) -> None:
    subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c", script],
                   env=d.env(), check=True, timeout=60)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("untrusted")
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": DISK_MB})
        assert r.status_code == 201, r.text
    sandbox_id = r.json()["sandboxID"]
    (state_dir / "server.py").write_text(SERVER)
    subprocess.run([str(ABX_BIN), "upload", sandbox_id, str(state_dir / "server.py"),
                    "/tmp/server.py"], env=d.env(), check=True, timeout=60)
    exec_in(d, sandbox_id, "nohup python3 /tmp/server.py >/dev/null 2>&1 &")
    yield d, sandbox_id
    stop_daemon(d)


def plane(d, sandbox_id: str, port: int = ENVD_PORT) -> httpx.Client:
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port),
               "X-API-KEY": d.api_key}
    return httpx.Client(base_url=d.url, headers=headers, timeout=60)


def rpc(client: httpx.Client, method: str, body) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(f"/filesystem.Filesystem/{method}", content=content,
                       headers={"Content-Type": "application/json"})


def test_a_proxied_response_with_an_oversized_header_or_trailer_is_refused(sandbox):
    d, sandbox_id = sandbox
    with plane(d, sandbox_id, SERVER_PORT) as server:
        wait_until(lambda: server.get("/").status_code == 200, what="the server in the sandbox")
        for path in ("/trailer", "/trailers"):
            # The status went out before the trailer came: the response is cut short, so
            # the client sees it failed (not a complete-looking one).
            with pytest.raises(httpx.RemoteProtocolError):
                server.get(path)
            still_serving(d)
        big_header = server.get("/header")
        assert big_header.status_code == 502, big_header.text
        assert "header is over 32 KiB" in big_header.json()["message"]
        assert server.get("/").text == "ok"
    still_serving(d)


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def send_raw(d, request: bytes) -> bytes:
    """Sends `request` on a connection of its own and returns what the daemon answered
    before it closed the connection (the test fails if it stays open)."""
    host, port = d.url.split("//")[1].split(":")
    answer = b""
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            conn.sendall(request)
            conn.shutdown(socket.SHUT_WR)
        with contextlib.suppress(ConnectionResetError):
            while chunk := conn.recv(65536):
                answer += chunk
    return answer


# Chunked request bodies whose chunk header or trailer is over the 64 KiB the daemon
# buffers: Beast threw std::length_error for a trailer field over 64 KiB out of the I/O
# loop (the daemon lived on, but the connection's descriptor and slot were never freed),
# and buffered any chunk extension or trailer whole, however large.
OVERSIZED_CHUNKED_BODIES = {
    "trailer field": b"2\r\n{}\r\n0\r\nX-Big: " + b"t" * 70000 + b"\r\n\r\n",
    "trailer fields": (b"2\r\n{}\r\n0\r\n"
                       + b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 100) for i in range(1000))
                       + b"\r\n"),
    "chunk extension": b"2;x=" + b"e" * 70000 + b"\r\n{}\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("kind", OVERSIZED_CHUNKED_BODIES)
def test_a_request_with_an_oversized_trailer_is_refused_and_leaves_nothing_open(sandbox, kind):
    d, _ = sandbox
    request = (b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + d.api_key.encode()
               + b"\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
               + OVERSIZED_CHUNKED_BODIES[kind])
    still_serving(d)
    log = d.data_dir / "daemon.log"
    log_start = log.stat().st_size
    baseline = open_descriptors(d.proc.pid)
    for _ in range(50):
        answer = send_raw(d, request)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"over 64 KiB" in answer, answer
    still_serving(d)
    with log.open("rb") as f:
        f.seek(log_start)
        assert b"an I/O handler threw" not in f.read(), "an exception reached the I/O loop"
    wait_until(lambda: open_descriptors(d.proc.pid) <= baseline, timeout=30,
               what=f"the daemon's descriptors back to {baseline} "
                    f"(now {open_descriptors(d.proc.pid)})")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deeply_nested_json_is_refused_on_every_route(sandbox):
    d, sandbox_id = sandbox
    deep = nested(100_000)
    with d.api() as api:
        mcp = api.post("/mcp", content=deep, headers={"Content-Type": "application/json",
                                                      "Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 400, mcp.text
        assert "nested deeper than 128 levels" in mcp.text
        still_serving(d)
        create = api.post("/sandboxes", content=deep, headers={"Content-Type": "application/json"})
        assert create.status_code == 400 and "nested deeper than 128" in create.text, create.text
        # An object deep inside a valid request is refused the same way.
        metadata = '{"templateID": "host", "metadata": {"a": ' + nested(200) + "}}"
        create = api.post("/sandboxes", content=metadata,
                          headers={"Content-Type": "application/json"})
        assert create.status_code == 400 and "nested deeper than 128" in create.text, create.text
    with plane(d, sandbox_id) as envd:
        stat = rpc(envd, "Stat", '{"path": ' + nested(100_000) + "}")
        assert stat.status_code == 400 and "nested deeper than 128" in stat.text, stat.text
        # Nesting within the limit is only a wrong type.
        shallow = rpc(envd, "Stat", '{"path": ' + nested(100) + "}")
        assert shallow.status_code == 400 and "nested" not in shallow.text, shallow.text
    still_serving(d)


def test_a_gzip_bomb_upload_is_refused_and_leaves_no_file(sandbox):
    d, sandbox_id = sandbox
    # 64 MiB of zeros in about 64 KB: four times the sandbox's disk. /dev/shm is where
    # it would land beyond the disk limit.
    bomb = gzip.compress(bytes(64 << 20), compresslevel=9)
    assert len(bomb) < 200_000
    with plane(d, sandbox_id) as envd:
        r = envd.post("/files", params={"path": "/dev/shm/bomb"}, content=bomb,
                      headers={"Content-Type": "application/octet-stream",
                               "Content-Encoding": "gzip"})
        assert r.status_code == 413, r.text
        assert f"more than the sandbox's disk ({DISK_MB} MiB)" in r.json()["message"]
        assert envd.get("/files", params={"path": "/dev/shm/bomb"}).status_code == 404
        # A gzip body within the bound is written as before.
        small = envd.post("/files", params={"path": "/tmp/small"}, content=gzip.compress(b"x" * 1000),
                          headers={"Content-Type": "application/octet-stream",
                                   "Content-Encoding": "gzip"})
        assert small.status_code == 200, small.text
        assert envd.get("/files", params={"path": "/tmp/small"}).content == b"x" * 1000
    still_serving(d)


def daemon_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in USER_HZ ticks


@pytest.mark.slow  # inflates 4 GiB on the client
def test_a_huge_sparse_file_downloads_as_gzip_without_deflating_its_holes(sandbox):
    d, sandbox_id = sandbox
    size = 4 << 30  # 4 GiB of size on a 16 MiB disk: nearly all of it a hole
    exec_in(d, sandbox_id, f"rm -f /tmp/sparse && printf head > /tmp/sparse && "
                           f"truncate -s {size - 4} /tmp/sparse && printf tail >> /tmp/sparse")
    before = daemon_cpu_seconds(d.proc.pid)
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total, first, last = 0, b"", b""
    with plane(d, sandbox_id) as envd, envd.stream(
            "GET", "/files", params={"path": "/tmp/sparse"},
            headers={"Accept-Encoding": "gzip"}) as r:
        assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
        for packed in r.iter_raw():
            data = inflate.decompress(packed, 64 << 20)
            while data:
                first = first or data[:4]
                last = (last + data)[-4:]
                total += len(data)
                data = inflate.decompress(inflate.unconsumed_tail, 64 << 20)
    assert inflate.eof, "the gzip stream ended early"  # its CRC and size were checked
    assert (total, first, last) == (size, b"head", b"tail")
    # Deflating 4 GiB of zeros takes a core well over 10 s; sending its holes as
    # ready-made blocks takes a small fraction of one.
    assert daemon_cpu_seconds(d.proc.pid) - before < 5
    still_serving(d)


def test_a_nul_in_a_path_is_refused(sandbox):
    d, sandbox_id = sandbox
    exec_in(d, sandbox_id, "echo secret > /tmp/a")
    with plane(d, sandbox_id) as envd:
        # %00 would cut "/tmp/a\0/../b" short at "/tmp/a".
        for r in (envd.get("/files?path=/tmp/a%00.txt"),
                  envd.post("/files?path=/tmp/a%00.txt", content=b"x",
                            headers={"Content-Type": "application/octet-stream"}),
                  envd.post("/files?path=/tmp/a%00.txt", files={"file": ("x", b"x")})):
            assert r.status_code == 400 and "NUL" in r.text, r.text
        for method, body in (("Stat", {"path": "/tmp/a\0.txt"}),
                             ("ListDir", {"path": "/tmp\0/x"}),
                             ("MakeDir", {"path": "/tmp/a\0/d"}),
                             ("Remove", {"path": "/tmp/a\0.txt"}),
                             ("Move", {"source": "/tmp/a\0.txt", "destination": "/tmp/b"}),
                             ("Move", {"source": "/tmp/a", "destination": "/tmp/b\0.txt"}),
                             ("CreateWatcher", {"path": "/tmp\0/x"})):
            r = rpc(envd, method, body)
            assert r.status_code == 400 and "NUL" in r.text, (method, r.text)
        assert envd.get("/files", params={"path": "/tmp/a"}).content == b"secret\n"
    still_serving(d)


def test_a_file_name_that_is_not_utf8_is_listed_with_a_replacement_character(sandbox):
    d, sandbox_id = sandbox
    exec_in(d, sandbox_id,
            r'mkdir -p /tmp/names/sub && touch "$(printf "/tmp/names/sub/bad\377\376.txt")"')
    with plane(d, sandbox_id) as envd:
        for path, depth in (("/tmp/names/sub", 1), ("/tmp/names", 2), ("/tmp", 3)):
            r = rpc(envd, "ListDir", {"path": path, "depth": depth})
            assert r.status_code == 200, (path, r.text)
            names = [entry["name"] for entry in r.json()["entries"]]
            assert "bad\ufffd\ufffd.txt" in names, (path, names)
    still_serving(d)
