"""Tenancy, tried as an attacker with another team's key, no credential or a revoked key:
each route that names a foreign sandbox answers as for an unknown one, and the victim is
alive and unchanged afterwards. Quotas refuse with 429 and leave nothing half-made."""
from __future__ import annotations

import json
import struct
import subprocess
import time

import httpx
import pytest

from harness import ABX_BIN, start_daemon, stop_daemon
from helpers import wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

SERVER = """
import http.server
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = "\\n".join(f"{k.lower()}: {v}" for k, v in self.headers.items()).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 8000), Echo).serve_forever()
"""


def make_key(admin_api: httpx.Client, team: str, admin: bool = False) -> dict:
    r = admin_api.post("/abx/v1/keys", json={"team": team, "admin": admin, "name": f"{team} test"})
    assert r.status_code == 201, r.text
    return r.json()


def client(d, key: str | None) -> httpx.Client:
    headers = {"X-API-KEY": key} if key else {}
    return httpx.Client(base_url=d.url, headers=headers, timeout=30)


def plane(sandbox_id: str, port: int = 49983, **headers) -> dict[str, str]:
    return {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port), **headers}


def connect_envelope(message: dict) -> bytes:
    payload = json.dumps(message).encode()
    return struct.pack(">BI", 0, len(payload)) + payload


def abx(d, key: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**d.env(), "ABX_SANDBOX_API_KEY": key}
    return subprocess.run([str(ABX_BIN), *args], env=env, capture_output=True, text=True,
                          timeout=120, check=check)


