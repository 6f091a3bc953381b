"""The daemon's front door under a connection flood (issue 31, item 7): anyone who can connect
used to lock every key out with a few thousand partial request heads, which counted as busy and
were never closed. Now a request head is due within the header timeout, partial heads (then
idle connections) give way first when the daemon is at its limit, one client address holds at
most a share of the connections, and requests without a credential cannot take the last ones.
After each attack the same daemon process serves a valid key.

No template build: these run their own daemon with a low --max-connections, and the attackers
connect from other loopback addresses (127.0.0.2 and up) than the valid client (127.0.0.1)."""
from __future__ import annotations

import os
import resource
import select
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx
import pytest
from harness import Daemon, start_daemon, stop_daemon
from helpers import host_sandbox_serving, wait_until

pytestmark = pytest.mark.offline

MAX_CONNECTIONS = 64
PER_ADDRESS = MAX_CONNECTIONS // 4  # the documented default share of one address
PARTIAL_HEAD = b"GET /v2/sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """No test here needs a built template: skip the session's template build."""


def address(d: Daemon) -> tuple[str, int]:
    url = urlparse(d.url)
    return url.hostname, url.port


def connect_from(d: Daemon, source: str, first: bytes = b"") -> socket.socket:
    """A connection from `source`. A handshake that does not complete is tried again from
    another port: the kernel completes handshakes whether or not the daemon accepts (its
    backlog is 4096), but a networked daemon's nftables input rule on this host drops every
    packet to its DNS or proxy port, which may be the port picked here."""
    for attempt in range(3):
        try:
            sock = socket.create_connection(address(d), timeout=3, source_address=(source, 0))
            break
        except TimeoutError:
            if attempt == 2:
                raise
    sock.settimeout(10)
    if first:
        sock.sendall(first)
    return sock


def open_from(d: Daemon, source: str, count: int, first: bytes = b"") -> list[socket.socket]:
    return [connect_from(d, source, first) for _ in range(count)]


def closed_by_daemon(sock: socket.socket) -> bool:
    """The daemon closed (or reset) this connection: it reads as ended, not as quiet."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(65536, socket.MSG_PEEK) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def answered(sock: socket.socket) -> bool:
    """The daemon sent something on this connection (or closed it)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def still_open(socks: list[socket.socket]) -> int:
    return sum(1 for sock in socks if not closed_by_daemon(sock))


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def key_is_served(d: Daemon) -> int | str:
    """The status a valid key's request gets (from 127.0.0.1), or why it got none."""
    try:
        with d.api() as api:
            return api.get("/v2/sandboxes", timeout=30).status_code
    except httpx.HTTPError as e:
        return f"{type(e).__name__}: {e}"


def assert_same_daemon(d: Daemon, pid: int) -> None:
    assert d.proc.poll() is None, "the daemon died"
    assert d.proc.pid == pid and os.path.exists(f"/proc/{pid}")
    assert (got := key_is_served(d)) == 200, got


@pytest.fixture
def capped_daemon(state_dir) -> Iterator[Daemon]:
    """64 connections; a head timeout longer than any attack here, so that only the limits
    (not the timeout) close the attackers' connections."""
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", "--max-connections", str(MAX_CONNECTIONS)),
                     env={"ABX_HTTP_HEADER_TIMEOUT_S": "120"})
    yield d
    stop_daemon(d)


def test_a_slowloris_over_the_connection_limit_does_not_lock_a_key_out(capped_daemon):
    d = capped_daemon
    pid = d.proc.pid
    # Eight addresses, each within its own share, together three times the limit (and past
    # the health-only overflow): every slot holds a partial head.
    attackers = [f"127.0.0.{n}" for n in range(2, 10)]
    held = []
    try:
        for source in attackers:
            held += open_from(d, source, 3 * MAX_CONNECTIONS // len(attackers), PARTIAL_HEAD)
        # The attackers' connections are all accepted once the daemon took the last of
        # them; a connection from one of them proves it.
        probe = connect_from(d, attackers[0], PARTIAL_HEAD)
        held.append(probe)
        time.sleep(1)
        got = key_is_served(d)
        assert got == 200, f"a partial-head flood locked a valid key out: {got}"
        assert d.proc.poll() is None
    finally:
        close_all(held)
    assert_same_daemon(d, pid)


def test_one_address_cannot_take_every_connection(capped_daemon):
    d = capped_daemon
    pid = d.proc.pid
    greedy = open_from(d, "127.0.0.2", MAX_CONNECTIONS, PARTIAL_HEAD)
    others = []
    try:
        # The address keeps its share: the daemon closes its own oldest connections.
        wait_until(lambda: still_open(greedy) <= PER_ADDRESS, timeout=30,
                   what=f"127.0.0.2 down to {PER_ADDRESS} connections "
                        f"(holds {still_open(greedy)})")
        # Everyone else still has the rest: none of theirs is closed to make room.
        others = open_from(d, "127.0.0.3", PER_ADDRESS) + open_from(d, "127.0.0.4", PER_ADDRESS)
        assert (got := key_is_served(d)) == 200, got
        assert still_open(others) == len(others), "another address lost connections"
        assert still_open(greedy) == PER_ADDRESS
    finally:
        close_all(greedy + others)
    assert_same_daemon(d, pid)


@pytest.fixture
def impatient_daemon(state_dir) -> Iterator[Daemon]:
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", "--header-timeout", "2"))
    yield d
    stop_daemon(d)


def read_until_closed(sock: socket.socket, bound: float = 60) -> bytes:
    """What the daemon sends until it closes the connection; fails after `bound` seconds."""
    received = b""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 1.0)
        if not readable:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the connection was still open after {bound} s; got {received!r}")


