"""A sandbox that floods its output cannot grow the daemon without bound: with a client
attached that does not read (slow, or hostile), the daemon keeps at most a few MiB of the
command's output for it and stops reading the command, which then waits, as on a pipe.
Once the client goes, the command runs to its end. Issue 32 (the output path through the
sandbox's agent)."""
from __future__ import annotations

import json
import re
import socket
import struct
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from helpers import envd_headers, wait_until

pytestmark = pytest.mark.offline

FLOOD_BYTES = 400 << 20
MAX_DAEMON_GROWTH = 96 << 20  # 4 MiB held per stream, plus the buffers on the way


def rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) * 1024


def start_unread_stream(daemon, sandbox: dict, cmd: str) -> tuple[socket.socket, int]:
    """process.Process/Start over Connect on a raw socket whose response is read only as
    far as the start event (the pid); the rest never is."""
    msg = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}}).encode()
    body = struct.pack(">BI", 0, len(msg)) + msg
    url = urlparse(daemon.url)
    headers = {**envd_headers(sandbox), "Content-Type": "application/connect+json",
               "Host": f"{url.hostname}:{url.port}", "Content-Length": str(len(body))}
    sock = socket.create_connection((url.hostname, url.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"POST /process.Process/Start HTTP/1.1\r\n{head}\r\n".encode() + body)
    seen = b""
    while (found := re.search(rb'"pid":(\d+)', seen)) is None:
        seen += sock.recv(1)
    return sock, int(found.group(1))


def test_a_client_that_does_not_read_cannot_make_the_daemon_hold_a_flood(daemon):
    with daemon.api() as api:
        made = api.post("/sandboxes", json={"templateID": "host", "timeout": 300})
        assert made.status_code == 201, made.text
        sandbox = made.json()
        sid = sandbox["sandboxID"]
        before = rss(daemon.proc.pid)
        flood, pid = start_unread_stream(
            daemon, sandbox, f"head -c {FLOOD_BYTES} /dev/zero")
        try:
            time.sleep(5)  # unbounded, the daemon would hold it all by now (~1 GiB/s)
            grown = rss(daemon.proc.pid) - before
            assert grown < MAX_DAEMON_GROWTH, f"the daemon grew {grown >> 20} MiB"
            assert api.get("/health").status_code in (200, 204)
        finally:
            flood.close()
        kept = f"/abx/v1/sandboxes/{sid}/processes/{pid}/output"
        wait_until(lambda: api.get(kept, params={"limit": 1}).json()["ended"], timeout=60,
                   what="the command to run to its end once its client went")
        ended = api.get(kept).json()
        assert ended["exitCode"] == 0 and ended["end"] == FLOOD_BYTES, ended
        api.delete(f"/sandboxes/{sid}")
