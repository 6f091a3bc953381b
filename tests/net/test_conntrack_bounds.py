"""Issue 31, item 4: the host's connection tracking table is shared by every sandbox and
every team, so what one sandbox puts in it is bounded wherever its packets go, its flows to
the daemon's DNS forwarder and egress proxy included (they are redirected to the host, not
forwarded). A sandbox's unprivileged user opens thousands of sockets, one DNS query or one
TCP SYN each; the entries of that sandbox in the daemon namespace's table stay within the
documented bounds (256 DNS flows, 256 proxy connections), and a sandbox without internet
makes none at all."""
from __future__ import annotations

import pytest
from netcheck import address, create, gateway, sh
from world import WWW, World, WorldDaemon

pytestmark = pytest.mark.net

DNS_AT_ONCE = 256    # network.dnsFlows.atOnce's default (src/runtime/runtime.h), and the README
PROXY_AT_ONCE = 256  # network.proxyFlows.atOnce's default
# The kernel's count forgets a connection once it is closed (the proxy closes those past its
# own 128 per sandbox) and a new one takes its place, at the limited rate: a few more than
# the count may pass in the seconds a burst takes.
CLOSED_MEANWHILE = 16
QUERIES = 10000

DNS_BURST = """python3 - <<'EOF'
import socket, struct
query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
query += b"".join(bytes([len(p)]) + p for p in b"www.example.test".split(b".")) + b"\\0"
query += struct.pack(">HH", 1, 1)
sent = 0
for i in range({count}):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # a new source port: a new flow
    try:
        s.sendto(query, ("{gateway}", 53))
        sent += 1
    except OSError:
        pass
    s.close()
print(sent)
EOF"""

SYN_BURST = """python3 - <<'EOF'
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(min({count}, hard - 64)):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("{address}", {port}))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        continue
    held.append(s)
time.sleep(3)  # held open: SYNs held back are sent again meanwhile
print(len(held))
EOF"""


def entries_of(world: World, source: str) -> int:
    """The entries of the daemon namespace's conntrack table whose flow `source` began (a
    killed sandbox's entries stay till they expire: measure what grows)."""
    r = world.run_in(world.daemon_ns, "cat", "/proc/net/nf_conntrack", timeout=60)
    assert r.returncode == 0, r.stderr
    return sum(1 for line in r.stdout.splitlines() if f" src={source} " in line)


def host_count(world: World) -> int:
    r = world.run_in(world.daemon_ns, "cat", "/proc/sys/net/netfilter/nf_conntrack_count")
    return int(r.stdout)


@pytest.fixture(autouse=True)
def conntrack_table(net_world: World) -> None:
    if not net_world.run_in(net_world.daemon_ns, "test", "-r", "/proc/net/nf_conntrack").returncode == 0:
        pytest.skip("this kernel has no /proc/net/nf_conntrack to read the table from")


def dns_burst(d: WorldDaemon, sandbox: str) -> None:
    r = sh(d, sandbox, DNS_BURST.format(count=QUERIES, gateway=gateway(d, sandbox)), timeout=180)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == QUERIES, "the sandbox could not even send its queries"


def syn_burst(d: WorldDaemon, sandbox: str, address: str, port: int) -> int:
    r = sh(d, sandbox, SYN_BURST.format(count=QUERIES, address=address, port=port), timeout=180)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def test_dns_queries_from_many_sockets_stay_within_the_bound(net_world, net_daemon):
    sandbox = create(net_daemon)
    source = address(net_daemon, sandbox)
    before, had = host_count(net_world), entries_of(net_world, source)
    dns_burst(net_daemon, sandbox)
    made = entries_of(net_world, source) - had
    assert made <= DNS_AT_ONCE, (
        f"{QUERIES} one-query sockets left {made} entries of the sandbox in the host's table "
        f"(it grew from {before} to {host_count(net_world)}); the bound is {DNS_AT_ONCE}")
    # The bound is the sandbox's own: another one still resolves.
    other = create(net_daemon)
    r = sh(net_daemon, other, "getent hosts www.example.test")
    assert WWW in r.stdout, f"another sandbox no longer resolves: {r.stdout!r} {r.stderr!r}"


def test_a_sandbox_without_internet_makes_no_dns_or_proxy_flows(net_world, net_daemon):
    sandbox = create(net_daemon, allow_internet_access=False)
    source = address(net_daemon, sandbox)
    had = entries_of(net_world, source)
    dns_burst(net_daemon, sandbox)
    syn_burst(net_daemon, sandbox, WWW, 80)
    syn_burst(net_daemon, sandbox, gateway(net_daemon, sandbox), 443)
    made = entries_of(net_world, source) - had
    assert made <= 4, f"a sandbox without internet left {made} entries in the host's table"


def test_syns_to_the_proxy_redirect_stay_within_the_bound(net_world, net_daemon):
    # Names in the policy: its TCP to ports 80 and 443 goes to the daemon's proxy.
    sandbox = create(net_daemon, network={"allowOut": ["example.test"], "denyOut": ["0.0.0.0/0"]})
    source = address(net_daemon, sandbox)
    before, had = host_count(net_world), entries_of(net_world, source)
    held = syn_burst(net_daemon, sandbox, WWW, 80)
    made = entries_of(net_world, source) - had
    assert held > PROXY_AT_ONCE * 2, f"the sandbox held only {held} sockets: no test"
    assert made <= PROXY_AT_ONCE + CLOSED_MEANWHILE, (
        f"{held} connections to the proxy left {made} entries of the sandbox in the host's "
        f"table (it grew from {before} to {host_count(net_world)}); the bound is {PROXY_AT_ONCE}")


CLOSED_SECONDS = 10  # kClosedSeconds: how long a closed connection or a DNS exchange is tracked
OPEN_AND_CLOSE = """python3 - <<'EOF'
import socket
for _ in range({count}):
    with socket.create_connection(("{address}", 7), timeout=5) as s:
        s.sendall(b"ping\\n")
        s.recv(100)
EOF"""


def tracked(world: World, source: str) -> list[tuple[str, str, int]]:
    """(protocol, TCP state or "", seconds left) of each entry `source` began."""
    r = world.run_in(world.daemon_ns, "cat", "/proc/net/nf_conntrack", timeout=60)
    out = []
    for line in r.stdout.splitlines():
        if f" src={source} " in line:
            fields = line.split()
            state = fields[5] if fields[2] == "tcp" else ""
            out.append((fields[2], state, int(fields[4])))
    return out


def test_closed_connections_and_dns_exchanges_leave_the_table_soon(net_world, net_daemon):
    # A closed connection is no longer counted against the sandbox's bounds, so how long the
    # kernel keeps tracking it is what bounds a sandbox that opens and closes in a loop.
    sandbox = create(net_daemon)
    source = address(net_daemon, sandbox)
    r = sh(net_daemon, sandbox, "set -e\n" + OPEN_AND_CLOSE.format(count=20, address=WWW) +
           "\ngetent hosts www.example.test")
    assert r.returncode == 0 and WWW in r.stdout, r.stderr
    entries = tracked(net_world, source)
    closed = [seconds for proto, state, seconds in entries if state in ("TIME_WAIT", "CLOSE")]
    dns = [seconds for proto, _, seconds in entries if proto == "udp"]
    assert len(closed) >= 20 and dns, f"not what the sandbox did: {entries}"
    assert max(closed) <= CLOSED_SECONDS, f"closed connections stay tracked {max(closed)} s"
    assert max(dns) <= CLOSED_SECONDS, f"DNS exchanges stay tracked {max(dns)} s"
