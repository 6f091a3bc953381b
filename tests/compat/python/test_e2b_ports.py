"""sandbox.get_host(port): servers inside the sandbox reached through the daemon."""
from __future__ import annotations

from urllib.parse import urlparse

import httpx
import pytest

from helpers import wait_until


def wait_for_server(url, headers):
    def answered():
        reply = httpx.get(url, headers=headers)
        return reply if reply.status_code != 502 else None
    return wait_until(answered, what=f"a server behind {url}")


def test_get_host_header_and_host_routing(sandbox, daemon):
    """sandbox.get_host(8000): header routing and Host {port}-{id}.{domain} reach python3 -m http.server."""
    sandbox.files.write("/home/user/www/index.html", "hello from inside")
    sandbox.commands.run("cd /home/user/www && python3 -m http.server 8000", background=True)
    by_header = {"E2b-Sandbox-Id": sandbox.sandbox_id, "E2b-Sandbox-Port": "8000"}
    reply = wait_for_server(f"{daemon.url}/index.html", by_header)
    assert reply.status_code == 200 and reply.text == "hello from inside"
    host = sandbox.get_host(8000)
    assert host == f"8000-{sandbox.sandbox_id}.localhost:{urlparse(daemon.url).port}"
    reply = httpx.get(f"{daemon.url}/index.html", headers={"Host": host})
    assert reply.status_code == 200 and reply.text == "hello from inside"


def test_closed_port_gives_502_json(sandbox, daemon):
    """sandbox.get_host(port) of a closed port: E2B's 502 JSON."""
    reply = httpx.get(daemon.url, headers={"Host": sandbox.get_host(8123)})
    assert reply.status_code == 502
    assert reply.json() == {"sandboxId": sandbox.sandbox_id, "message": "The sandbox is running but port is not open", "code": 502, "port": 8123}


@pytest.mark.offline
def test_unknown_sandbox_gives_502_json(daemon):
    """Requests for an unknown sandbox id: E2B's 502 JSON."""
    reply = httpx.get(f"{daemon.url}/health", headers={"E2b-Sandbox-Id": "inotasandbox0000000000"})
    assert reply.status_code == 502 and reply.json()["message"] == "The sandbox was not found"


def test_malformed_connect_request_is_invalid_argument(sandbox, daemon):
    """A malformed Connect frame or JSON body is invalid_argument, never a crash."""
    headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "Content-Type": "application/json",
               "X-Access-Token": sandbox._envd_access_token or ""}
    reply = httpx.post(f"{daemon.url}/filesystem.Filesystem/Stat", content=b"{not json", headers=headers)
    assert reply.status_code == 400 and reply.json()["code"] == "invalid_argument"
    headers["Content-Type"] = "application/connect+json"
    reply = httpx.post(f"{daemon.url}/process.Process/Start", content=b"\x00\x00\x00", headers=headers)
    assert b"invalid_argument" in reply.content
    assert sandbox.commands.run("echo alive").stdout == "alive\n"
