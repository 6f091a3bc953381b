"""The daemon holds under load (issue 12, attack 8): a peer that opens connections until the
daemon runs out of descriptors does not make it spin (its log stays small), `/health` still
answers meanwhile, and the daemon serves normally once the peer lets go; slow clients
(silent, a header or a body a byte at a time, a download no longer read) are disconnected.

No sandbox is needed: these run their own daemon with a low open-files limit."""
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
from helpers import abx, wait_until

pytestmark = pytest.mark.offline

OPEN_FILES = 256
PEER_CONNECTIONS = 600  # more than the daemon has descriptors
# Spinning wrote 109 MB in 5 s; a few throttled lines a second is a few KB.
MAX_LOG_GROWTH = 1 << 20
SHORT_TIMEOUTS = {"ABX_HTTP_HEADER_TIMEOUT_S": "2", "ABX_HTTP_BODY_TIMEOUT_S": "2",
                  "ABX_HTTP_SEND_TIMEOUT_S": "2"}
DOWNLOAD_BYTES = 64 << 20  # far more than the socket buffers of both ends hold


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """No test here creates a sandbox: skip the session's template build."""


@pytest.fixture(autouse=True)
def enough_descriptors_for_the_peer() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < PEER_CONNECTIONS + 64:
        pytest.skip(f"this process may open only {hard} files; the peer needs {PEER_CONNECTIONS}")
    if soft < PEER_CONNECTIONS + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def address(d: Daemon) -> tuple[str, int]:
    url = urlparse(d.url)
    return url.hostname, url.port


def health_answers(d: Daemon) -> bool:
    try:
        return httpx.get(f"{d.url}/health", timeout=10).status_code == 204
    except httpx.HTTPError:
        return False


def lists_sandboxes(d: Daemon) -> bool:
    try:
        with d.api() as api:
            return api.get("/v2/sandboxes").status_code == 200
    except httpx.HTTPError:
        return False


def log_size(d: Daemon) -> int:
    return (d.data_dir / "daemon.log").stat().st_size


def open_idle_connections(d: Daemon, count: int) -> list[socket.socket]:
    """Connections that never send a byte; the kernel completes them whether or not the
    daemon accepts them."""
    held = []
    for _ in range(count):
        try:
            held.append(socket.create_connection(address(d), timeout=10))
        except OSError:
            break  # the listen backlog is full: that is saturated too
    return held


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


def assert_holds_under_a_flood(d: Daemon) -> None:
    before = log_size(d)
    held = open_idle_connections(d, PEER_CONNECTIONS)
    try:
        assert len(held) > OPEN_FILES, "could not open more connections than the daemon has fds"
        # While every connection is held: /health answers (a new connection takes the
        # place of the one idle longest, or the spare descriptor).
        wait_until(lambda: health_answers(d), timeout=120, what="/health while saturated")
        time.sleep(3)  # a spinning daemon writes megabytes meanwhile
        growth = log_size(d) - before
        assert growth < MAX_LOG_GROWTH, f"the daemon's log grew {growth} bytes while saturated"
        assert d.proc.poll() is None, "the daemon died"
    finally:
        close_all(held)
    wait_until(lambda: lists_sandboxes(d), timeout=60, what="the API after the flood")
    assert health_answers(d)
    assert d.proc.poll() is None, "the daemon died"


@pytest.fixture
def limited_daemon(state_dir) -> Iterator[Daemon]:
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"),
                     open_files=OPEN_FILES)
    yield d
    stop_daemon(d)


@pytest.fixture
def fd_bound_daemon(state_dir) -> Iterator[Daemon]:
    """A connection limit above the descriptor limit: accept itself fails (EMFILE)."""
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", "--max-connections", "100000"),
                     open_files=OPEN_FILES)
    yield d
    stop_daemon(d)


def test_the_daemon_says_what_its_open_files_limit_is(limited_daemon):
    log = (limited_daemon.data_dir / "daemon.log").read_text()
    assert f"open files limit: {OPEN_FILES}" in log
    assert "connections at once" in log


def test_a_flood_of_idle_connections_hits_the_connection_limit_not_the_fd_limit(limited_daemon):
    assert_holds_under_a_flood(limited_daemon)


def test_running_out_of_descriptors_does_not_spin_and_health_answers(fd_bound_daemon):
    assert_holds_under_a_flood(fd_bound_daemon)
    log = (fd_bound_daemon.data_dir / "daemon.log").read_text()
    assert "Too many open files" in log, "the flood never exhausted the daemon's descriptors"


@pytest.fixture
def impatient_daemon(state_dir) -> Iterator[Daemon]:
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"),
                     env=SHORT_TIMEOUTS)
    yield d
    stop_daemon(d)


def trickle_until_closed(d: Daemon, start: bytes, trickle: bytes, bound: float = 90) -> bytes:
    """Sends `start`, then one byte of `trickle` a second, until the daemon closes the
    connection; returns what it answered. Fails if it is still open after `bound` s."""
    with socket.create_connection(address(d), timeout=10) as sock:
        sock.sendall(start)
        received = b""
        deadline = time.monotonic() + bound
        position = 0
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 1.0)
            try:
                if readable:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return received
                    received += chunk
                    continue
                if position < len(trickle):
                    sock.send(trickle[position:position + 1])
                    position += 1
            except (ConnectionResetError, BrokenPipeError):
                return received
        raise AssertionError(f"the connection was still open after {bound} s; got {received!r}")


