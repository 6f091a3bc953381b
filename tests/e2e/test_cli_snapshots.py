"""Issue 15, snapshots from the CLI: `abx snapshot create|list|rm|to-template`, `abx fork`,
`abx pause --fs-only` and `abx create --snapshot`, each against a real daemon and real
sandboxes of `base`."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from harness import Daemon
from helpers import abx


def make(daemon: Daemon, *extra: str) -> str:
    r = abx(daemon, "create", *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def sh(daemon: Daemon, sandbox_id: str, script: str):
    return abx(daemon, "exec", sandbox_id, "--", "sh", "-c", script)


def kill(daemon: Daemon, *ids: str) -> None:
    if ids:
        abx(daemon, "kill", "--yes", *ids)


@pytest.fixture
def source(daemon: Daemon) -> Iterator[str]:
    """A `base` sandbox holding a file the snapshots must carry."""
    sandbox_id = make(daemon)
    r = sh(daemon, sandbox_id, "echo carried > /home/user/note.txt")
    assert r.returncode == 0, r.stderr
    yield sandbox_id
    kill(daemon, sandbox_id)


def snapshots(daemon: Daemon, *extra: str) -> list[dict]:
    r = abx(daemon, "snapshot", "list", "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_snapshot_create_list_start_on_it_and_remove(daemon, source):
    r = abx(daemon, "snapshot", "create", source, "--name", "before-upgrade")
    assert r.returncode == 0, r.stderr
    snapshot_id = r.stdout.strip()
    assert snapshot_id.startswith("snap")
    # The sandbox goes on as it was.
    assert sh(daemon, source, "echo later >> /home/user/note.txt").returncode == 0

    listed = {s["snapshotID"]: s for s in snapshots(daemon, "--sandbox", source)}
    assert listed[snapshot_id]["names"] == ["before-upgrade"]
    assert listed[snapshot_id]["sandboxID"] == source and listed[snapshot_id]["sizeBytes"] > 0
    table = abx(daemon, "snapshot", "ls")
    assert snapshot_id in table.stdout and "before-upgrade" in table.stdout and source in table.stdout
    assert abx(daemon, "snapshot", "list", "-q").stdout.split().count(snapshot_id) == 1

    started = make(daemon, "--snapshot", snapshot_id)
    try:
        r = sh(daemon, started, "cat /home/user/note.txt")
        assert r.stdout == "carried\n", r.stdout + r.stderr  # the file as it was then
    finally:
        kill(daemon, started)

    layer_dirs = set((daemon.data_dir / "snapshots").iterdir())
    r = abx(daemon, "snapshot", "rm", snapshot_id)
    assert r.returncode == 0 and f"removed {snapshot_id}" in r.stdout, r.stderr
    assert snapshot_id not in [s["snapshotID"] for s in snapshots(daemon)]
    # Its layer is freed from the disk once no sandbox uses it.
    assert len(set((daemon.data_dir / "snapshots").iterdir())) < len(layer_dirs)
    r = abx(daemon, "snapshot", "rm", snapshot_id)
    assert r.returncode == 1 and "not found" in r.stderr and "abx snapshot list" in r.stderr


def test_create_with_both_a_template_and_a_snapshot_is_refused(daemon):
    r = abx(daemon, "create", "--template", "base", "--snapshot", "snap00")
    assert r.returncode != 0 and "excludes" in r.stderr, r.stderr


def test_fork_starts_sandboxes_on_a_copy_of_the_files(daemon, source):
    r = abx(daemon, "fork", source, "-n", "2", "--timeout", "120")
    assert r.returncode == 0, r.stderr
    forks = r.stdout.split()
    try:
        assert len(set(forks)) == 2 and source not in forks
        for fork in forks:
            assert sh(daemon, fork, "cat /home/user/note.txt").stdout == "carried\n"
        # Each has its own writable layer: a write in one is seen in neither the other
        # nor the source.
        assert sh(daemon, forks[0], "echo mine > /home/user/note.txt").returncode == 0
        assert sh(daemon, forks[1], "cat /home/user/note.txt").stdout == "carried\n"
        assert sh(daemon, source, "cat /home/user/note.txt").stdout == "carried\n"
    finally:
        kill(daemon, *forks)
    r = abx(daemon, "fork", source, "-n", "21")
    assert r.returncode != 0 and "21" in r.stderr


def test_pause_fs_only_keeps_the_files_and_ends_the_processes(daemon, source):
    running = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^slee[p] 600'"
    r = sh(daemon, source, "setsid sleep 600 </dev/null >/dev/null 2>&1 &")
    assert r.returncode == 0, r.stderr
    assert sh(daemon, source, running).stdout.strip() == "1"
    r = abx(daemon, "pause", "--fs-only", source)
    assert r.returncode == 0 and "files only" in r.stdout, r.stderr
    info = json.loads(abx(daemon, "info", "--json", source).stdout)
    assert info["state"] == "paused"
    r = abx(daemon, "resume", source)
    assert r.returncode == 0, r.stderr
    assert sh(daemon, source, "cat /home/user/note.txt").stdout == "carried\n"
    assert sh(daemon, source, running).stdout.strip() == "0"


def test_snapshot_to_template(daemon, source):
    # A file of the template deleted in the sandbox stays deleted in the new template
    # (the snapshot's whiteout is carried over).
    r = abx(daemon, "exec", "--user", "root", source, "--", "rm", "/etc/issue")
    assert r.returncode == 0, r.stderr
    snapshot_id = abx(daemon, "snapshot", "create", source).stdout.strip()
    name = "from-snap-cli"
    r = abx(daemon, "snapshot", "to-template", snapshot_id, name, timeout=300)
    assert r.returncode == 0, r.stderr
    try:
        listed = json.loads(abx(daemon, "template", "list", "--json").stdout)
        mine = [t for t in listed if t["name"] == name]
        assert mine and snapshot_id in mine[0]["source"], listed
        # The template outlives the snapshot.
        assert abx(daemon, "snapshot", "rm", snapshot_id).returncode == 0
        started = make(daemon, "--template", name)
        try:
            assert sh(daemon, started, "cat /home/user/note.txt").stdout == "carried\n"
            # Still `base` below it: its user and tools are there.
            assert sh(daemon, started, "id -un").stdout == "user\n"
            assert sh(daemon, started, "test -e /etc/issue || echo gone").stdout == "gone\n"
            assert sh(daemon, started, "test -e /etc/os-release && echo kept").stdout == "kept\n"
        finally:
            kill(daemon, started)
    finally:
        abx(daemon, "template", "rm", name, "--force")
    r = abx(daemon, "snapshot", "to-template", "snap0000", "other-name")
    assert r.returncode != 0 and "not found" in r.stderr, r.stderr
