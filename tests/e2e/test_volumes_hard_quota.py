"""A volume's size quota is hard: each volume is an ext4 image of the team's maxVolumeMB,
loop-mounted by the daemon, so a sandbox writing past it gets ENOSPC from the kernel and the
volume's other files stay whole. Mounts are on by default where the daemon can loop-mount;
delete is refused while a sandbox mounts the volume and detaches the image's loop device
after; a daemon SIGKILLed and started again adopts its mounts, and one that stops leaves no
loop device of its volumes behind."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx

pytestmark = [
    pytest.mark.offline,  # sandboxes from the `host` template only
    pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/loop-control").exists()
                       or shutil.which("mkfs.ext4") is None,
                       reason="volume images need a root daemon, /dev/loop-control and mkfs.ext4"),
]


def loops_of(data_dir: Path) -> list[str]:
    """`losetup -a` lines whose backing file is under `data_dir`: this test's own only."""
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if str(data_dir) in line]


def mounts_of(data_dir: Path) -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines()
            if str(data_dir) in line]


@pytest.fixture
def d():
    """A daemon of the test's own, with no config.json: mounts are on by default."""
    state = private_state_dir()
    holder = {"d": start_daemon(state / "state", extra_args=("--warm-pool", "0"))}
    yield holder
    daemon = holder["d"]
    if daemon.proc.poll() is not None:  # ended while no daemon ran: one more kills its sandboxes
        daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    stop_daemon(daemon)
    assert loops_of(state) == [], "a stopped daemon leaves no loop device of its volumes"
    assert mounts_of(state) == []
    shutil.rmtree(state, ignore_errors=True)


def new_volume(daemon: Daemon) -> dict:
    with daemon.api() as api:
        made = api.post("/volumes", json={"name": f"v-{uuid.uuid4().hex[:8]}"})
        assert made.status_code == 201, made.text
        return made.json()


def create_with(daemon: Daemon, name: str, path: str = "/data") -> str:
    r = abx(daemon, "create", "host", "--volume", f"{name}:{path}")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def sh(daemon: Daemon, sandbox: str, script: str):
    return abx(daemon, "exec", sandbox, "--", "sh", "-c", script)


def test_a_sandbox_writing_past_the_quota_gets_enospc_and_the_other_files_stay(d):
    daemon = d["d"]
    assert abx(daemon, "quota", "set", "--team", "default", "--volume-mb", "8").returncode == 0
    volume = new_volume(daemon)
    with daemon.api() as api:
        info = api.get(f"/volumes/{volume['volumeID']}").json()
        assert (info["storage"], info["mountable"]) == ("image", True), info
        r = api.put(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/keep"},
                    content=b"kept\n")
        assert r.status_code == 201, r.text
    sandbox = create_with(daemon, volume["name"])
    try:
        r = sh(daemon, sandbox, "head -c 4000000 /dev/urandom > /data/mid && echo ok")
        assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
        # 20 MB into an 8 MB volume: the kernel stops it, whatever the daemon checks.
        r = sh(daemon, sandbox, "dd if=/dev/zero of=/data/big bs=1M count=20 2>&1; echo rc=$?")
        assert "No space left on device" in r.stdout, r.stdout
        assert "rc=0" not in r.stdout
        r = sh(daemon, sandbox, "du -sm /data | cut -f1")
        assert int(r.stdout) <= 8, r.stdout
        r = sh(daemon, sandbox, "rm /data/big && cat /data/keep && wc -c < /data/mid")
        assert r.stdout.split() == ["kept", "4000000"], (r.stdout, r.stderr)
    finally:
        abx(daemon, "kill", sandbox, "--yes")
    # The content API reads through the image's mount, with no sandbox mounting it.
    with daemon.api() as api:
        r = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/keep"})
        assert r.status_code == 200 and r.content == b"kept\n", r.text
        names = [e["name"] for e in
                 api.get(f"/volumecontent/{volume['volumeID']}/dir", params={"path": "/"}).json()]
        assert sorted(names) == ["keep", "mid"]  # no lost+found of the filesystem's


def test_a_raised_quota_grows_the_image_at_the_next_mount(d):
    daemon = d["d"]
    assert abx(daemon, "quota", "set", "--team", "default", "--volume-mb", "8").returncode == 0
    volume = new_volume(daemon)
    assert abx(daemon, "quota", "set", "--team", "default", "--volume-mb", "32").returncode == 0
    sandbox = create_with(daemon, volume["name"])
    try:
        r = sh(daemon, sandbox, "head -c 20000000 /dev/zero > /data/f && echo ok")
        assert r.stdout == "ok\n", r.stderr
        r = sh(daemon, sandbox, "head -c 20000000 /dev/zero > /data/g; echo rc=$?")
        assert "No space left on device" in r.stderr and "rc=0" not in r.stdout, r.stderr
    finally:
        abx(daemon, "kill", sandbox, "--yes")
    row = next(line for line in abx(daemon, "volume", "list").stdout.splitlines()
               if line.startswith(volume["name"]))
    assert "hard" in row, row