@pytest.fixture
def teams(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    admin = client(d, d.api_key)
    keys = {team: make_key(admin, team)["key"] for team in ("alpha", "beta")}
    with client(d, keys["alpha"]) as alpha:
        r = alpha.post("/sandboxes", json={"templateID": "host", "timeout": 600})
        assert r.status_code == 201, r.text
        victim = r.json()
    yield d, keys, victim
    admin.close()
    stop_daemon(d, teams=tuple(keys))  # every team's sandboxes, those of revoked keys too


def assert_victim_unchanged(d, keys, victim):
    with client(d, keys["alpha"]) as alpha:
        r = alpha.get(f"/sandboxes/{victim['sandboxID']}")
        assert r.status_code == 200, "the victim sandbox is gone"
        token = {"X-Access-Token": victim["envdAccessToken"]}
        stat = httpx.post(d.url + "/filesystem.Filesystem/Stat", json={"path": "/tmp/planted"},
                          headers=plane(victim["sandboxID"], **token), timeout=30)
        assert stat.status_code == 404, "an attacker wrote into the victim"
    assert httpx.get(d.url + "/health", timeout=10).status_code in (200, 204)
    assert d.proc.poll() is None, "the daemon died"


def test_keys_are_managed_by_admins_and_shown_once(teams):
    d, keys, _ = teams
    with client(d, keys["beta"]) as beta:
        assert beta.get("/abx/v1/keys").status_code == 403
        assert beta.post("/abx/v1/keys", json={"team": "beta", "admin": True}).status_code == 403
    with client(d, d.api_key) as admin:
        listed = admin.get("/abx/v1/keys").json()["keys"]
    assert {k["team"] for k in listed} == {"default", "alpha", "beta"}
    assert all("key" not in k for k in listed), "a listing shows a key"
    db = (d.data_dir / "abx.db").read_bytes()
    assert keys["alpha"].encode() not in db and d.api_key.encode() not in db, "a key is stored"
    made = abx(d, d.api_key, "keys", "create", "--team", "gamma", "--name", "cli")
    new_key = made.stdout.strip()
    assert new_key.startswith("e2b_") and "gamma" in made.stderr
    listed_text = abx(d, d.api_key, "keys", "list").stdout
    assert "gamma" in listed_text and new_key not in listed_text
    assert "admin" in abx(d, new_key, "keys", "list", check=False).stderr.lower()


def test_a_revoked_key_is_refused_at_once(teams):
    d, keys, victim = teams
    with client(d, d.api_key) as admin:
        key_id = next(k["id"] for k in admin.get("/abx/v1/keys").json()["keys"]
                      if k["team"] == "alpha")
    abx(d, d.api_key, "keys", "revoke", key_id)
    with client(d, keys["alpha"]) as alpha:
        assert alpha.get("/v2/sandboxes").status_code == 401
        r = alpha.post("/filesystem.Filesystem/Stat", json={"path": "/"},
                       headers=plane(victim["sandboxID"]))
        assert r.status_code == 401
    # The sandbox's own token still works: revoking a key kills nothing.
    r = httpx.post(d.url + "/filesystem.Filesystem/Stat", json={"path": "/"},
                   headers=plane(victim["sandboxID"], **{"X-Access-Token": victim["envdAccessToken"]}))
    assert r.status_code == 200


def test_another_teams_key_cannot_see_or_touch_the_sandbox(teams):
    d, keys, victim = teams
    vid = victim["sandboxID"]
    with client(d, keys["alpha"]) as alpha:
        end_before = alpha.get(f"/sandboxes/{vid}").json()["endAt"]
    with client(d, keys["beta"]) as beta:
        assert vid not in [s["sandboxID"] for s in beta.get("/sandboxes").json()]
        assert vid not in [s["sandboxID"] for s in beta.get("/v2/sandboxes").json()]
        unknown = beta.get("/sandboxes/nosuchsandbox0000000")
        for method, path, body in [
            ("GET", f"/sandboxes/{vid}", None),
            ("GET", f"/sandboxes/{vid}/metrics", None),
            ("POST", f"/sandboxes/{vid}/timeout", {"timeout": 1}),
            ("POST", f"/sandboxes/{vid}/connect", {"timeout": 1}),
            ("POST", f"/v2/sandboxes/{vid}/connect", {"timeout": 1}),
            ("DELETE", f"/sandboxes/{vid}", None),
        ]:
            r = beta.request(method, path, json=body)
            assert r.status_code == 404, f"{method} {path}: {r.status_code} {r.text}"
            assert "envdAccessToken" not in r.text
        assert unknown.status_code == 404
        assert beta.get("/sandboxes/metrics", params={"sandbox_ids": vid}).json() == {"sandboxes": {}}
    with client(d, keys["alpha"]) as alpha:
        assert alpha.get(f"/sandboxes/{vid}").json()["endAt"] == end_before, "timeout changed"
    assert_victim_unchanged(d, keys, victim)


SANDBOX_ROUTES = [
    (49983, "GET", "/envs", None),
    (49983, "GET", "/metrics", None),
    (49983, "GET", "/files?path=/etc/hostname", None),
    (49983, "POST", "/files?path=/tmp/planted", b"x"),
    (49983, "POST", "/filesystem.Filesystem/Stat", {"path": "/"}),
    (49983, "POST", "/filesystem.Filesystem/MakeDir", {"path": "/tmp/planted"}),
    (49983, "POST", "/filesystem.Filesystem/CreateWatcher", {"path": "/tmp"}),
    (49983, "POST", "/process.Process/List", {}),
    (49999, "POST", "/execute", {"code": "open('/tmp/planted','w')"}),
]


def send(d, sandbox_id, port, method, path, body, **headers):
    kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
    return httpx.request(method, d.url + path, headers=plane(sandbox_id, port, **headers),
                         timeout=30, **kwargs)


def test_sandbox_plane_needs_a_credential_of_the_sandbox(teams):
    d, keys, victim = teams
    vid = victim["sandboxID"]
    start = connect_envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "touch /tmp/planted"]}})
    routes = SANDBOX_ROUTES + [(49983, "POST", "/process.Process/Start", start)]
    unknown = send(d, "nosuchsandbox0000000", 49983, "GET", "/envs", None,
                   **{"X-API-KEY": keys["beta"]})
    for port, method, path, body in routes:
        anonymous = send(d, vid, port, method, path, body)
        assert anonymous.status_code == 401, f"{path} without a credential: {anonymous.status_code}"
        foreign = send(d, vid, port, method, path, body, **{"X-API-KEY": keys["beta"]})
        assert (foreign.status_code, foreign.json()) == (unknown.status_code, {
            **unknown.json(), "sandboxId": vid}), f"{path} with another team's key"
        wrong = send(d, vid, port, method, path, body, **{"X-Access-Token": "0" * 48})
        assert wrong.status_code == 401, f"{path} with a wrong token"
    assert_victim_unchanged(d, keys, victim)
    # Its own team's key is a credential of the sandbox, token or not.
    own = send(d, vid, 49983, "POST", "/filesystem.Filesystem/Stat", {"path": "/"},
               **{"X-API-KEY": keys["alpha"]})
    assert own.status_code == 200, own.text


