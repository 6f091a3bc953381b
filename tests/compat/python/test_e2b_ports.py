"""sandbox.get_host(port): servers inside the sandbox reached through the daemon."""
from __future__ import annotations

import subprocess
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


ECHO_HOST = """
import http.server, ssl, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("host=" + self.headers.get("Host", "")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
server = http.server.HTTPServer(("", int(sys.argv[1])), Echo)
if len(sys.argv) > 2:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


def test_mask_request_host_is_the_host_the_server_sees(daemon):
    """network.maskRequestHost: the server in the sandbox sees that Host, ${PORT} filled in."""
    from e2b import Sandbox, SandboxNetworkOpts

    sb = Sandbox.create(timeout=120,
                        network=SandboxNetworkOpts(mask_request_host="app.example.com:${PORT}"))
    try:
        sb.files.write("/home/user/echo.py", ECHO_HOST)
        sb.commands.run("python3 /home/user/echo.py 8081", background=True)
        reply = wait_for_server(daemon.url, {"Host": sb.get_host(8081)})
        assert (reply.status_code, reply.text) == (200, "host=app.example.com:8081")
    finally:
        sb.kill()


def test_https_ports_are_spoken_to_in_tls(daemon, tmp_path):
    """network.httpsPorts: the daemon speaks TLS to a server that only speaks TLS; other ports stay plain."""
    from e2b import Sandbox

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=sandbox", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    created = httpx.post(f"{daemon.url}/sandboxes", headers={"X-API-Key": daemon.api_key},
                         json={"templateID": "base", "timeout": 120,
                               "network": {"httpsPorts": [8443]}})
    assert created.status_code == 201, created.text
    sb = Sandbox.connect(created.json()["sandboxID"])
    try:
        for name in ("key.pem", "cert.pem"):
            sb.files.write(f"/home/user/{name}", (tmp_path / name).read_text())
        sb.files.write("/home/user/echo.py", ECHO_HOST)
        sb.commands.run("python3 /home/user/echo.py 8443 /home/user/cert.pem /home/user/key.pem",
                        background=True)
        sb.commands.run("python3 /home/user/echo.py 8444 /home/user/cert.pem /home/user/key.pem",
                        background=True)
        reply = wait_for_server(daemon.url, {"Host": sb.get_host(8443)})
        assert (reply.status_code, reply.text) == (200, f"host={sb.get_host(8443)}")
        # 8444 speaks TLS too but is not listed: the daemon's plain HTTP gets no answer
        reply = httpx.get(daemon.url, headers={"Host": sb.get_host(8444)})
        assert reply.status_code == 502
    finally:
        sb.kill()


def test_mask_request_host_refuses_what_is_not_a_host(daemon):
    """maskRequestHost with a space or control character: a 400 that names the field."""
    reply = httpx.post(f"{daemon.url}/sandboxes", headers={"X-API-Key": daemon.api_key},
                       json={"templateID": "base", "network": {"maskRequestHost": "a b\x00"}})
    assert reply.status_code == 400 and "network.maskRequestHost" in reply.json()["message"]
