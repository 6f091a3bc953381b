"""Snapshots, fork and the filesystem-only pause (issue 15), with the unmodified E2B SDK:
a snapshot carries the sandbox's files (not its processes) into new sandboxes, each with
its own writable layer; another team's key never sees, uses or deletes it; fork makes
sandboxes with the original's files while it runs on; pause(keep_memory=False) ends the
processes, keeps the files, id and token, and connect cold boots it (a new boot id)."""
from __future__ import annotations

import httpx
import pytest
from e2b import Sandbox, SandboxState
from e2b.exceptions import NotFoundException, SandboxException


@pytest.fixture
def other_team_key(e2b_env):
    """An API key of another team, revoked afterwards."""
    with e2b_env.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": "snap-rival", "name": "snapshot test"})
        assert made.status_code == 201, made.text
    yield made.json()["key"]
    with e2b_env.api() as admin:
        admin.delete(f"/abx/v1/keys/{made.json()['id']}")


def boot_id(sb: Sandbox) -> str:
    return sb.files.read("/proc/sys/kernel/random/boot_id").strip()


def test_twenty_sandboxes_from_one_snapshot_see_its_files_not_each_others(e2b_env):
    sb = Sandbox.create(timeout=120)
    made: list[Sandbox] = []
    try:
        sb.files.write("/home/user/app/seed.txt", "from the original")
        snap = sb.create_snapshot(name="twenty")
        assert snap.snapshot_id.startswith("snap") and snap.names == ["twenty"]
        sb.files.write("/home/user/app/seed.txt", "changed after the snapshot")
        for i in range(20):
            made.append(Sandbox.create(snap.snapshot_id, timeout=120))
        assert len({m.sandbox_id for m in made} | {sb.sandbox_id}) == 21
        for i, m in enumerate(made):
            assert m.files.read("/home/user/app/seed.txt") == "from the original"
            m.files.write("/home/user/app/own.txt", f"sandbox {i}")
        for i, m in enumerate(made):
            assert m.files.read("/home/user/app/own.txt") == f"sandbox {i}"
        assert not sb.files.exists("/home/user/app/own.txt")
        assert sb.files.read("/home/user/app/seed.txt") == "changed after the snapshot"
        listed = Sandbox.list_snapshots(sandbox_id=sb.sandbox_id).next_items()
        assert [s.snapshot_id for s in listed] == [snap.snapshot_id]
        assert Sandbox.delete_snapshot(snap.snapshot_id) is True
        assert Sandbox.delete_snapshot(snap.snapshot_id) is False
        # The sandboxes made from it keep their files after its deletion.
        assert made[3].files.read("/home/user/app/seed.txt") == "from the original"
    finally:
        for m in made:
            m.kill()
        sb.kill()


def test_another_team_never_sees_uses_or_deletes_a_snapshot(e2b_env, other_team_key):
    sb = Sandbox.create(timeout=60)
    try:
        snap = sb.create_snapshot()
        theirs = Sandbox.list_snapshots(api_key=other_team_key).next_items()
        assert snap.snapshot_id not in [s.snapshot_id for s in theirs]
        assert Sandbox.delete_snapshot(snap.snapshot_id, api_key=other_team_key) is False
        with pytest.raises((NotFoundException, SandboxException)):
            Sandbox.create(snap.snapshot_id, api_key=other_team_key)
        with pytest.raises(SandboxException):
            Sandbox.create_snapshot(sb.sandbox_id, api_key=other_team_key)
        with pytest.raises(SandboxException):
            Sandbox.fork(sb.sandbox_id, api_key=other_team_key)
        # Nor makes a template of it (`abx snapshot to-template`): answered as for an
        # unknown snapshot, and no template of that name appears.
        with httpx.Client(base_url=e2b_env.url, headers={"X-API-KEY": other_team_key},
                          timeout=30) as rival:
            r = rival.post("/abx/v1/templates/stolen-snap/snapshot",
                           json={"snapshotID": snap.snapshot_id})
            assert r.status_code == 404 and "not found" in r.json()["message"], r.text
            assert rival.get("/abx/v1/templates/stolen-snap").status_code == 404
        assert Sandbox.delete_snapshot(snap.snapshot_id) is True
    finally:
        sb.kill()


def test_fork_copies_the_files_and_the_original_runs_on(e2b_env):
    sb = Sandbox.create(timeout=60)
    try:
        sb.files.write("/home/user/state.txt", "before the fork")
        forks = sb.fork(count=2, timeout=60)
        assert len(forks) == 2 and all(isinstance(f, Sandbox) for f in forks)
        try:
            for f in forks:
                assert f.files.read("/home/user/state.txt") == "before the fork"
            forks[0].files.write("/home/user/state.txt", "in the fork")
            assert sb.files.read("/home/user/state.txt") == "before the fork"
            assert forks[1].files.read("/home/user/state.txt") == "before the fork"
            assert sb.is_running()
        finally:
            for f in forks:
                f.kill()
        with pytest.raises(SandboxException):
            Sandbox.fork(sb.sandbox_id, count=0)
        raw = httpx.post(f"{e2b_env.url}/sandboxes/{sb.sandbox_id}/fork", json={"count": 0},
                         headers={"X-API-Key": e2b_env.api_key})
        assert raw.status_code == 400, raw.text
    finally:
        sb.kill()


def test_filesystem_only_pause_keeps_files_and_identity_and_cold_boots(e2b_env):
    sb = Sandbox.create(timeout=60)
    try:
        sb.files.write("/home/user/marker.txt", "kept")
        sleeper = sb.commands.run("sleep 600", background=True)
        before = boot_id(sb)
        assert before == boot_id(sb)
        assert sb.pause(keep_memory=False)
        assert not sb.is_running()
        assert Sandbox.get_info(sb.sandbox_id).state == SandboxState.PAUSED
        assert sb.pause(keep_memory=False) is False  # already paused: 409
        resumed = sb.connect()
        assert resumed.sandbox_id == sb.sandbox_id and resumed.is_running()
        assert resumed.files.read("/home/user/marker.txt") == "kept"
        assert boot_id(resumed) != before
        assert sleeper.pid not in [p.pid for p in resumed.commands.list()]
        # A freezer pause keeps the boot id.
        after_boot = boot_id(resumed)
        resumed.pause()
        assert Sandbox.connect(sb.sandbox_id).is_running()
        assert boot_id(resumed) == after_boot
    finally:
        sb.kill()