def test_a_partial_head_is_closed_after_the_header_timeout(impatient_daemon):
    d = impatient_daemon
    pid = d.proc.pid
    log = (d.data_dir / "daemon.log").read_text()
    assert "request heads due within 2 s" in log
    with connect_from(d, "127.0.0.2", PARTIAL_HEAD) as sock:
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    # A new connection's head is due within the timeout of its accept, however its
    # silence and its bytes are spread.
    with connect_from(d, "127.0.0.2") as sock:
        time.sleep(1)
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        answer = read_until_closed(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer
    assert_same_daemon(d, pid)


# A server in the sandbox that answers GET / at once and never answers GET /hold: requests
# to it without a credential (its port is public) hold the daemon's connections.
HOLDING_SERVER = r'''
import socket, threading
def handle(c):
    data = b""
    while b"\r\n\r\n" not in data:
        more = c.recv(65536)
        if not more:
            return c.close()
        data += more
    if data.startswith(b"GET /hold"):
        while c.recv(65536):
            pass
        return c.close()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(128)
while True:
    threading.Thread(target=handle, args=(s.accept()[0],), daemon=True).start()
'''

SMALL_LIMIT = 16  # a reserve of 2 (an eighth), 4 per address


@pytest.fixture
def holding_sandbox(state_dir):
    with host_sandbox_serving(state_dir, HOLDING_SERVER,
                              extra_args=("--max-connections", str(SMALL_LIMIT))) as served:
        yield served


OPEN_FILES = 256
FLOOD = 2 * OPEN_FILES  # more connections than the daemon has descriptors


@pytest.fixture
def fd_bound_daemon(state_dir) -> Iterator[Daemon]:
    """A connection limit above the descriptor limit: accept itself fails (EMFILE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FLOOD + 64:
        pytest.skip(f"this process may open only {hard} files; the flood needs {FLOOD}")
    if soft < FLOOD + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", "--max-connections", "100000"),
                     open_files=OPEN_FILES, env={"ABX_HTTP_HEADER_TIMEOUT_S": "120"})
    yield d
    stop_daemon(d)


def test_out_of_descriptors_a_new_connection_is_served_in_full(fd_bound_daemon):
    """Partial heads until accept fails for want of a descriptor: the daemon closes the
    oldest of them for each new connection, which then serves a key's request (not only
    /health), at the first attempt."""
    d = fd_bound_daemon
    pid = d.proc.pid
    held = []
    try:
        for _ in range(FLOOD):
            try:
                held.append(connect_from(d, "127.0.0.2", PARTIAL_HEAD))
            except OSError:
                break  # the listen backlog is full: that is saturated too
        assert len(held) > OPEN_FILES
        wait_until(lambda: "Too many open files" in (d.data_dir / "daemon.log").read_text(),
                   timeout=30, what="the daemon out of descriptors")
        got = key_is_served(d)
        assert got == 200, f"a new connection was not served while out of fds: {got}"
        assert httpx.get(f"{d.url}/health", timeout=15).status_code == 204
        assert d.proc.poll() is None
    finally:
        close_all(held)
    assert_same_daemon(d, pid)


def test_requests_without_a_credential_cannot_take_the_last_connections(holding_sandbox):
    d, sandbox_id = holding_sandbox
    pid = d.proc.pid
    hold = (f"GET /hold HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
            "E2b-Sandbox-Port: 8000\r\n\r\n").encode()
    held = []
    try:
        # Complete requests, each within its address's share, that never end: together as
        # many as the daemon holds.
        for n in range(2, 2 + SMALL_LIMIT // 4):
            held += open_from(d, f"127.0.0.{n}", 4, hold)
        # Those over what requests without a credential may hold are answered 503.
        wait_until(lambda: any(answered(sock) for sock in held), timeout=30,
                   what="the requests over the reserve answered")
        time.sleep(1)
        refused = [sock.recv(65536) for sock in held if answered(sock)]
        assert refused and all(answer.startswith(b"HTTP/1.1 503 ") for answer in refused), refused
        assert len(refused) < len(held)
        got = key_is_served(d)
        assert got == 200, f"requests without a credential locked a valid key out: {got}"
        assert d.proc.poll() is None
    finally:
        close_all(held)
    assert_same_daemon(d, pid)
