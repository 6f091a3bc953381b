"""Issue 31, loose end: `network.openPrivate` in the daemon's config opens the private
ranges it names to sandboxes (a corporate proxy), and only those: the world's private
server (10.99.0.1) answers a sandbox of a daemon that opened 10.99.0.0/24, while the other
always-denied ranges stay refused (test_always_denied shows the same server refused by
default)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from netcheck import assert_blocked, assert_reached, create, fetch_all
from world import CGNAT, METADATA, PRIVATE, WWW, World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

OPENED = "10.99.0.0/24"


@pytest.fixture(scope="module")
def opening_daemon(net_world: World) -> Iterator[WorldDaemon]:
    with daemon_in_world(net_world, config={"network": {"openPrivate": [OPENED]}}) as d:
        yield d


def test_open_private_opens_the_named_range_and_nothing_else(net_world, opening_daemon):
    sandbox = create(opening_daemon)
    opened, cgnat, metadata, control = fetch_all(
        opening_daemon, sandbox, f"http://{PRIVATE}/", f"http://{CGNAT}/", f"http://{METADATA}/",
        f"http://{WWW}/control")
    assert_reached(net_world, control)
    assert_reached(net_world, opened)
    assert_blocked(net_world, cgnat)
    assert_blocked(net_world, metadata)