def test_a_silent_connection_is_closed(impatient_daemon):
    trickle_until_closed(impatient_daemon, b"", b"")
    assert health_answers(impatient_daemon)
    assert impatient_daemon.proc.poll() is None


def test_a_header_sent_a_byte_at_a_time_is_refused(impatient_daemon):
    answer = trickle_until_closed(impatient_daemon, b"G",
                                  b"ET /health HTTP/1.1\r\nX-Slow: " + b"a" * 500)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert health_answers(impatient_daemon)
    assert impatient_daemon.proc.poll() is None


def test_a_body_sent_a_byte_at_a_time_is_refused(impatient_daemon):
    d = impatient_daemon
    head = (f"POST /sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {d.api_key}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode()
    answer = trickle_until_closed(d, head, b'{"templateID": "' + b"x" * 5000)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert health_answers(d)
    assert lists_sandboxes(d)
    assert d.proc.poll() is None


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_requests_leave_no_descriptor_behind(limited_daemon, tmp_path):
    """A sandbox holds a few daemon descriptors for its life; requests hold none after they
    end, or a busy daemon would run out of them however high its limit."""
    d = limited_daemon
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host"})
        assert r.status_code == 201, r.text
    sandbox_id = r.json()["sandboxID"]
    local = tmp_path / "data.txt"
    local.write_text("some data\n")

    def one_round() -> None:
        assert health_answers(d) and lists_sandboxes(d)
        assert abx(d, "exec", sandbox_id, "--", "echo hi").stdout == "hi\n"
        assert abx(d, "upload", sandbox_id, str(local), "/tmp/data.txt").returncode == 0
        back = tmp_path / "back.txt"
        assert abx(d, "download", sandbox_id, "/tmp/data.txt", str(back)).returncode == 0
        assert back.read_text() == "some data\n"

    one_round()  # lazily opened things (the db, the sandbox's channels) are open now
    baseline = open_descriptors(d.proc.pid)
    for _ in range(10):
        one_round()
    wait_until(lambda: open_descriptors(d.proc.pid) <= baseline, timeout=30,
               what=f"the daemon's descriptors back to {baseline} "
                    f"(now {open_descriptors(d.proc.pid)})")
    assert abx(d, "kill", sandbox_id, "--yes").returncode == 0
    assert d.proc.poll() is None


def make_big_file(d: Daemon) -> str:
    """A sandbox holding /tmp/big, DOWNLOAD_BYTES long."""
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host"})
        assert r.status_code == 201, r.text
    sandbox_id = r.json()["sandboxID"]
    made = abx(d, "exec", sandbox_id, "--", f"head -c {DOWNLOAD_BYTES} /dev/zero > /tmp/big")
    assert made.returncode == 0, made.stderr
    return sandbox_id


def start_download(d: Daemon, sandbox_id: str) -> socket.socket:
    """A connection asking for /tmp/big with a small receive window; the 200 is read."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.settimeout(30)
    sock.connect(address(d))
    sock.sendall((f"GET /files?path=/tmp/big&username=user HTTP/1.1\r\n"
                  f"Host: 127.0.0.1\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
                  f"E2b-Sandbox-Port: 49983\r\nX-API-KEY: {d.api_key}\r\n\r\n").encode())
    first = sock.recv(4096)
    assert first.startswith(b"HTTP/1.1 200 "), first
    return sock


def test_a_download_the_client_stops_reading_is_cut_off(impatient_daemon):
    """A client that asks for a large file and stops reading must not hold the daemon's
    connection, descriptors and buffers: once the client has taken nothing for the send
    timeout, the daemon resets the connection."""
    d = impatient_daemon
    sandbox_id = make_big_file(d)
    assert health_answers(d)
    baseline = open_descriptors(d.proc.pid)
    with start_download(d, sandbox_id) as sock:
        # The client reads nothing more; the daemon lets go of the connection on its own.
        wait_until(lambda: open_descriptors(d.proc.pid) <= baseline, timeout=60,
                   what=f"the daemon's descriptors back to {baseline} "
                        f"(now {open_descriptors(d.proc.pid)})")
        assert health_answers(d)
        received = 0
        try:
            while chunk := sock.recv(1 << 20):
                received += len(chunk)
        except ConnectionResetError:
            pass
        assert received < DOWNLOAD_BYTES, "the whole file came: the client was not cut off"
    assert abx(d, "kill", sandbox_id, "--yes").returncode == 0
    assert d.proc.poll() is None


@pytest.mark.slow  # reads for 15 s on purpose
def test_a_download_read_slowly_is_not_cut_off(impatient_daemon):
    """A client that keeps reading, however slowly, keeps its download: the send timeout
    counts from the last byte the client took, not from the start of a write."""
    d = impatient_daemon
    sandbox_id = make_big_file(d)
    with start_download(d, sandbox_id) as sock:
        received = 0
        # 16 KiB every half second: each 256 KiB piece the daemon writes takes ~8 s, four
        # times the send timeout, to be taken.
        for _ in range(30):
            chunk = sock.recv(16384)
            assert chunk, f"the daemon closed a download that was being read ({received} bytes)"
            received += len(chunk)
            time.sleep(0.5)
    assert health_answers(d)
    assert abx(d, "kill", sandbox_id, "--yes").returncode == 0
    assert d.proc.poll() is None
