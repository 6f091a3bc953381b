"""Issue 31 item 3, defence in depth: every sandbox maps its ids to a host uid/gid range of its
own, so what one sandbox's uid can reach on the host (a file, a process, a per-user kernel
count) no other sandbox's uid can. Template layers stay stored once, under the daemon's shared
range, which no sandbox runs as: each sandbox sees them through idmapped mounts, owners and
all, and a snapshot stores what a sandbox wrote under the shared range again."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import abx, sandbox, sandbox_host_pids

FIRST_OWN_ID = 1 << 31  # runtime/id_ranges.h: kFirstId

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root daemon maps own ranges")


def root_sh(daemon, sandbox_id: str, script: str) -> str:
    r = abx(daemon, "exec", "--user", "root", sandbox_id, "--", "sh", "-c", script)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def host_ids(sandbox_id: str) -> set[tuple[int, int]]:
    """The (real uid, real gid) of each host process of the sandbox, as the host sees them."""
    ids = set()
    for pid in sandbox_host_pids(sandbox_id):
        try:
            text = Path(f"/proc/{pid}/status").read_text()
            fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        except OSError:
            continue
        ids.add((int(fields["Uid"].split()[0]), int(fields["Gid"].split()[0])))
    return ids


def test_two_sandboxes_run_as_disjoint_host_ranges(daemon):
    with sandbox(daemon) as first, sandbox(daemon) as second:
        maps = []
        for sandbox_id in (first, second):
            # "inside outside count" lines: 0..65535 onto one contiguous host range.
            rows = [[int(f) for f in line.split()] for line in
                    root_sh(daemon, sandbox_id, "cat /proc/self/uid_map").splitlines()]
            assert rows[0][0] == 0 and sum(row[2] for row in rows) == 65536, rows
            assert all(row[1] - rows[0][1] == row[0] for row in rows), rows
            maps.append(rows[0][1])
            gid_rows = root_sh(daemon, sandbox_id, "cat /proc/self/gid_map").split()
            assert int(gid_rows[1]) == rows[0][1], gid_rows
        assert maps[0] != maps[1] and abs(maps[0] - maps[1]) >= 65536, maps
        assert min(maps) >= FIRST_OWN_ID, maps  # not the shared range layers are stored with
        # Seen from the host, each sandbox's processes (its init first) run in its range.
        for sandbox_id, first_id in zip((first, second), maps, strict=True):
            seen = host_ids(sandbox_id)
            assert (first_id, first_id) in seen, seen
            assert all(first_id <= uid < first_id + 65536 for uid, _ in seen), seen


def test_template_files_keep_their_owners_inside(daemon):
    with sandbox(daemon) as sandbox_id:
        owners = root_sh(daemon, sandbox_id, "stat -c '%u:%g' /etc/passwd /usr/bin/env /home/user")
        assert owners.split() == ["0:0", "0:0", "1000:1000"], owners
        # The user writes its home and root writes /etc: both on the sandbox's own layer.
        r = abx(daemon, "exec", sandbox_id, "--", "sh", "-c",
                "echo mine > ~/note && stat -c '%u:%g' ~/note")
        assert r.returncode == 0 and r.stdout.split() == ["1000:1000"], r.stdout + r.stderr
        assert root_sh(daemon, sandbox_id, "echo x >> /etc/motd && stat -c %u /etc/motd").strip() == "0"


def test_a_snapshot_keeps_owners_and_stores_no_sandbox_range(daemon):
    with sandbox(daemon) as source:
        root_sh(daemon, source, "mkdir -p /srv/kept && echo a > /srv/kept/by-root"
                " && echo b > /srv/kept/by-user && chown 1000:1000 /srv/kept/by-user"
                " && ln -s by-user /srv/kept/link && chown -h 1000:1000 /srv/kept/link")
        snap = abx(daemon, "snapshot", "create", source)
        assert snap.returncode == 0, snap.stderr
        snapshot_id = snap.stdout.strip()
    try:
        made = abx(daemon, "create", "--snapshot", snapshot_id)
        assert made.returncode == 0, made.stderr
        started = made.stdout.strip()
        try:
            owners = root_sh(daemon, started, "cd /srv/kept && stat -c '%n %u:%g' by-root by-user"
                             " && stat -c '%n %u:%g' . && stat -c '%n %u:%g' link")
            assert owners.split("\n")[:4] == ["by-root 0:0", "by-user 1000:1000", ". 0:0",
                                              "link 1000:1000"], owners
        finally:
            abx(daemon, "kill", "--yes", started)
        # On the host the snapshot's files are owned by the shared range, never by a
        # sandbox's own (which is reused once its sandbox is gone).
        stored = {(st.st_uid, st.st_gid) for st in
                  (p.lstat() for p in (daemon.data_dir / "snapshots").rglob("*"))}
        assert stored and all(uid < FIRST_OWN_ID and gid < FIRST_OWN_ID for uid, gid in stored), \
            stored
    finally:
        abx(daemon, "snapshot", "rm", snapshot_id)