def test_creates_are_secure_unless_asked_and_then_need_the_team_key(teams):
    d, keys, _ = teams
    with client(d, keys["alpha"]) as alpha:
        secure = alpha.post("/sandboxes", json={"templateID": "host"}).json()
        assert secure.get("envdAccessToken"), "a v1 create without `secure` has no token"
        open_sb = alpha.post("/sandboxes", json={"templateID": "host", "secure": False}).json()
    assert "envdAccessToken" not in open_sb
    stat = {"path": "/"}
    assert send(d, open_sb["sandboxID"], 49983, "POST", "/filesystem.Filesystem/Stat",
                stat).status_code == 401
    assert send(d, open_sb["sandboxID"], 49983, "POST", "/filesystem.Filesystem/Stat", stat,
                **{"X-API-KEY": keys["alpha"]}).status_code == 200


def start_echo_server(d, key, sandbox_id):
    script = SERVER.replace('"', '\\"')
    abx(d, key, "exec", sandbox_id, "--", "sh", "-c",
        f'printf "%s" "{script}" > /tmp/echo.py; nohup python3 /tmp/echo.py >/dev/null 2>&1 &')


def test_ports_public_or_behind_the_traffic_token_and_credentials_stripped(teams):
    d, keys, victim = teams
    vid = victim["sandboxID"]
    start_echo_server(d, keys["alpha"], vid)
    sent = {"X-API-KEY": keys["alpha"], "X-Access-Token": victim["envdAccessToken"],
            "Authorization": "Bearer secret", "E2b-Debug": "1", "X-Kept": "yes"}
    reply = wait_until(lambda: (r := send(d, vid, 8000, "GET", "/", None, **sent)).status_code
                       == 200 and r, what="the echo server")
    seen = reply.text.lower()
    assert "x-kept: yes" in seen
    for name in ("x-api-key", "x-access-token", "authorization", "e2b-"):
        assert name not in seen, f"{name} reached the sandbox"
    assert send(d, vid, 8000, "GET", "/", None).status_code == 200, "public by default"
    with client(d, keys["alpha"]) as alpha:
        private = alpha.post("/sandboxes", json={"templateID": "host",
                                                 "network": {"allowPublicTraffic": False}}).json()
    traffic = private["trafficAccessToken"]
    assert traffic
    start_echo_server(d, keys["alpha"], private["sandboxID"])
    token = {"e2b-traffic-access-token": traffic}
    wait_until(lambda: send(d, private["sandboxID"], 8000, "GET", "/", None,
                            **token).status_code == 200, what="the private echo server")
    assert send(d, private["sandboxID"], 8000, "GET", "/", None).status_code == 401
    # The interpreter's /contexts is a port too (E2B's SDKs send no token there).
    assert send(d, private["sandboxID"], 49999, "GET", "/contexts", None).status_code == 401
    assert send(d, private["sandboxID"], 49999, "GET", "/contexts", None,
                **token).status_code != 401
    foreign = send(d, private["sandboxID"], 49999, "GET", "/contexts", None,
                   **{"X-API-KEY": keys["beta"]})
    assert foreign.status_code == 502, "another team's key reached /contexts"
    assert "traffic" not in send(d, private["sandboxID"], 8000, "GET", "/", None,
                                 **token).text.lower()