def test_two_sandboxes_share_it_and_delete_waits_for_them_then_detaches_the_loop(d):
    daemon = d["d"]
    volume = new_volume(daemon)
    assert len(loops_of(daemon.data_dir)) == 1
    a = create_with(daemon, volume["name"])
    b = create_with(daemon, volume["name"], "/srv/v")
    try:
        assert sh(daemon, a, "echo from-a > /data/note").returncode == 0
        assert sh(daemon, b, "cat /srv/v/note").stdout == "from-a\n"
        with daemon.api() as api:
            r = api.delete(f"/volumes/{volume['volumeID']}")
            assert r.status_code == 409 and "mounted by a sandbox" in r.json()["message"], r.text
    finally:
        abx(daemon, "kill", a, b, "--yes")
    with daemon.api() as api:
        assert api.delete(f"/volumes/{volume['volumeID']}").status_code == 204
    assert loops_of(daemon.data_dir) == []
    assert mounts_of(daemon.data_dir / "volumes") == []
    assert not (daemon.data_dir / "volumes" / volume["volumeID"]).exists()


def test_a_daemon_killed_and_started_again_adopts_its_mounts(d):
    daemon = d["d"]
    volume = new_volume(daemon)
    sandbox = create_with(daemon, volume["name"])
    assert sh(daemon, sandbox, "echo before > /data/f").returncode == 0
    before = loops_of(daemon.data_dir)
    assert len(before) == 1
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    d["d"] = daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    assert loops_of(daemon.data_dir) == before, "adopted, not attached twice"
    # The sandbox that outlived the daemon and the content API see one filesystem.
    assert sh(daemon, sandbox, "echo after >> /data/f").returncode == 0
    with daemon.api() as api:
        r = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/f"})
        assert r.content == b"before\nafter\n", r.text
    # Stopped while the sandbox runs: its bind keeps the loop device, which the next
    # daemon mounts again rather than attaching the image to a second one.
    stop_daemon(daemon, kill_sandboxes=False)
    assert loops_of(daemon.data_dir) == before
    assert mounts_of(daemon.data_dir / "volumes") == []
    d["d"] = daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    assert loops_of(daemon.data_dir) == before
    assert sh(daemon, sandbox, "echo again >> /data/f").returncode == 0
    with daemon.api() as api:
        r = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/f"})
        assert r.content == b"before\nafter\nagain\n", r.text
    abx(daemon, "kill", sandbox, "--yes")
    # Stopped with no sandbox left, then started: the image mounts again, alone.
    stop_daemon(daemon)
    assert loops_of(daemon.data_dir) == []
    d["d"] = daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    assert len(loops_of(daemon.data_dir)) == 1
    with daemon.api() as api:
        r = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/f"})
        assert r.content == b"before\nafter\nagain\n", r.text


def test_mounts_off_in_config_json_refuse_the_mount(tmp_path):
    state = private_state_dir()
    (state / "state").mkdir()
    (state / "state" / "config.json").write_text('{"volumes": {"mounts": false}}')
    daemon = start_daemon(state / "state", extra_args=("--warm-pool", "0"))
    try:
        volume = new_volume(daemon)
        r = abx(daemon, "create", "host", "--volume", f"{volume['name']}:/data")
        assert r.returncode != 0 and '"volumes": {"mounts": true}' in r.stderr, r.stderr
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)


def test_a_volume_kept_as_a_plain_directory_is_served_but_mounts_only_with_the_switch(d):
    """A volume from before images (a plain data/ directory) keeps its files and its content
    API; its quota is soft, so a create refuses to mount it unless config.json says so."""
    daemon = d["d"]
    volume = new_volume(daemon)
    home = daemon.data_dir / "volumes" / volume["volumeID"]
    owner = os.stat(home / "data")  # the image's root: the shared range's user
    stop_daemon(daemon)
    # What an older daemon left: data/ a directory of that user, no image.
    (home / "image").unlink()
    (home / "data" / "old").write_text("from before\n")
    for path in (home / "data", home / "data" / "old"):
        os.chown(path, owner.st_uid, owner.st_gid)
    d["d"] = daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    with daemon.api() as api:
        info = api.get(f"/volumes/{volume['volumeID']}").json()
        assert (info["storage"], info["mountable"]) == ("directory", False), info
        r = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/old"})
        assert r.status_code == 200 and r.content == b"from before\n", r.text
    r = abx(daemon, "create", "host", "--volume", f"{volume['name']}:/data")
    assert r.returncode != 0 and "plain directory" in r.stderr, r.stderr
    assert '"volumes": {"mounts": true}' in r.stderr
    stop_daemon(daemon)
    (daemon.data_dir / "config.json").write_text('{"volumes": {"mounts": true}}')
    d["d"] = daemon = start_daemon(daemon.data_dir, extra_args=("--warm-pool", "0"))
    sandbox = create_with(daemon, volume["name"])
    try:
        assert sh(daemon, sandbox, "cat /data/old").stdout == "from before\n"
    finally:
        abx(daemon, "kill", sandbox, "--yes")
