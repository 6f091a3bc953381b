"""IPv4 forwarding (per network namespace) is on while a daemon with sandbox networking runs
there, and back off after the last one stops, if abx turned it on; a forwarding the host
had on stays on. Each test runs its daemons in a network namespace of its own."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from harness import Daemon, private_state_dir, start_daemon, stop_daemon

pytestmark = [
    pytest.mark.offline,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                       reason="network namespaces need root and iproute2"),
]


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"abx-fwd-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    # A new namespace may inherit the host's setting (net.core.devconf_inherit_init_net).
    set_forwarding(name, "0")
    yield name
    subprocess.run(["ip", "netns", "delete", name], check=False)


def forwarding(netns: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, "cat", "/proc/sys/net/ipv4/ip_forward"],
                          check=True, capture_output=True, text=True).stdout.strip()


def set_forwarding(netns: str, value: str) -> None:
    subprocess.run(["ip", "netns", "exec", netns, "sh", "-c",
                    f"echo {value} > /proc/sys/net/ipv4/ip_forward"], check=True)


@pytest.fixture
def daemons(netns) -> Iterator[list[Daemon]]:
    """Starts daemons in `netns` on demand (each with its own data dir, so its own pool)."""
    started: list[Daemon] = []
    dirs = []

    def start() -> Daemon:
        state = private_state_dir()
        dirs.append(state)
        d = start_daemon(state / "state", shared_templates=False, extra_args=("--warm-pool", "0"),
                         wrap=("ip", "netns", "exec", netns))
        started.append(d)
        return d

    yield start
    for d in started:
        # The API is not reachable from this namespace; these daemons made no sandbox.
        stop_daemon(d, kill_sandboxes=False)
    for state in dirs:
        shutil.rmtree(state, ignore_errors=True)


def test_on_while_a_daemon_runs_and_off_after(netns, daemons):
    assert forwarding(netns) == "0"
    d = daemons()
    assert forwarding(netns) == "1"
    stop_daemon(d, kill_sandboxes=False)
    assert forwarding(netns) == "0"


def test_off_only_after_the_last_daemon(netns, daemons):
    first = daemons()
    second = daemons()
    stop_daemon(first, kill_sandboxes=False)
    assert forwarding(netns) == "1", "the other daemon's sandboxes still need it"
    stop_daemon(second, kill_sandboxes=False)
    assert forwarding(netns) == "0"


def test_a_killed_daemons_successor_turns_it_off(netns, daemons):
    killed = daemons()
    killed.proc.send_signal(signal.SIGKILL)
    killed.proc.wait()
    assert forwarding(netns) == "1"
    stop_daemon(daemons(), kill_sandboxes=False)
    assert forwarding(netns) == "0"


def test_forwarding_the_host_had_on_stays_on(netns, daemons):
    set_forwarding(netns, "1")
    stop_daemon(daemons(), kill_sandboxes=False)
    assert forwarding(netns) == "1"
