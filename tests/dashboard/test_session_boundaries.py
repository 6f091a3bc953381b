"""Where the dashboard's session must not reach (an attacker review's findings): a server in a
sandbox, reached through the port proxy, never receives the session cookie or the CSRF token;
another team's session does not spoil a signed URL; a session split over two Cookie lines
still counts; a download is never sniffed or run as a page."""
from __future__ import annotations

import base64
import hashlib
import json
import socket

import httpx
import pytest
from helpers import host_sandbox_serving

pytestmark = pytest.mark.offline  # the `host` template needs no build

# Answers every request with its header lines, as JSON.
ECHO = r'''
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Echo(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps([[k.lower(), v] for k, v in self.headers.items()]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("0.0.0.0", 8000), Echo).serve_forever()
'''


@pytest.fixture
def serving(state_dir):
    with host_sandbox_serving(state_dir, ECHO) as served:
        yield served


def log_in(url: str, key: str) -> tuple[str, str]:
    """(session cookie value, CSRF token)."""
    r = httpx.post(url + "/dashboard/login", json={"apiKey": key}, timeout=10)
    assert r.status_code == 200, r.text
    session = r.cookies["abx_session"]
    csrf = httpx.get(url + "/dashboard/session", cookies={"abx_session": session},
                     timeout=10).json()["csrf"]
    return session, csrf


def test_the_sandbox_server_never_sees_the_session(serving):
    d, sandbox_id = serving
    session, csrf = log_in(d.url, d.api_key)
    by_headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "8000"}
    port = d.url.rsplit(":", 1)[1]
    by_host = {"Host": f"8000-{sandbox_id}.localhost:{port}"}
    for routing in (by_headers, by_host):
        r = httpx.get(d.url + "/anything", timeout=10, headers={
            **routing, "Cookie": f"theme=dark; abx_session={session}; lang=en",
            "X-ABX-CSRF": csrf})
        assert r.status_code == 200, r.text
        seen = dict(json.loads(r.text))
        assert session not in r.text and csrf not in r.text, seen
        assert seen.get("cookie") == "theme=dark; lang=en"  # the app's own cookies go on
        assert "x-abx-csrf" not in seen


def test_a_session_split_over_two_cookie_lines_counts(serving):
    d, _ = serving
    session, _ = log_in(d.url, d.api_key)
    raw = (f"GET /dashboard/session HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: theme=dark\r\n"
           f"Cookie: abx_session={session}\r\nConnection: close\r\n\r\n").encode()
    host, port = d.url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(raw)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def test_another_teams_session_does_not_spoil_a_signed_url(serving):
    d, _ = serving
    with d.api() as api:
        made = api.post("/sandboxes", json={"templateID": "host", "secure": True}).json()
        other = api.post("/abx/v1/keys", json={"team": "elsewhere", "name": "other"}).json()
    sandbox_id, token = made["sandboxID"], made["envdAccessToken"]
    envd = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
    page = b"<script>alert(1)</script>"
    r = httpx.post(d.url + "/files", params={"path": "/tmp/a.html", "username": "root"},
                   files={"file": ("a.html", page)}, headers=envd, timeout=10)
    assert r.status_code == 200, r.text
    digest = hashlib.sha256(f"/tmp/a.html:read:root:{token}".encode()).digest()
    signature = "v1_" + base64.b64encode(digest).decode().rstrip("=")
    signed = {"path": "/tmp/a.html", "username": "root", "signature": signature}
    routing = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983"}
    foreign_session, _ = log_in(d.url, other["key"])
    for cookies in ({}, {"abx_session": foreign_session}):
        r = httpx.get(d.url + "/files", params=signed, headers=routing, cookies=cookies,
                      timeout=10)
        assert r.status_code == 200 and r.content == page, (cookies, r.status_code, r.text)
        # The sandbox's bytes on the daemon's origin: never sniffed, never run as a page.
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-security-policy"] == "sandbox"
    # Without the signature, the other team's session still finds nothing.
    r = httpx.get(f"{d.url}/files?path=/tmp/a.html&username=root", headers=routing,
                  cookies={"abx_session": foreign_session}, timeout=10)
    assert r.status_code == 502
