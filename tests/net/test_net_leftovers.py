"""Issue 13: sandboxes with networking leave nothing behind in the daemon's machine (links,
nftables rules, network namespaces, processes) once they are killed and the daemon stops;
a daemon restarted over running sandboxes keeps their network, and still leaves nothing."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ABX_BIN, private_state_dir, stop_daemon
from netcheck import assert_reached, create, fetch_all, kill
from world import SOCKS, WWW, World, WorldDaemon, leftovers, start_daemon_in_world, stop_daemon_in_world

pytestmark = pytest.mark.net

KINDS = [
    {},
    {"allow_internet_access": False},
    {"network": {"denyOut": ["0.0.0.0/0"], "allowOut": ["www.example.test"]}},
    {"network": {"rules": {"www.example.test": [{"transform": {"headers": {"X-A": "1"}}}]}}},
    {"network": {"egressProxy": {"address": f"{SOCKS}:1080"}}},
]


@pytest.fixture
def own_daemon(net_world: World) -> Iterator[WorldDaemon]:
    state = private_state_dir("abx-net-")
    d = start_daemon_in_world(net_world, state / "state")
    try:
        yield d
    finally:
        stop_daemon_in_world(d)
        if not leftovers(d):
            shutil.rmtree(state, ignore_errors=True)


def test_killed_sandboxes_and_a_stopped_daemon_leave_nothing(net_world, own_daemon):
    sandboxes = [create(own_daemon, **body) for body in KINDS]
    for sandbox in sandboxes:
        fetch_all(own_daemon, sandbox, "http://www.example.test/leftovers")
    # A connection still open when its sandbox is killed, one when the daemon stops.
    streams = [subprocess.Popen([str(ABX_BIN), "exec", sandbox, "--", "curl", "-sN",
                                 f"http://{WWW}/stream?seconds=30"], env=own_daemon.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for sandbox in sandboxes[:2]]
    try:
        kill(own_daemon, sandboxes[0])
        stop_daemon_in_world(own_daemon)  # kills the others first, as `abx` users do
    finally:
        for stream in streams:
            stream.kill()
            stream.wait()
    left = leftovers(own_daemon)
    assert not left, "\n".join(left)


def test_a_restarted_daemon_keeps_its_sandboxes_network(net_world, own_daemon):
    sandbox = create(own_daemon)
    (before,) = fetch_all(own_daemon, sandbox, f"http://{WWW}/before-restart")
    assert_reached(net_world, before)
    stop_daemon(own_daemon, kill_sandboxes=False)  # the sandbox keeps running
    stop_daemon_in_world(own_daemon)  # and the bridge goes
    again = start_daemon_in_world(net_world, own_daemon.data_dir)
    again.sandbox_ids.append(sandbox)
    try:
        (after,) = fetch_all(again, sandbox, f"http://{WWW}/after-restart")
        assert_reached(net_world, after)
    finally:
        stop_daemon_in_world(again)
        # `world.sh exec` gives each daemon a mount namespace of its own, so the restarted
        # one cannot find (and adopt) the first one's lxcfs mount as it does on a host: the
        # first lxcfs is ended here, by the pid it recorded.
        end_first_lxcfs(net_world, own_daemon.data_dir / "lxcfs")
    left = leftovers(again)
    assert not left, "\n".join(left)


def end_first_lxcfs(world: World, mountpoint: Path) -> None:
    """The lxcfs in the daemon namespace serving exactly `mountpoint`."""
    pids = subprocess.run(["ip", "netns", "pids", world.daemon_ns], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if args[0].endswith(b"lxcfs") and str(mountpoint).encode() in args:
                os.kill(int(pid), signal.SIGTERM)
