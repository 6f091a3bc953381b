"""The daemon's input rule keeps host clients away from its resolver and proxy ports: only
new flows to them. A host program whose own port happens to be one of those numbers (another
daemon's proxy port, an ephemeral port) still gets its replies: before, every local packet to
such a port was dropped, so such a connection hung."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.net

# A UDP echo on loopback whose client is bound to PORT; prints what came back, or "lost".
ECHO = """
import socket, sys
server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind(("127.0.0.1", 0))
client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.bind(("127.0.0.1", int(sys.argv[1])))
client.settimeout(3)
client.sendto(b"ping", server.getsockname())
data, peer = server.recvfrom(16)
server.sendto(b"pong", peer)
try:
    print(client.recvfrom(16)[0].decode())
except socket.timeout:
    print("lost")
"""


def daemon_ports(net_world) -> list[int]:
    rules = net_world.run_in(net_world.daemon_ns, "nft", "list", "ruleset").stdout
    found = re.search(r"th dport \{ ([0-9, ]+) \}", rules)
    assert found, f"no resolver/proxy ports in the daemon's rules:\n{rules}"
    return [int(p) for p in found.group(1).split(",")]


def test_a_host_client_on_the_daemons_port_numbers_gets_its_replies(net_world, net_daemon):
    tried = 0
    for port in daemon_ports(net_world):
        r = net_world.run_in(net_world.daemon_ns, "python3", "-c", ECHO, str(port))
        if "Address already in use" in r.stderr:
            continue  # the daemon's own UDP socket (its resolver): not a client's to take
        assert r.stdout.strip() == "pong", (port, r.stdout, r.stderr)
        tried += 1
    assert tried, "every port was taken: nothing was tried"
