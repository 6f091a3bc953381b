"""Issue 31, loose end: a sandbox's bounds on its flows to the DNS forwarder and the egress
proxy are daemon settings (`network.dnsFlows`, `network.proxyFlows`: atOnce, perSecond,
burst), not constants: a daemon configured with a lower DNS count holds a sandbox's one-query
sockets to that many entries in the host's table (test_conntrack_bounds shows the defaults).
A module of its own: two daemons in the world at once would each see the other's rules and
processes as leftovers."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from netcheck import address, create
from test_conntrack_bounds import QUERIES, dns_burst, entries_of
from world import World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

LOWER_DNS_AT_ONCE = 32


@pytest.fixture(autouse=True)
def conntrack_table(net_world: World) -> None:
    if net_world.run_in(net_world.daemon_ns, "test", "-r", "/proc/net/nf_conntrack").returncode:
        pytest.skip("this kernel has no /proc/net/nf_conntrack to read the table from")


@pytest.fixture(scope="module")
def lower_bounds_daemon(net_world: World) -> Iterator[WorldDaemon]:
    config = {"network": {"dnsFlows": {"atOnce": LOWER_DNS_AT_ONCE}}}
    with daemon_in_world(net_world, "abx-net-flows-", config) as d:
        yield d


def test_a_lower_dns_bound_in_the_config_is_the_one_enforced(net_world, lower_bounds_daemon):
    # The default's rate (20 new per second, bursts of 100) lets more than 32 through in the
    # seconds the burst takes: only the configured count holds them to 32.
    sandbox = create(lower_bounds_daemon)
    source = address(lower_bounds_daemon, sandbox)
    had = entries_of(net_world, source)
    dns_burst(lower_bounds_daemon, sandbox)
    made = entries_of(net_world, source) - had
    assert 0 < made <= LOWER_DNS_AT_ONCE, (
        f"{QUERIES} one-query sockets left {made} entries of the sandbox in the host's table; "
        f"network.dnsFlows.atOnce is {LOWER_DNS_AT_ONCE}")
