"""Issue 13, "always denied, whatever the policy": from a sandbox with internet access the
daemon's machine (its world address on any port, the daemon's API port, the sandbox's own
gateway on a port other than DNS), another sandbox, cloud metadata, RFC 1918, CGNAT and
the other non-public ranges (192.0.0.0/24, 198.18.0.0/15) are unreachable. Each of these
destinations answers when asked from elsewhere (servers in the daemon's namespace, in the
world, in the other sandbox), so only the sandbox policy can be what stops them; and in
each case the same sandbox reaches the world (the control), so a sandbox without any
network cannot pass."""
from __future__ import annotations

import pytest
from helpers import wait_until
from netcheck import (
    address,
    assert_blocked,
    assert_reached,
    assert_unanswered,
    create,
    fetch_all,
    gateway,
    link,
    sh,
)
from world import BENCHMARK, CGNAT, DAEMON_ADDR, IETF, METADATA, PRIVATE, WWW

pytestmark = pytest.mark.net

CONTROL = f"http://{WWW}/control"
# Opened by the policy too: "always denied" is not a default a policy can change.
WIDE_OPEN = {"network": {"allowOut": ["0.0.0.0/0"]}}


@pytest.mark.parametrize("body", [{}, WIDE_OPEN], ids=["default", "allowOut-everything"])
@pytest.mark.parametrize("target", [METADATA, PRIVATE, CGNAT, IETF, BENCHMARK],
                         ids=["metadata", "rfc1918", "cgnat", "ietf", "benchmark"])
def test_served_private_and_link_local_addresses(net_world, net_daemon, target, body):
    sandbox = create(net_daemon, **body)
    denied, control = fetch_all(net_daemon, sandbox, f"http://{target}/", CONTROL)
    assert_reached(net_world, control)
    assert_blocked(net_world, denied)


@pytest.mark.parametrize("body", [{}, WIDE_OPEN], ids=["default", "allowOut-everything"])
def test_the_daemons_machine(net_world, net_daemon, bait, body):
    """The daemon's own address on its API port and on 22, and the sandbox's gateway on
    22 (its DNS port aside, the gateway is the daemon's machine too)."""
    sandbox = create(net_daemon, **body)
    via = gateway(net_daemon, sandbox)
    api_port, ssh, gateway_ssh, control = fetch_all(
        net_daemon, sandbox, f"http://{DAEMON_ADDR}:{bait}/", f"http://{DAEMON_ADDR}:22/",
        f"http://{via}:22/", CONTROL)
    assert_reached(net_world, control)
    for f in (api_port, ssh, gateway_ssh):
        assert_unanswered(f)


def test_ipv6_is_no_way_around(net_world, net_daemon, bait):
    """IPv6 is either filtered like IPv4 or off in the sandbox: the daemon's machine does not
    answer on any of its link-local addresses (the sandbox's gateway has one of them)."""
    sandbox = create(net_daemon)

    def settled() -> str | None:
        """The daemon's link-local addresses once no address on either side is tentative
        (duplicate address detection takes a second; until then IPv6 would look closed)."""
        shown = net_world.run_in(net_world.daemon_ns, "ip", "-6", "-o", "addr", "show", "scope", "link")
        inside = sh(net_daemon, sandbox, "ip -6 -o addr show 2>&1")
        return None if "tentative" in shown.stdout + inside.stdout else shown.stdout

    shown = wait_until(settled, what="IPv6 duplicate address detection to finish")
    addresses = [line.split()[3].split("/")[0] for line in shown.splitlines()]
    assert addresses, "the daemon's namespace has no IPv6 link-local address to try"
    zone = link(net_daemon, sandbox)
    *denied, control = fetch_all(net_daemon, sandbox,
                                 *[f"http://[{a}%25{zone}]:22/" for a in addresses], CONTROL)
    assert_reached(net_world, control)
    for f in denied:
        assert_unanswered(f)


def test_another_sandbox(net_world, net_daemon):
    server, client = create(net_daemon), create(net_daemon)
    started = sh(net_daemon, server, "nohup python3 -m http.server 8000 --directory /tmp "
                 ">/dev/null 2>&1 & sleep 0.5; curl -sS -o /dev/null -w '%{http_code}' "
                 "--retry 10 --retry-connrefused --retry-delay 0 http://127.0.0.1:8000/")
    assert started.stdout == "200", started.stderr
    where = address(net_daemon, server)
    # The server answers on that address (from its own sandbox), just not to the other one.
    itself = sh(net_daemon, server, f"curl -sS -m 5 -o /dev/null -w '%{{http_code}}' http://{where}:8000/")
    assert itself.stdout == "200", itself.stderr
    denied, control = fetch_all(net_daemon, client, f"http://{where}:8000/", CONTROL)
    assert_reached(net_world, control)
    assert_unanswered(denied)
