"""Issue 31, loose end: each sandbox's flows are bounded (`network.maxConnections`), but many
sandboxes could still fill the host's connection tracking table together; one count over all
of a daemon's sandboxes, `network.maxConnectionsAllSandboxes` (default half the host's
nf_conntrack_max), bounds their sum. With a cap of 30, a sandbox holding 20 connections
leaves another only 10, though each may have 4096 of its own."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from netcheck import OPEN_MANY, create, sh
from world import WWW, World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

CAP = 30
FIRST = 20


@pytest.fixture(scope="module")
def capped_daemon(net_world: World) -> Iterator[WorldDaemon]:
    config = {"network": {"maxConnectionsAllSandboxes": CAP}}
    with daemon_in_world(net_world, "abx-net-allcap-", config) as d:
        yield d


def open_many(d: WorldDaemon, sandbox: str, count: int, hold: bool = False) -> tuple[int, int]:
    r = sh(d, sandbox, OPEN_MANY.format(count=count, address=WWW, hold=hold), timeout=150)
    assert r.returncode == 0, r.stderr
    held, refused = map(int, r.stdout.split())
    return held, refused


def test_the_cap_over_all_sandboxes_bounds_their_sum(capped_daemon):
    first, second = create(capped_daemon), create(capped_daemon)
    holding: dict[str, tuple[int, int]] = {}
    holder = threading.Thread(
        target=lambda: holding.update(first=open_many(capped_daemon, first, FIRST, hold=True)))
    holder.start()
    try:
        ready = sh(capped_daemon, first, "while [ ! -e /tmp/ready ]; do sleep 0.1; done",
                   timeout=120)
        assert ready.returncode == 0, ready.stderr
        assert open_many(capped_daemon, second, FIRST) == (CAP - FIRST, 2 * FIRST - CAP)
    finally:
        sh(capped_daemon, first, "touch /tmp/done")
        holder.join()
    assert holding["first"] == (FIRST, 0)
    # The first sandbox's connections are closed: the second has the room they held.
    assert open_many(capped_daemon, second, FIRST) == (FIRST, 0)
