"""Protocol switches through the port proxy (a WebSocket's handshake): the upgrade reaches the
server in the sandbox without the caller's credentials, bytes flow both ways in order (also
those sent before the 101 arrived and those the server sent with it), either side's close ends
the tunnel, a 101 nobody asked for is still a 502, and the daemon keeps serving."""
from __future__ import annotations

import json
import os
import socket
import threading
from urllib.parse import urlparse

import httpx
import pytest
from helpers import host_sandbox_serving

pytestmark = pytest.mark.offline  # the `host` template needs no build

# A server speaking a made-up protocol `echo` after its 101: it first sends the request's
# header names as a JSON line, then echoes everything in upper case until the client closes.
SERVER = r'''
import json, socket, threading
def handle(c):
    data = b""
    while b"\r\n\r\n" not in data:
        more = c.recv(65536)
        if not more:
            return c.close()
        data += more
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    path = lines[0].split(" ")[1]
    names = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"
    if path == "/bye":
        c.sendall(switch + b"bye\n")
        return c.close()
    c.sendall(switch + json.dumps(names).encode() + b"\n")
    while True:
        c.sendall(rest.upper())
        rest = c.recv(65536)
        if not rest:
            return c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(16)
while True:
    threading.Thread(target=handle, args=(s.accept()[0],), daemon=True).start()
'''


@pytest.fixture
def sandbox(state_dir):
    with host_sandbox_serving(state_dir, SERVER) as served:
        yield served


def open_tunnel(d, sandbox_id: str, path: str, early: bytes = b"") -> tuple[socket.socket, bytes]:
    """Sends an upgrade request (and `early` right behind it); returns the socket and the
    bytes that came after the 101's header."""
    url = urlparse(d.url)
    sock = socket.create_connection((url.hostname, url.port), timeout=30)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
                 "E2b-Sandbox-Port: 8000\r\nX-Api-Key: not-for-the-sandbox\r\n"
                 "Connection: keep-alive, Upgrade\r\nUpgrade: echo\r\n\r\n".encode() + early)
    got = b""
    while b"\r\n\r\n" not in got:
        more = sock.recv(65536)
        assert more, f"connection closed before the response ended: {got!r}"
        got += more
    head, rest = got.split(b"\r\n\r\n", 1)
    status_line, *fields = head.decode().split("\r\n")
    assert status_line.startswith("HTTP/1.1 101"), head
    names = {f.split(":", 1)[0].lower(): f.split(":", 1)[1].strip() for f in fields}
    assert names["upgrade"] == "echo" and names["connection"].lower() == "upgrade"
    return sock, rest


def read_until(sock: socket.socket, have: bytes, size: int) -> bytes:
    while len(have) < size:
        more = sock.recv(1 << 20)
        if not more:
            break
        have += more
    return have


def read_past(sock: socket.socket, have: bytes, marker: bytes) -> bytes:
    while marker not in have:
        more = sock.recv(65536)
        assert more, f"connection closed before {marker!r} came: {have!r}"
        have += more
    return have


def test_bytes_flow_both_ways_without_the_callers_credentials(sandbox):
    d, sandbox_id = sandbox
    sock, rest = open_tunnel(d, sandbox_id, "/echo", early=b"sent before the 101 came")
    seen, line = read_past(sock, rest, b"\n").split(b"\n", 1)
    names = json.loads(seen)
    assert names["upgrade"] == "echo" and names["connection"] == "Upgrade"
    assert not {"x-api-key", "e2b-sandbox-id", "e2b-sandbox-port"} & set(names), names
    expected = b"SENT BEFORE THE 101 CAME"
    assert read_until(sock, line, len(expected)) == expected

    # A MiB each way at once: nothing lost, reordered or stuck while both sides send.
    payload = os.urandom(1 << 19).hex().encode()
    sender = threading.Thread(target=sock.sendall, args=(payload,))
    sender.start()
    echoed = read_until(sock, b"", len(payload))
    sender.join()
    assert echoed == payload.upper()

    sock.shutdown(socket.SHUT_WR)  # the client is done: the server closes, so does the tunnel
    assert read_until(sock, b"", 1) == b""
    sock.close()
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204
    assert d.proc.poll() is None, "the daemon died"


def test_the_servers_close_ends_the_tunnel(sandbox):
    d, sandbox_id = sandbox
    sock, rest = open_tunnel(d, sandbox_id, "/bye")
    assert read_until(sock, rest, 100) == b"bye\n"  # and then the end of the connection
    sock.close()


def test_a_switch_nobody_asked_for_is_refused(sandbox):
    d, sandbox_id = sandbox
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "8000"}
    reply = httpx.get(d.url + "/bye", headers=headers, timeout=30)
    assert reply.status_code == 502 and "can pass on" in reply.json()["message"]
    assert d.proc.poll() is None, "the daemon died"


def test_many_tunnels_left_open_by_clients_that_vanish(sandbox):
    d, sandbox_id = sandbox
    socks = [open_tunnel(d, sandbox_id, "/echo")[0] for _ in range(20)]
    for sock in socks:
        sock.close()
    # The daemon still serves, and a new tunnel works.
    # The echo may have come with the 101 already: what came after its header counts.
    sock, rest = open_tunnel(d, sandbox_id, "/echo", early=b"again")
    assert read_past(sock, rest, b"AGAIN").endswith(b"AGAIN")
    sock.close()
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204
    assert d.proc.poll() is None, "the daemon died"
