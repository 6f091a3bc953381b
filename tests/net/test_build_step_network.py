"""Issue 31, loose end: a template build's RUN step has a network of its own (NAT out, never
the host): it reaches the world, but not the daemon's machine (a service on its loopback,
reached through the step's gateway, nor its world address) and not the always-denied ranges
(a private network, cloud metadata). Each target answers when asked from elsewhere (the
world's servers, the bait servers in the daemon's namespace), so only the build's network
policy can be what stops the step."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import abx, wait_until
from netcheck import create, sh
from world import (
    DAEMON_ADDR,
    METADATA,
    PRIVATE,
    WWW,
    World,
    WorldDaemon,
    daemon_in_world,
    free_host_port,
    stop_process,
)

pytestmark = pytest.mark.net

# Each probe prints "NAME CODE": curl's HTTP code, 000 when nothing answered.
PROBE = ("for t in {targets}; do name=${{t%%=*}}; url=${{t#*=}}; "
         "echo \"$name $(curl -s -o /dev/null --connect-timeout 2 --max-time 4 "
         "-w '%{{http_code}}' \"$url\")\" >> /probes.txt; done")

# The step's default gateway (the host's side of its link), from /proc/net/route.
GATEWAY = ("import socket, struct; print(next(socket.inet_ntoa(struct.pack(\"<L\", int(f[2], 16))) "
           "for f in map(str.split, open(\"/proc/net/route\")) if f[1] == \"00000000\"))")


@pytest.fixture(scope="module")
def building_daemon(net_world: World) -> Iterator[WorldDaemon]:
    with daemon_in_world(net_world, shared_templates=False) as d:
        r = abx(d, "template", "build", "base", timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        yield d


@pytest.fixture
def host_services(net_world: World, tmp_path: Path) -> Iterator[int]:
    """HTTP servers in the daemon's namespace on its loopback and on its world address."""
    port = free_host_port()
    servers = [subprocess.Popen(
        ["ip", "netns", "exec", net_world.daemon_ns, "/usr/bin/python3", "-m", "http.server",
         "--bind", address, "--directory", str(tmp_path), str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True) for address in ("127.0.0.1", DAEMON_ADDR)]
    try:
        for address in ("127.0.0.1", DAEMON_ADDR):
            probe = ["curl", "-sf", "-o", "/dev/null", "--max-time", "1", f"http://{address}:{port}/"]
            wait_until(lambda probe=probe: net_world.run_in(net_world.daemon_ns, *probe).returncode == 0,
                       what=f"the host service on {address}:{port}")
        yield port
    finally:
        for server in servers:
            stop_process(server)


def test_a_build_step_reaches_the_world_but_not_the_host_nor_the_denied_set(
        net_world, building_daemon, host_services, tmp_path):
    port = host_services
    targets = {"world": f"http://{WWW}/control", "daemon": f"http://{DAEMON_ADDR}:{port}/",
               "private": f"http://{PRIVATE}/", "metadata": f"http://{METADATA}/"}
    gateway_probe = (f"gw=$(python3 -c '{GATEWAY}'); echo gateway $gw >> /probes.txt; "
                     f"echo \"loopback $(curl -s -o /dev/null --connect-timeout 2 --max-time 4 "
                     f"-w '%{{http_code}}' http://$gw:{port}/)\" >> /probes.txt")
    context = tmp_path / "ctx"
    context.mkdir()
    listed = " ".join(f"{name}={url}" for name, url in targets.items())
    (context / "Sandboxfile").write_text(
        f"FROM base\nRUN {PROBE.format(targets=listed)}\nRUN {gateway_probe}\n")
    r = abx(building_daemon, "template", "build", str(context), "--name", "netstep", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    sandbox = create(building_daemon, templateID="netstep")
    seen = dict(line.split() for line in sh(building_daemon, sandbox, "cat /probes.txt")
                .stdout.splitlines())
    assert seen["world"] == "200", seen  # the control: the step has a network
    assert seen.get("gateway", "").count(".") == 3, seen  # its way to the host's loopback
    for name in ("daemon", "loopback", "private", "metadata"):
        assert seen[name] == "000", (name, seen)
