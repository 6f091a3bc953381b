"""A server in the sandbox answering with interim 1xx responses: the client gets the final
response (never a "100" that would desynchronise its connection), endless 1xx answers end
in a 502, and the daemon keeps serving."""
from __future__ import annotations

import httpx
import pytest
from helpers import host_sandbox_serving, wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

SERVER = r'''
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000)); s.listen(16)
while True:
    c, _ = s.accept()
    head = c.recv(65536).split(b" ")[1]
    if head == b"/endless":
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 64)
    else:
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                  b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
    c.close()
'''


@pytest.fixture
def sandbox(state_dir):
    with host_sandbox_serving(state_dir, SERVER) as served:
        yield served


def test_interim_responses_are_skipped_and_endless_ones_refused(sandbox):
    d, sandbox_id = sandbox
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "8000"}
    reply = wait_until(lambda: (r := httpx.get(d.url + "/", headers=headers, timeout=30))
                       .status_code != 502 and r, what="the server in the sandbox")
    assert (reply.status_code, reply.text) == (200, "final")
    endless = httpx.get(d.url + "/endless", headers=headers, timeout=30)
    assert endless.status_code == 502 and "can pass on" in endless.json()["message"]
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204
    assert d.proc.poll() is None, "the daemon died"