def test_mcp_sessions_answer_only_their_opener(teams):
    d, keys, _ = teams
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    with client(d, keys["alpha"]) as alpha:
        opened = alpha.post("/mcp", json=init)
        assert opened.status_code == 200, opened.text
        session = opened.headers["Mcp-Session-Id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with client(d, keys["beta"]) as beta:
        assert beta.post("/mcp", json=listing,
                         headers={"Mcp-Session-Id": session}).status_code == 404
        assert beta.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 404
    with client(d, keys["alpha"]) as alpha:
        assert alpha.post("/mcp", json=listing, headers={"Mcp-Session-Id": session}).status_code == 200
        assert alpha.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 200


def sandbox_dirs(d) -> set[str]:
    return {p.name for p in (d.data_dir / "sandboxes").iterdir()}


def test_quotas_refuse_with_429_and_leave_nothing_behind(teams):
    d, keys, _ = teams
    with client(d, d.api_key) as admin:
        r = admin.put("/abx/v1/teams/beta/quota", json={"maxSandboxes": 1, "maxTimeoutSec": 600})
        assert r.status_code == 200 and r.json()["maxSandboxes"] == 1
    with client(d, keys["beta"]) as beta:
        assert beta.put("/abx/v1/teams/beta/quota", json={"maxSandboxes": 9}).status_code == 403
        assert beta.get("/abx/v1/teams/alpha/quota").status_code == 404
        assert beta.get("/abx/v1/teams/beta/quota").json()["maxSandboxes"] == 1
        first = beta.post("/sandboxes", json={"templateID": "host", "timeout": 60})
        assert first.status_code == 201
        before = sandbox_dirs(d)
        second = beta.post("/sandboxes", json={"templateID": "host", "timeout": 60})
        assert second.status_code == 429
        message = second.json()["message"]
        assert "beta" in message and "limit 1" in message and "--sandboxes" in message
        assert sandbox_dirs(d) == before, "a refused create left a sandbox dir"
        assert len(beta.get("/v2/sandboxes").json()) == 1
        long = beta.post(f"/sandboxes/{first.json()['sandboxID']}/timeout", json={"timeout": 3600})
        assert long.status_code == 429 and "--max-timeout" in long.json()["message"]
        assert beta.post("/sandboxes", json={"templateID": "host", "memoryMB": 65536,
                                             "timeout": 60}).status_code in (400, 429)
    cli = abx(d, keys["beta"], "create", "--template", "host", check=False)
    assert cli.returncode != 0 and "--sandboxes" in cli.stderr and len(cli.stderr.strip().splitlines()) == 1
    with client(d, d.api_key) as admin:
        admin.put("/abx/v1/teams/beta/quota", json={"maxSandboxes": 0, "createsPerMinute": 1})
    with client(d, keys["beta"]) as beta:
        limited = beta.post("/sandboxes", json={"templateID": "host", "timeout": 60})
        assert limited.status_code == 429, limited.text
        assert 0 < int(limited.headers["Retry-After"]) <= 60
        assert "--creates-per-minute" in limited.json()["message"]


def test_host_caps_refuse_what_the_host_cannot_hold(state_dir):
    config = state_dir / "config.json"
    config.write_text(json.dumps({"hostCaps": {"memoryPercent": 0.001}}))
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", "--config", str(config)))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "memoryMB": 64})
            assert r.status_code == 429 and "memoryPercent" in r.json()["message"], r.text
            huge = api.post("/sandboxes", json={"templateID": "host", "memoryMB": 65536})
            meminfo = open("/proc/meminfo").read().split()
            if int(meminfo[1]) // 1024 < 65536:
                assert huge.status_code == 400 and "more than this host has" in huge.json()["message"]
            assert api.get("/v2/sandboxes").json() == []
    finally:
        stop_daemon(d)


def test_usage_shows_sandbox_time_per_team(teams):
    d, keys, victim = teams
    with client(d, keys["alpha"]) as alpha:
        alpha.delete(f"/sandboxes/{victim['sandboxID']}")
        usage = alpha.get("/abx/v1/usage").json()["teams"]
        assert [u["team"] for u in usage] == ["alpha"]
        assert usage[0]["sandboxSeconds"] > 0 and usage[0]["sandboxesCreated"] >= 1
    with client(d, keys["beta"]) as beta:
        assert beta.get("/abx/v1/usage", params={"team": "alpha"}).status_code == 404
    everyone = abx(d, d.api_key, "usage", "--since", "2020-01-01").stdout
    assert "alpha" in everyone
    assert abx(d, d.api_key, "usage", "--since", "yesterday", check=False).returncode != 0
