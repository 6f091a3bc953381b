"""The test world itself (world.sh, world.py): from the daemon's namespace its web, DNS,
SOCKS and echo servers answer; from the host none of it is reachable or listening; the
daemon fixture runs `abx serve` inside it; and `down` leaves nothing behind."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from world import (
    API,
    DAEMON_ADDR,
    DNS_SERVERS,
    METADATA,
    PRIVATE,
    SERVED,
    SOCKS,
    SOCKS_PASSWORD,
    SOCKS_USER,
    WWW,
    World,
    WorldDaemon,
    world_down,
    world_up,
)

pytestmark = pytest.mark.net

IN_CERTIFICATE = {"1.1.1.1", "8.8.8.8", WWW, API}  # the others serve it too, but it names them not


def curl_from_daemon_ns(world: World, *args: str) -> subprocess.CompletedProcess:
    """curl as the daemon would run it: in its namespace, with the world's resolv.conf."""
    return subprocess.run(world.in_daemon_ns("curl", "-sS", "--max-time", "5", *args),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def answer(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# One A query to one server, printing the answers (or the rcode): no resolver library needed.
DNS_QUERY = r"""
import socket, struct, sys
name, server = sys.argv[1], sys.argv[2]
query = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
query += struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(query, (server, 53))
reply = s.recv(512)
rcode, count = reply[3] & 15, struct.unpack(">H", reply[6:8])[0]
at = len(query)
answers = []
for _ in range(count):
    at += 2  # a compressed name pointer
    rtype, _, _, length = struct.unpack(">HHIH", reply[at:at + 10])
    if rtype == 1:
        answers.append(socket.inet_ntoa(reply[at + 10:at + 14]))
    at += 10 + length
print(" ".join(answers) if answers else f"rcode {rcode}")
"""


def test_names_resolve_through_the_world_dns(net_world):
    expected = {"www.example.test": WWW, "example.test": WWW, "api.example.test": API,
                "private.example.test": PRIVATE, "metadata.example.test": METADATA,
                "deep.down.wild.example.test": API, "nowhere.example.test": "rcode 3"}
    for server in DNS_SERVERS:
        for name, address in expected.items():
            r = net_world.run_in(net_world.daemon_ns, "python3", "-c", DNS_QUERY, name, server)
            assert r.stdout.strip() == address, (name, server, r.stderr)
    # The daemon namespace's resolver is the world's (resolv.conf from /etc/netns).
    r = subprocess.run(net_world.in_daemon_ns("getent", "hosts", "www.example.test"),
                       capture_output=True, text=True, timeout=10)
    assert r.stdout.split()[0] == WWW, r.stderr
    assert "query[A] www.example.test from 192.0.2.2" in net_world.log("dnsmasq")


def test_every_address_serves_http_and_https(net_world):
    for address in SERVED:
        seen = answer(curl_from_daemon_ns(net_world, f"http://{address}/anything?x=1"))
        assert (seen["server"], seen["client"], seen["path"]) == (f"{address}:80", DAEMON_ADDR,
                                                                   "/anything?x=1")
        verify = ("--cacert", str(net_world.ca_file)) if address in IN_CERTIFICATE else ("-k",)
        seen = answer(curl_from_daemon_ns(net_world, *verify, f"https://{address}/x"))
        assert (seen["server"], seen["scheme"]) == (f"{address}:443", "https")


def test_http_and_https_answer_like_httpbin_by_name(net_world):
    ca = ("--cacert", str(net_world.ca_file))
    headers = answer(curl_from_daemon_ns(net_world, "-H", "X-Probe: 1",
                                         "http://www.example.test/headers"))["headers"]
    assert headers["Host"] == "www.example.test" and headers["X-Probe"] == "1"
    headers = answer(curl_from_daemon_ns(net_world, *ca, "https://api.example.test/headers"))["headers"]
    assert headers["Host"] == "api.example.test"
    wild = answer(curl_from_daemon_ns(net_world, *ca, "https://a.wild.example.test/p"))
    assert wild["server"] == f"{API}:443"
    posted = answer(curl_from_daemon_ns(net_world, *ca, "-d", "hello", "https://example.test/post"))
    assert (posted["method"], posted["body"]) == ("POST", "hello")
    # What E2B's own network tests expect of https://1.1.1.1 and https://8.8.8.8.
    for address, status in (("1.1.1.1", "301"), ("8.8.8.8", "302")):
        for scheme in ("http", "https"):
            r = curl_from_daemon_ns(net_world, *ca, "-o", "/dev/null", "-w", "%{http_code}",
                                    f"{scheme}://{address}")
            assert r.stdout == status, r.stderr
    head = curl_from_daemon_ns(net_world, *ca, "-I", "https://8.8.8.8")
    assert head.stdout.startswith("HTTP/1.1 302"), head.stderr
    quiet = curl_from_daemon_ns(net_world, "-o", "/dev/null", "-w", "%{http_code}",
                                "http://www.example.test/status/204?quiet=1")
    assert quiet.stdout == "204"
    assert any(r["path"] == "/status/204?quiet=1" for r in net_world.requests())


def test_https_verification_fails_without_the_world_ca(net_world):
    r = curl_from_daemon_ns(net_world, "https://www.example.test/")
    assert r.returncode == 60, r.stderr  # the world's CA is in no system trust store


def test_socks_proxies_with_and_without_a_password(net_world):
    open_proxy = answer(curl_from_daemon_ns(net_world, "--socks5-hostname", f"{SOCKS}:1080",
                                            "http://www.example.test/via-socks"))
    assert open_proxy["client"] == SOCKS
    with_password = answer(curl_from_daemon_ns(
        net_world, "--socks5", f"{SOCKS_USER}:{SOCKS_PASSWORD}@{SOCKS}:1081", f"http://{PRIVATE}/"))
    assert with_password["client"] == SOCKS
    refused = curl_from_daemon_ns(net_world, "--socks5", f"{SOCKS}:1081", f"http://{PRIVATE}/")
    assert refused.returncode != 0


def test_echo_stream_and_iperf3_servers(net_world):
    echo = subprocess.run(net_world.in_daemon_ns("socat", "-t2", "-", f"TCP:{WWW}:7"),
                          input="ping\n", capture_output=True, text=True, timeout=10)
    assert echo.stdout == "ping\n", echo.stderr
    stream = curl_from_daemon_ns(net_world, "-N", f"http://{WWW}/stream?seconds=0.5")
    assert stream.returncode == 0 and stream.stdout.startswith("tick 0\ntick 1\n"), stream.stderr
    iperf = subprocess.run(net_world.in_daemon_ns("iperf3", "-c", WWW, "-t", "1", "-J"),
                           capture_output=True, text=True, timeout=20)
    assert iperf.returncode == 0, iperf.stdout[-500:]
    assert json.loads(iperf.stdout)["end"]["sum_received"]["bytes"] > 0


def host_listening_addresses() -> set[str]:
    """The IPv4 addresses that sockets of the test's own (host) namespace listen on."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A":
            raw = bytes.fromhex(local.split(":")[0])
            found.add(".".join(str(b) for b in reversed(raw)))
    return found


def test_the_world_is_out_of_the_hosts_reach(net_world):
    """Checked without sending a packet: the world's links are not in the host, no route of
    the host names a world address, and no world server lives or listens in the host."""
    host_links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert " wan0" not in host_links and " isp0" not in host_links
    host_routes = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True,
                                 text=True).stdout
    default = subprocess.run(["ip", "-4", "route", "show", "default"], capture_output=True,
                             text=True).stdout.split()
    for address in SERVED:
        assert address not in host_routes
        route = subprocess.run(["ip", "-4", "route", "get", address], capture_output=True,
                               text=True).stdout.split()
        if default:  # the host's own way out, not one into the world
            assert route[route.index("dev") + 1] == default[default.index("dev") + 1], route
    assert not host_listening_addresses() & set(SERVED)
    host_ns = os.readlink("/proc/self/ns/net")
    internet = f"net:[{net_world.netns_inode(net_world.internet_ns)}]"
    for name, pid in net_world.server_pids().items():
        assert os.readlink(f"/proc/{pid}/ns/net") == internet != host_ns, name
    # And the internet has no way on: its only routes lead back to the daemon's link.
    routes = net_world.run_in(net_world.internet_ns, "ip", "-4", "route", "show").stdout
    assert routes.strip() == "192.0.2.0/24 dev isp0 proto kernel scope link src 192.0.2.1", routes


def test_the_daemon_runs_inside_the_world(net_world, net_daemon: WorldDaemon):
    pid = net_daemon.proc.pid
    assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1] == b"serve"
    assert os.readlink(f"/proc/{pid}/ns/net") == f"net:[{net_world.netns_inode(net_world.daemon_ns)}]"
    assert Path(f"/proc/{pid}/root/etc/resolv.conf").read_text() == "nameserver 8.8.8.8\n"
    assert Path(f"/proc/{pid}/root/sys/fs/cgroup").is_dir() and any(
        Path(f"/proc/{pid}/root/sys/fs/cgroup").iterdir()), "the daemon lost its cgroups"
    assert sorted(os.listdir(f"/proc/{pid}/root/sys/class/net")) == ["lo", "wan0"]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert f"ABX_UPSTREAM_CA_FILE={net_world.ca_file}".encode() in environ
    assert httpx.get(net_daemon.url + "/health", timeout=10).is_success
    with net_daemon.api() as api:
        assert api.get("/sandboxes").status_code == 200


def test_up_replaces_a_stale_world_and_down_leaves_nothing(net_world):
    name = f"abxw{os.getpid()}s"
    first = world_up(name)
    pids = list(first.server_pids().values())
    second = world_up(name)  # over the first one, as after a crashed run
    assert all(not Path(f"/proc/{pid}").exists() or
               Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z" for pid in pids)
    pids = list(second.server_pids().values())
    world_down(second)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{name}-d" not in netns and f"{name}-i" not in netns
    assert not Path(f"/etc/netns/{name}-d").exists()
    assert not second.state.exists()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    # The session's world is untouched.
    assert net_world.state.exists() and f"{net_world.daemon_ns}" in netns


def test_the_e2b_sdk_works_through_the_bridge(net_daemon: WorldDaemon, monkeypatch):
    """E2B's SDK, set up by the env lines a user writes, drives the daemon in the world: its
    control plane and the sandbox's envd both pass the bridge."""
    from e2b import Sandbox

    monkeypatch.setenv("E2B_API_URL", net_daemon.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", net_daemon.url)
    monkeypatch.setenv("E2B_API_KEY", net_daemon.api_key)
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{net_daemon.url.rsplit(':', 1)[1]}")
    sandbox = Sandbox.create("host", timeout=60)
    net_daemon.sandbox_ids.append(sandbox.sandbox_id)
    try:
        assert sandbox.commands.run("echo hi").stdout == "hi\n"
        sandbox.files.write("/tmp/x", "y")
        assert sandbox.files.read("/tmp/x") == "y"
    finally:
        sandbox.kill()
