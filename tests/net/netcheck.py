"""Sandboxes of the world's daemon and what code inside them sees of the network: fetches
with curl as a user would run them, each tagged so that the world's servers can tell
whether it reached them."""
from __future__ import annotations

import json
import secrets
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from helpers import abx
from world import World, WorldDaemon

# Bounded so that a dropped packet costs seconds, not minutes.
CURL = "curl -sS --connect-timeout 2 --max-time 6"
SANDBOX_CA = "/tmp/world-ca.crt"  # where upload_world_ca puts the world's CA

# A sandbox script (OPEN_MANY.format(count=, address=, hold=)): opens `count` connections
# to the world's echo server and prints how many it holds and how many were
# refused; with `hold`, keeps them open until /tmp/done appears.
OPEN_MANY = """python3 - <<'EOF'
import os, socket, time
held, refused = [], 0
for _ in range({count}):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("{address}", 7))
        held.append(s)
    except OSError:
        refused += 1
        s.close()
print(len(held), refused, flush=True)
open("/tmp/ready", "w").close()
deadline = time.monotonic() + 120
while {hold} and not os.path.exists("/tmp/done") and time.monotonic() < deadline:
    time.sleep(0.1)
for s in held:
    s.close()
EOF"""


def create(d: WorldDaemon, **body: Any) -> str:
    """POST /sandboxes of the `host` template with E2B's wire fields (allow_internet_access,
    network: {allowOut, denyOut, rules, egressProxy, ...})."""
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", **body})
    assert r.status_code == 201, r.text
    sandbox_id = r.json()["sandboxID"]
    d.sandbox_ids.append(sandbox_id)
    return sandbox_id


def kill(d: WorldDaemon, sandbox_id: str) -> None:
    with d.api() as api:
        api.delete(f"/sandboxes/{sandbox_id}")


def update_network(d: WorldDaemon, sandbox_id: str, network: dict[str, Any]) -> None:
    """E2B's PUT /sandboxes/{id}/network (Sandbox.update_network): replaces the policy."""
    with d.api() as api:
        r = api.put(f"/sandboxes/{sandbox_id}/network", json=network)
    assert r.is_success, f"update_network answered {r.status_code}: {r.text}"


def sh(d: WorldDaemon, sandbox_id: str, script: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return abx(d, "exec", sandbox_id, "--", "sh", "-c", script, timeout=timeout)


def upload_world_ca(d: WorldDaemon, world: World, sandbox_id: str) -> str:
    r = abx(d, "upload", sandbox_id, str(world.ca_file), SANDBOX_CA)
    assert r.returncode == 0, r.stderr
    return SANDBOX_CA


@dataclass
class Fetch:
    url: str
    token: str  # in the URL's query: the world's log tells whether the request arrived
    exit_code: int
    status: int  # 0: no HTTP answer
    body: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.body)

    def answered(self, status: int = 200) -> bool:
        return self.exit_code == 0 and self.status == status

    def __str__(self) -> str:
        return (f"curl {self.url}: exit {self.exit_code}, HTTP {self.status}, "
                f"stderr {self.stderr.strip()[-300:]!r}, body {self.body[:300]!r}")


def fetch(d: WorldDaemon, sandbox_id: str, url: str, *options: str) -> Fetch:
    """curl URL in the sandbox (as the template's user), with `options` such as --cacert."""
    token = secrets.token_hex(6)
    tagged = f"{url}{'&' if '?' in url else '?'}probe={token}"
    script = " ".join([CURL, *map(shlex.quote, options), "-w", shlex.quote(r"\n%{http_code}"),
                       shlex.quote(tagged)])
    r = sh(d, sandbox_id, script)
    body, _, code = r.stdout.rpartition("\n")
    return Fetch(url=url, token=token, exit_code=r.returncode,
                 status=int(code) if code.strip().isdigit() else 0, body=body, stderr=r.stderr)


def fetch_all(d: WorldDaemon, sandbox_id: str, *requests: str | tuple[str, ...]) -> list[Fetch]:
    """Several fetches at once (each a URL or (URL, curl options...)): blocked ones each
    wait out their timeout, in parallel."""
    calls = [(r,) if isinstance(r, str) else r for r in requests]
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: fetch(d, sandbox_id, *call), calls))


def world_saw(world: World, f: Fetch) -> list[dict]:
    """The requests of this fetch that reached the world's web servers."""
    return [r for r in world.requests() if f"probe={f.token}" in r["path"]]


def assert_reached(world: World, f: Fetch, status: int = 200) -> dict:
    """The fetch got the world server's answer; returns the request as the server saw it."""
    assert f.answered(status), f"expected HTTP {status} from the world: {f}"
    seen = world_saw(world, f)
    assert seen, f"the world's server never saw {f.url}"
    return seen[-1]


def assert_blocked(world: World, f: Fetch) -> None:
    """The request never reached the world's server, and the sandbox got no answer from it."""
    assert not world_saw(world, f), f"{f.url} reached the world's server: {f}"
    assert not (f.exit_code == 0 and 200 <= f.status < 400), f"{f.url} was answered: {f}"


def assert_unanswered(f: Fetch) -> None:
    """For the python http.server outside the world (in the daemon's namespace, in another
    sandbox), which answers 200 to "/": it did not answer (a refusal from the daemon's
    proxy, a reset or a timeout all count as not reached)."""
    assert not (f.exit_code == 0 and f.status == 200), f"{f.url} was answered: {f}"


ECHO_PROBE = """python3 - <<'EOF'
import socket, sys
try:
    with socket.create_connection(({host!r}, {port}), timeout=2) as s:
        s.settimeout(3)
        s.sendall(b"ping\\n")
        print(s.recv(100).decode().strip())
except OSError as e:
    print(f"error: {{e}}")
    sys.exit(1)
EOF"""


def tcp_echo(d: WorldDaemon, sandbox_id: str, host: str, port: int = 7) -> str:
    """What the world's TCP echo (a non-HTTP port) answers the sandbox: "ping", or an error."""
    r = sh(d, sandbox_id, ECHO_PROBE.format(host=host, port=port))
    return r.stdout.strip() or r.stderr.strip()


def gateway(d: WorldDaemon, sandbox_id: str) -> str:
    """The sandbox's default gateway, as `ip route` inside it says."""
    r = sh(d, sandbox_id, "ip -4 route show default")
    words = r.stdout.split()
    assert r.returncode == 0 and "via" in words, f"no default route in the sandbox: {r.stdout!r} {r.stderr!r}"
    return words[words.index("via") + 1]


def address(d: WorldDaemon, sandbox_id: str) -> str:
    """The sandbox's own IPv4 address on its link to the daemon (not loopback)."""
    r = sh(d, sandbox_id, "ip -4 -o addr show scope global")
    words = r.stdout.split()
    assert r.returncode == 0 and "inet" in words, f"no address in the sandbox: {r.stdout!r}"
    return words[words.index("inet") + 1].split("/")[0]


def link(d: WorldDaemon, sandbox_id: str) -> str:
    """The name of the sandbox's network interface (the one that is not loopback)."""
    r = sh(d, sandbox_id, "ip -o link show")
    names = [line.split(":")[1].strip().split("@")[0] for line in r.stdout.splitlines()]
    others = [n for n in names if n != "lo"]
    assert r.returncode == 0 and others, f"no interface but loopback in the sandbox: {r.stdout!r}"
    return others[0]
