"""Review: a protocol-switch tunnel must end as a whole when either side ends. A server in
the sandbox that stops reading, takes a few MiB from the client and then closes its own
side leaves the proxy's write to it blocked for ever (the co_spawned pump's end only closed
the client's side): the daemon then keeps both descriptors and the connection's slot for as
long as the sandbox likes."""
from __future__ import annotations

import os
import socket
import threading
import time
from urllib.parse import urlparse

import httpx
import pytest
from helpers import host_sandbox_serving, wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

# After its 101 the server reads nothing; once the client has filled every buffer on the way
# it closes its sending side (the client sees the end) and keeps the socket, still unread.
SERVER = r'''
import socket, threading, time
def handle(c):
    data = b""
    while b"\r\n\r\n" not in data:
        more = c.recv(65536)
        if not more:
            return c.close()
        data += more
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
    time.sleep(3)
    c.shutdown(socket.SHUT_WR)
    time.sleep(3600)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(16)
while True:
    threading.Thread(target=handle, args=(s.accept()[0],), daemon=True).start()
'''


def socket_fds(pid: int) -> int:
    fds = 0
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds += os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:")
        except OSError:
            pass
    return fds


def settled_socket_fds(pid: int) -> int | None:
    """The daemon's socket count once it holds still for a moment."""
    before = socket_fds(pid)
    time.sleep(0.2)
    return before if before and socket_fds(pid) == before else None


@pytest.fixture
def sandbox(state_dir):
    with host_sandbox_serving(state_dir, SERVER) as served:
        yield served


def test_the_servers_close_ends_both_sides_even_while_it_does_not_read(sandbox):
    d, sandbox_id = sandbox
    url = urlparse(d.url)
    # Every probe connection above is closed by now: what the daemon holds without a tunnel.
    baseline = wait_until(lambda: settled_socket_fds(d.proc.pid), what="the daemon's sockets")
    sock = socket.create_connection((url.hostname, url.port), timeout=30)
    sock.sendall(f"GET /stall HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
                 "E2b-Sandbox-Port: 8000\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
                 .encode())
    got = b""
    while b"\r\n\r\n" not in got:
        more = sock.recv(65536)
        assert more, got
        got += more
    assert got.startswith(b"HTTP/1.1 101"), got

    def flood() -> None:
        sock.settimeout(2)
        try:
            while True:
                sock.sendall(b"x" * (1 << 20))
        except OSError:
            pass  # every buffer on the way is full (or the tunnel ended)

    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    sender.join(30)
    sock.settimeout(30)
    # The server's FIN reaches the client: the tunnel's client side ended.
    while True:
        try:
            if sock.recv(65536) == b"":
                break
        except ConnectionResetError:
            break
    sock.close()
    # Both sides ended: the daemon holds no socket of the tunnel any more.
    wait_until(lambda: socket_fds(d.proc.pid) <= baseline, timeout=20,
               what=f"the daemon to drop the tunnel's sockets (baseline {baseline})")
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204
    assert d.proc.poll() is None, "the daemon died"
