"""Issue 15's soak: create -> exec -> kill cycles against a daemon of its own, one client
after another and then eight at once. Before and after, what the daemon holds on the host is
the same: mounts in its namespace, cgroups, network devices, processes, its descriptors,
state-dir files and store rows exactly, its RSS within a small constant once warmed up (the
first round of cycles grows the allocator's arenas, so RSS is compared over a second round);
no cycle failed.

make test runs 200 cycles each way; `make soak` the long run (3000 sequential, 2000 with 8
clients), or set ABX_SOAK_SEQUENTIAL / ABX_SOAK_CONCURRENT."""
from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from agent_sandbox import _clients
from agent_sandbox.sync import Sandbox
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import cgroup_instance_name, veth_prefix

pytestmark = [pytest.mark.slow, pytest.mark.needs_template]

SEQUENTIAL = int(os.environ.get("ABX_SOAK_SEQUENTIAL", "200"))
CONCURRENT = int(os.environ.get("ABX_SOAK_CONCURRENT", "200"))
CLIENTS = 8
# Allocator arenas of the daemon's threads grow in steps; more than this is a leak.
RSS_SLACK_KIB = 24 * 1024


@pytest.fixture
def soak_daemon() -> Iterator[Daemon]:
    state = private_state_dir()
    d = start_daemon(state / "state", extra_args=("--warm-pool", "2"))
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


def footprint(d: Daemon) -> dict[str, int]:
    pid = d.proc.pid
    instance = cgroup_instance_name(d.data_dir / "sandboxes")
    groups = [p for root in Path("/sys/fs/cgroup").iterdir()
              for p in (root / "abx" / instance).rglob("*") if p.is_dir()]
    in_groups = set()
    for group in groups:
        in_groups.update((group / "cgroup.procs").read_text().split())
    prefix = veth_prefix(d.data_dir / "sandboxes") or "\0"
    # lxcfs's mount in the data dir shows the host's cgroups, every daemon's.
    lxcfs = d.data_dir / "lxcfs"
    # Each sandbox's flight record stays a day after it ended, by design (event_journal.h).
    events = d.data_dir / "events"
    files = [p for p in d.data_dir.rglob("*") if not p.is_relative_to(lxcfs)
             and not p.is_relative_to(events)
             and p.is_file() and not p.name.startswith("daemon.log")]
    # The daemon shares the host's mount namespace: only its own mounts count.
    mounts = [line for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
              if str(d.data_dir) in line]
    with sqlite3.connect(f"file:{d.data_dir / 'abx.db'}?mode=ro", uri=True) as db:
        rows = db.execute("select count(*) from sandboxes").fetchone()[0]
    status = Path(f"/proc/{pid}/status").read_text()
    return {
        "mounts": len(mounts),
        "cgroups": len(groups),
        "processes in cgroups": len(in_groups),
        "links": sum(1 for n in os.listdir("/sys/class/net") if n.startswith(prefix)),
        "daemon fds": len(os.listdir(f"/proc/{pid}/fd")),
        "daemon threads": len(os.listdir(f"/proc/{pid}/task")),
        "state files": len(files),
        "store rows": rows,
        "rss KiB": int(status.split("VmRSS:")[1].split()[0]),
    }


def drop_client_connections() -> None:
    """Closes the SDK's pooled keep-alive connections: each is a descriptor of the daemon's
    that this test holds open, not one the daemon leaks."""
    for client in list(_clients._sync_clients.values()):
        client.close()
    _clients._sync_clients.clear()


def settled(d: Daemon) -> dict[str, int]:
    """The footprint once the warm pool has refilled: the same twice in a row."""
    drop_client_connections()
    last = footprint(d)
    for _ in range(60):
        time.sleep(0.5)
        now = footprint(d)
        if {k: v for k, v in now.items() if k != "rss KiB"} == \
                {k: v for k, v in last.items() if k != "rss KiB"}:
            return now
        last = now
    return last


def cycle(d: Daemon, n: int) -> None:
    sandbox = Sandbox.create(template="base", api_url=d.url, api_key=d.api_key, timeout=120)
    try:
        assert sandbox.commands.run(f"echo $(({n} * 2))").stdout == f"{n * 2}\n"
    finally:
        assert sandbox.kill() is True


def assert_same(before: dict[str, int], after: dict[str, int]) -> None:
    exact = {k: v for k, v in before.items() if k not in ("rss KiB", "daemon threads")}
    assert {k: after[k] for k in exact} == exact
    assert after["rss KiB"] - before["rss KiB"] <= RSS_SLACK_KIB, (before, after)
    # The blocking pool's lanes start threads as work comes and keep them (to their bounds):
    # warm-up, like RSS; more after a round than before it would be a leak.
    assert after["daemon threads"] <= before["daemon threads"], (before, after)


def one_round(d: Daemon, before: dict[str, int]) -> dict[str, int]:
    """SEQUENTIAL cycles, then CONCURRENT with CLIENTS at once; what the daemon holds is
    checked against `before` after each."""
    for n in range(SEQUENTIAL):
        cycle(d, n)
    after_sequential = settled(d)
    assert_same(before, after_sequential)
    with ThreadPoolExecutor(CLIENTS) as clients:
        for done in clients.map(lambda n: cycle(d, n), range(CONCURRENT)):
            assert done is None
    after = settled(d)
    assert_same(before, after)
    return after


def test_create_exec_kill_cycles_leave_nothing_behind(soak_daemon):
    cycle(soak_daemon, 0)  # the first create of a template loads what later ones share
    start = settled(soak_daemon)
    # The first round warms the daemon up: its allocator arenas and pools grow to what this
    # load needs (tens of MiB on some machines) and then stay. Counts must already be exact.
    warmed = one_round(soak_daemon, {**start, "rss KiB": 1 << 40, "daemon threads": 1 << 40})
    # The second round is where a leak would show: RSS must stay flat within the slack.
    one_round(soak_daemon, warmed)
