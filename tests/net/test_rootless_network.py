"""Issue 13, rootless: a daemon without root gives its sandboxes the internet through
slirp4netns with the host's loopback closed, says at start what it cannot enforce, and
refuses the policies it could not keep rather than ignore them."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_until
from netcheck import (
    assert_blocked,
    assert_reached,
    assert_unanswered,
    fetch,
    sh,
    update_network,
)
from world import WWW, World, WorldDaemon, daemon_in_world

pytestmark = pytest.mark.net

NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
# Debian's /dev/net/tun is mode 0666; where this machine's is not, the daemon's private
# mount namespace (world.sh exec) gets a node of its own that is, the host's stays as it is.
OPEN_TUN = ("sh", "-ec", 'mount -t tmpfs -o size=4k,mode=755 tun /dev/net; '
            'mknod -m 666 /dev/net/tun c 10 200; exec "$@"', "sh")
SLIRP_HOST_LOOPBACK = "10.0.2.2"  # slirp4netns's gateway, the host's 127.0.0.1 unless disabled


@pytest.fixture(scope="module")
def rootless_daemon(net_world: World) -> Iterator[WorldDaemon]:
    if shutil.which("slirp4netns") is None:
        pytest.skip("slirp4netns is not installed (apt-get install slirp4netns)")
    probe = subprocess.run([*NOBODY, "unshare", "--user", "--map-root-user", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unprivileged user namespaces are disabled on this kernel")

    def open_to_nobody(home: Path) -> None:
        os.chmod(home, 0o755)
        os.chown(home / "state", 65534, 65534)

    with daemon_in_world(net_world, "abx-rootless-net-", prepare=open_to_nobody,
                         more_leftovers=nobodys_inits, env={"HOME": "/tmp"},
                         wrap_after=(*OPEN_TUN, *NOBODY)) as d:
        yield d


def nobodys_inits() -> list[str]:
    """Sandbox inits of uid 65534 still running (leftovers() finds sandboxes by cgroup,
    which a daemon without root may not have)."""
    def found() -> list[str]:
        ps = subprocess.run(["ps", "-eo", "pid=,uid=,comm="], capture_output=True, text=True)
        return [f"abx-init {line.split()[0]} of uid 65534" for line in ps.stdout.splitlines()
                if line.split()[1:] == ["65534", "abx-init"]]
    with contextlib.suppress(AssertionError):
        wait_until(lambda: not found(), timeout=10, what="the rootless sandboxes' inits to end")
    return found()


def create(d: WorldDaemon, **body) -> str:
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", **body})
    assert r.status_code == 201, r.text
    d.sandbox_ids.append(r.json()["sandboxID"])
    return r.json()["sandboxID"]


def test_start_says_what_is_not_enforced(rootless_daemon: WorldDaemon):
    log = (rootless_daemon.data_dir / "daemon.log").read_text()
    assert "running without root: sandboxes reach the internet through slirp4netns" in log
    assert "169.254.0.0/16) stay reachable" in log


def test_internet_by_name_and_address_but_not_the_hosts_loopback(
        net_world: World, rootless_daemon: WorldDaemon):
    sandbox = create(rootless_daemon)
    assert_reached(net_world, fetch(rootless_daemon, sandbox, f"http://{WWW}/rootless"))
    assert_reached(net_world, fetch(rootless_daemon, sandbox, "http://www.example.test/by-name"))
    port = rootless_daemon.url.rsplit(":", 1)[1]  # the daemon's API on the host's 127.0.0.1
    assert_unanswered(fetch(rootless_daemon, sandbox, f"http://{SLIRP_HOST_LOOPBACK}:{port}/health"))


def test_no_internet_and_live_updates_all_or_nothing(net_world: World,
                                                     rootless_daemon: WorldDaemon):
    sandbox = create(rootless_daemon, allow_internet_access=False)
    assert_blocked(net_world, fetch(rootless_daemon, sandbox, f"http://{WWW}/closed"))
    update_network(rootless_daemon, sandbox, {"allow_internet_access": True})
    assert_reached(net_world, fetch(rootless_daemon, sandbox, f"http://{WWW}/opened"))
    update_network(rootless_daemon, sandbox, {"denyOut": ["0.0.0.0/0"]})
    assert_blocked(net_world, fetch(rootless_daemon, sandbox, f"http://{WWW}/closed-again"))


def test_policies_it_cannot_enforce_are_refused(rootless_daemon: WorldDaemon):
    with rootless_daemon.api() as api:
        for network in ({"allowOut": [WWW], "denyOut": ["0.0.0.0/0"]}, {"denyOut": [WWW]},
                        {"rules": {"www.example.test": [{"transform": {"headers": {"A": "b"}}}]}}):
            r = api.post("/sandboxes", json={"templateID": "host", "network": network})
            assert r.status_code == 400, r.text
            assert "run the daemon as root" in r.json()["message"]
        sandbox = create(rootless_daemon)
        r = api.put(f"/sandboxes/{sandbox}/network", json={"denyOut": [WWW]})
        assert r.status_code == 400 and "slirp4netns" in r.json()["message"]
    assert_reached(rootless_daemon.world, fetch(rootless_daemon, sandbox, f"http://{WWW}/kept"))


RAW_SOCKETS = """python3 - <<'EOF'
import socket
for family, kind, proto in ((socket.AF_PACKET, socket.SOCK_RAW, 0),
                            (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)):
    try:
        socket.socket(family, kind, proto).close()
        print("opened", int(family))
    except PermissionError:
        print("refused", int(family))
EOF"""


def test_root_in_the_sandbox_cannot_hand_make_packets(rootless_daemon: WorldDaemon):
    """slirp4netns forwards any packet that reaches it, to 127.0.0.1 too: with raw sockets,
    root in the sandbox could reach the host's loopback by frames addressed there."""
    sandbox = create(rootless_daemon)
    r = sh(rootless_daemon, sandbox, RAW_SOCKETS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["refused", "17", "refused", "2"], r.stdout  # AF_PACKET, AF_INET
    status = sh(rootless_daemon, sandbox, "grep CapBnd /proc/self/status").stdout.split()[1]
    assert not int(status, 16) & (1 << 13), "CAP_NET_RAW is in the bounding set"
