"""Issue 13, hardening: the host's connection tracking table is everyone's, so a sandbox may
have only `network.maxConnections` connections of its own open at once (4096 by default);
more are refused, and closing some makes room again."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from netcheck import OPEN_MANY, create, sh
from world import WWW, World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

LIMIT = 20


@pytest.fixture(scope="module")
def limited_daemon(net_world: World) -> Iterator[WorldDaemon]:
    with daemon_in_world(net_world, "abx-net-limit-", {"network": {"maxConnections": LIMIT}}) as d:
        yield d


def open_many(d: WorldDaemon, sandbox: str, count: int) -> tuple[int, int]:
    r = sh(d, sandbox, OPEN_MANY.format(count=count, address=WWW, hold=False), timeout=120)
    assert r.returncode == 0, r.stderr
    held, refused = map(int, r.stdout.split())
    return held, refused


def test_connections_beyond_the_limit_are_refused_and_room_comes_back(limited_daemon):
    sandbox = create(limited_daemon)
    assert open_many(limited_daemon, sandbox, LIMIT + 10) == (LIMIT, 10)
    # the first round's connections are closed (the kernel forgets them after their FIN)
    assert open_many(limited_daemon, sandbox, 5) == (5, 0)
