"""Creates succeed whatever fd numbers the daemon's own fds have reached. The fds init keeps
(its status pipe, its control socket) arrive with the daemon's numbers, which grow with its
sandboxes and connections; once one of them was 250, the number init claims for itself
(proto::kWritableLayerFd), the dup3 that claimed it closed that fd, and the create failed
with "init exited without a status report" or "connection refused" (seen in bursts from
about the 55th sandbox on). Here idle connections to the daemon move its lowest free fd to
just below 250, one step at a time, and a sandbox is created at each step."""
from __future__ import annotations

import os
import shutil
import socket
from urllib.parse import urlparse

import pytest
from harness import private_state_dir, start_daemon, stop_daemon
from helpers import wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

WRITABLE_LAYER_FD = 250  # proto::kWritableLayerFd


def lowest_free_fd(pid: int) -> int:
    used = {int(name) for name in os.listdir(f"/proc/{pid}/fd")}
    return next(n for n in range(len(used) + 1) if n not in used)


def idle_connection(address: tuple[str, int]) -> socket.socket:
    """A keep-alive connection the daemon has taken (one /health answered on it), which then
    holds one of its fds until closed."""
    s = socket.create_connection(address, timeout=10)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: daemon\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        assert chunk, "the daemon closed the connection"
        answer += chunk
    return s


def test_a_create_succeeds_whatever_fd_numbers_the_daemon_has_reached():
    state = private_state_dir("abx-fdnum-")
    (state / "config.json").write_text('{"network": {"enabled": false}}')
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--config", str(state / "config.json"), "--warm-pool", "0"))
    address = (urlparse(d.url).hostname, urlparse(d.url).port)
    idle: list[socket.socket] = []
    try:
        with d.api() as api:
            assert api.get("/health").status_code in (200, 204)  # its connection is open now
            tried = set()
            for offset in reversed(range(12)):  # from 239 up to 250
                target = WRITABLE_LAYER_FD - offset
                while lowest_free_fd(d.proc.pid) < target:
                    idle.append(idle_connection(address))
                if lowest_free_fd(d.proc.pid) != target:
                    continue  # a create's leftovers still closing moved it past
                tried.add(target)
                r = api.post("/sandboxes", json={"templateID": "host"})
                assert r.status_code == 201, f"with the lowest free fd at {target}: {r.text}"
                assert api.delete(f"/sandboxes/{r.json()['sandboxID']}").status_code == 204
                wait_until(lambda bound=target + 1: lowest_free_fd(d.proc.pid) <= bound,
                           what="the killed sandbox's fds to close")
            assert WRITABLE_LAYER_FD in tried or WRITABLE_LAYER_FD - 1 in tried, tried
    finally:
        for s in idle:
            s.close()
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)
