"""Fixtures of the networking tests: the private test world (world.sh) and a real daemon
running inside it (world.py). Everything here needs root and the world's tools; without
them the tests are skipped with the reason."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_until
from netcheck import kill
from world import (
    DAEMON_ADDR,
    World,
    WorldDaemon,
    daemon_in_world,
    healthy,
    missing,
    stop_process,
    world_down,
    world_up,
)


@pytest.fixture(scope="session")
def net_world() -> Iterator[World]:
    if reason := missing():
        pytest.skip(reason)
    world = world_up()
    try:
        yield world
    finally:
        world_down(world)


@pytest.fixture(scope="module")
def net_daemon(net_world: World) -> Iterator[WorldDaemon]:
    """A daemon in the world's daemon namespace for the tests of one module; stopping it
    must leave nothing in the world (links, nftables, namespaces, processes)."""
    with daemon_in_world(net_world) as d:
        yield d


@pytest.fixture(autouse=True)
def daemon_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test that uses the world's daemon: it is the same process afterwards and
    answers /health; the sandboxes the test made are killed."""
    if "net_daemon" not in request.fixturenames:
        yield
        return
    d: WorldDaemon = request.getfixturevalue("net_daemon")
    pid, made_before = d.proc.pid, len(d.sandbox_ids)
    yield
    assert d.proc.pid == pid and d.proc.poll() is None, "the daemon died"
    assert healthy(d), "the daemon does not answer /health"
    for sandbox_id in d.sandbox_ids[made_before:]:
        kill(d, sandbox_id)


@pytest.fixture
def bait(net_world: World, net_daemon: WorldDaemon, tmp_path: Path) -> Iterator[int]:
    """HTTP servers in the daemon namespace on every address, IPv4 and IPv6 ([::]:22), and on
    the daemon's own API port of its world address (192.0.2.2:P), so that only the sandbox
    policy can keep a sandbox from the daemon's machine. Yields P."""
    port = int(net_daemon.url.rsplit(":", 1)[1])
    listen = (("::", 22), (DAEMON_ADDR, port))  # "::": http.server serves IPv4 there too
    servers = [subprocess.Popen(
        ["ip", "netns", "exec", net_world.daemon_ns, "/usr/bin/python3", "-m", "http.server",
         "--bind", address, "--directory", str(tmp_path), str(p)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True) for address, p in listen]
    try:
        for url in (f"http://{DAEMON_ADDR}:22/", "http://[::1]:22/", f"http://{DAEMON_ADDR}:{port}/"):
            probe = ["curl", "-sf", "-o", "/dev/null", "--max-time", "1", url]
            wait_until(lambda probe=probe: net_world.run_in(net_world.daemon_ns, *probe).returncode == 0,
                       what=f"the bait server {url} in the daemon namespace")
        yield port
    finally:
        for server in servers:
            stop_process(server)
