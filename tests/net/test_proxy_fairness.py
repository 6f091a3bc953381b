"""Issue 31, item 6, "one team can switch off every other team's web egress": the egress
proxy's table of connections is shared by every team. A team may hold at most its
`maxProxyConnections` (default: half the table, `network.proxyMaxConnections`), so another
team's sandbox still gets its proxied answer while one team's sandboxes hold idle connections
up to and beyond their cap; and a proxied connection that moves no byte is closed after
`network.proxyIdleTimeoutSec`."""
from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from helpers import abx, wait_until
from netcheck import CURL
from world import WWW, World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

TABLE = 16  # network.proxyMaxConnections: a team's default share is half of it
PER_SANDBOX = 10
POLICY = {"denyOut": ["0.0.0.0/0"], "allowOut": ["www.example.test", WWW]}

# Opens `count` connections to the web server (redirected to the proxy, whose table they
# take) and sends nothing; a connection the proxy refuses is closed at once. Writes how many
# are still open after a few seconds to /tmp/held, then holds them `hold` seconds.
HOLD = """python3 - <<'EOF'
import select, socket, time
held = []
for _ in range({count}):
    s = socket.create_connection(("{address}", 80), timeout=5)
    held.append(s)
end = time.monotonic() + 4
while held and time.monotonic() < end:
    readable, _, _ = select.select(held, [], [], max(0.0, end - time.monotonic()))
    for s in readable:
        if not s.recv(1):
            held.remove(s)
            s.close()
open("/tmp/held", "w").write(str(len(held)))
time.sleep({hold})
EOF"""

# One proxied connection that sends nothing: prints "closed" once the proxy closes it.
IDLE = """python3 - <<'EOF'
import socket
s = socket.create_connection(("{address}", 80), timeout=5)
s.settimeout({wait})
try:
    print("closed" if s.recv(1) == b"" else "data")
except socket.timeout:
    print("open")
EOF"""


def team_key(d: WorldDaemon, team: str) -> str:
    with httpx.Client(base_url=d.url, headers={"X-API-KEY": d.api_key}, timeout=30) as admin:
        r = admin.post("/abx/v1/keys", json={"team": team, "name": f"{team} test"})
    assert r.status_code == 201, r.text
    return r.json()["key"]


def create_as(d: WorldDaemon, key: str) -> str:
    with httpx.Client(base_url=d.url, headers={"X-API-KEY": key}, timeout=30) as api:
        r = api.post("/sandboxes", json={"templateID": "host", "network": POLICY})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def sh_as(d: WorldDaemon, key: str, sandbox: str, script: str, timeout: float = 60):
    return abx(d, "exec", sandbox, "--", "sh", "-c", script, timeout=timeout,
               env={"ABX_SANDBOX_API_KEY": key})


def kill_as(d: WorldDaemon, key: str, sandbox: str) -> None:
    with httpx.Client(base_url=d.url, headers={"X-API-KEY": key}, timeout=30) as api:
        api.delete(f"/sandboxes/{sandbox}")


@pytest.fixture  # one daemon at a time: the world checks each leaves nothing
def small_table(net_world: World) -> Iterator[WorldDaemon]:
    with daemon_in_world(net_world, "abx-net-fair-", {"network": {"proxyMaxConnections": TABLE}}) as d:
        yield d


@pytest.fixture  # one daemon at a time: the world checks each leaves nothing
def short_idle(net_world: World) -> Iterator[WorldDaemon]:
    with daemon_in_world(net_world, "abx-net-idle-", {"network": {"proxyIdleTimeoutSec": 2}}) as d:
        yield d


def test_a_team_holding_idle_connections_leaves_room_for_another(small_table):
    d = small_table
    beta, alpha = team_key(d, "beta"), team_key(d, "alpha")
    hogs = [create_as(d, beta) for _ in range(2)]
    victim = create_as(d, alpha)
    try:
        with ThreadPoolExecutor(len(hogs)) as pool:
            holding = [pool.submit(sh_as, d, beta, s, HOLD.format(count=PER_SANDBOX, address=WWW, hold=40),
                                   120) for s in hogs]
            held = []
            for s in hogs:
                wait_until(lambda s=s: sh_as(d, beta, s, "cat /tmp/held").stdout.strip().isdigit(),
                           timeout=60, interval=0.5, what=f"{s} to open its connections")
                held.append(int(sh_as(d, beta, s, "cat /tmp/held").stdout))
            # beta asked for 2 x 10 and holds no more than its share of the table
            assert sum(held) <= TABLE // 2, f"team beta holds {held} proxied connections"
            # alpha's sandbox still gets the whole answer through the proxy
            r = sh_as(d, alpha, victim, f"{CURL} -w '\\n%{{http_code}}' http://www.example.test/fair")
            assert r.returncode == 0, r.stderr
            assert r.stdout.rstrip().endswith("200"), r.stdout
            for s in hogs:  # the holders end with their sandboxes
                kill_as(d, beta, s)
            for f in holding:
                f.exception()
    finally:
        for s in hogs:
            kill_as(d, beta, s)
        kill_as(d, alpha, victim)


def test_an_idle_proxied_connection_is_closed(short_idle):
    d = short_idle
    key = team_key(d, "idle")
    sandbox = create_as(d, key)
    try:
        # 2 s of idleness after the 5 s wait for first bytes; 60 s is a generous bound
        r = sh_as(d, key, sandbox, IDLE.format(address=WWW, wait=60), timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "closed", r.stdout
    finally:
        kill_as(d, key, sandbox)
