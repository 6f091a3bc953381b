"""What killed daemons leave behind (issue 12): a daemon's cgroup dirs live under
<hierarchy>/abx/<instance>, one instance per state dir. A daemon that is killed never
removes its instance's dir; the next daemon to start (whatever its state dir) removes
such dirs when they hold no sandbox group and no process, and leaves alone every dir that
holds a sandbox, which may be live and adopted when its own daemon starts again."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Daemon, start_daemon, stop_daemon
from helpers import abx, wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")


def abx_dirs() -> list[Path]:
    """The `abx` dir of every hierarchy the runtime uses (v2: one; v1: one a mount)."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT / "abx"]
    mounts = {(CGROUP_ROOT / c).resolve() for c in V1_CONTROLLERS if (CGROUP_ROOT / c).is_dir()}
    return sorted(mount / "abx" for mount in mounts)


@pytest.fixture(autouse=True)
def cgroups_we_may_write() -> None:
    if os.geteuid() != 0:
        pytest.skip("making cgroup dirs needs root")
    for d in abx_dirs():
        try:
            d.mkdir(exist_ok=True)
        except OSError as e:
            pytest.skip(f"cannot make {d}: {e}")


def make_groups(*relative: str) -> list[Path]:
    made = []
    for base in abx_dirs():
        for rel in relative:
            (base / rel).mkdir(parents=True, exist_ok=True)
            made.append(base / rel)
    return made


def remove_groups(dirs: list[Path]) -> None:
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):  # children first
        if d.is_dir():
            d.rmdir()


def sandbox_groups(sandbox_id: str) -> list[Path]:
    return [p for base in abx_dirs() for p in base.glob(f"*/{sandbox_id}")]


def create_host_sandbox(d: Daemon) -> str:
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host"})
        assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def runs(d: Daemon, sandbox_id: str) -> bool:
    return abx(d, "exec", sandbox_id, "--", "echo hi").stdout == "hi\n"


@pytest.fixture
def daemons(state_dir) -> Iterator[dict[str, Daemon]]:
    started: dict[str, Daemon] = {}
    yield started
    for d in started.values():
        if d.proc.poll() is not None:  # killed by the test: its sandboxes still run
            d = start_daemon(d.data_dir, shared_templates=False, extra_args=("--warm-pool", "0"))
        stop_daemon(d)


def start(daemons: dict[str, Daemon], name: str, state_dir: Path) -> Daemon:
    if name in daemons:
        stop_daemon(daemons[name])
    daemons[name] = start_daemon(state_dir / name, shared_templates=False,
                                 extra_args=("--warm-pool", "0"))
    return daemons[name]


def test_an_empty_leftover_instance_dir_is_removed_at_start(daemons, state_dir):
    leftover = secrets.token_hex(6)  # an instance name: 12 hex digits
    holding = secrets.token_hex(6)
    not_ours = "not-an-instance"
    made = make_groups(leftover, f"{holding}/sandbox-group", not_ours)
    try:
        d = start(daemons, "a", state_dir)
        for base in abx_dirs():
            assert not (base / leftover).exists(), f"{base / leftover} was left"
            assert (base / holding / "sandbox-group").is_dir(), "a dir with a sandbox group went"
            assert (base / not_ours).is_dir(), "a dir not named as an instance went"
        assert d.proc.poll() is None
    finally:
        remove_groups(made)


def test_a_live_sandboxes_group_survives_other_daemons_and_its_own_restart(daemons, state_dir):
    a = start(daemons, "a", state_dir)
    sandbox_id = create_host_sandbox(a)
    groups = sandbox_groups(sandbox_id)
    assert groups, "the sandbox has no cgroup dir"
    a.proc.kill()  # SIGKILL, as a crash would: nothing is released
    a.proc.wait()

    # Another daemon starts (and sweeps) while the sandbox's daemon is down.
    b = start(daemons, "b", state_dir)
    assert all(g.is_dir() for g in groups), "the sandbox's cgroup was removed"
    procs = [g for g in groups if (g / "cgroup.procs").read_text().strip()]
    assert procs, "no process left in the sandbox's cgroup"

    # A third daemon's sweep may remove b's instance dir (empty: b has no sandbox);
    # b makes it again when it next needs it.
    c = start(daemons, "c", state_dir)
    b_sandbox = create_host_sandbox(b)
    assert runs(b, b_sandbox)
    assert sandbox_groups(b_sandbox), "b's sandbox has no cgroup dir"
    assert c.proc.poll() is None and b.proc.poll() is None

    # The sandbox's own daemon comes back and adopts it.
    a = start(daemons, "a", state_dir)
    assert runs(a, sandbox_id)
    assert all(g.is_dir() for g in groups)
    assert abx(a, "kill", sandbox_id, "--yes").returncode == 0
    wait_until(lambda: not sandbox_groups(sandbox_id), timeout=30, what="the sandbox's cgroup gone")
