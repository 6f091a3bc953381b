"""Volumes (E2B's volume API): a team's named directory, mounted read-write into several
sandboxes at create, that outlives them; its content API; team scoping; names; the quota;
delete refused while mounted. Driven through the real E2B Python SDK where it has the call
(Volume, Sandbox.create(volume_mounts=...)), and plain HTTP for the rest."""
from __future__ import annotations

import shutil
import uuid

import httpx
import pytest

from harness import private_state_dir, start_daemon, stop_daemon
from helpers import abx

pytestmark = pytest.mark.offline  # sandboxes from the `host` template only


@pytest.fixture
def volume(e2b):
    from e2b import Volume

    vol = Volume.create(f"vol-{uuid.uuid4().hex[:8]}")
    yield vol
    Volume.destroy(vol.volume_id)


def sandbox_with(volume_name: str, path: str = "/mnt/data"):
    from e2b import Sandbox

    return Sandbox.create("host", timeout=120, volume_mounts={path: volume_name})


def test_two_sandboxes_share_a_volume_with_the_same_owners_and_it_outlives_them(volume):
    from e2b import Sandbox

    a = sandbox_with(volume.name)
    b = sandbox_with(volume.name, "/srv/shared")
    try:
        r = a.commands.run("echo from-a > /mnt/data/note && id -u && stat -c %u:%g /mnt/data/note")
        assert r.stdout.splitlines() == ["1000", "1000:1000"]
        r = b.commands.run("cat /srv/shared/note && stat -c %u:%g /srv/shared/note")
        assert r.stdout.splitlines() == ["from-a", "1000:1000"]
        r = b.commands.run("echo root-wrote > /srv/shared/rootfile", user="root")
        assert a.commands.run("stat -c %u /mnt/data/rootfile").stdout.strip() == "0"
        info = Sandbox.get_info(a.sandbox_id)
        assert [(m["name"], m["path"]) for m in info.volume_mounts] == [(volume.name, "/mnt/data")]
    finally:
        a.kill()
        b.kill()
    # The sandboxes are gone; the files stay, with the owners the sandboxes saw.
    assert volume.read_file("/note") == "from-a\n"
    stat = volume.get_info("/note")
    assert (stat.uid, stat.gid, stat.size) == (1000, 1000, 7)
    c = sandbox_with(volume.name)
    try:
        assert c.commands.run("cat /mnt/data/note").stdout == "from-a\n"
    finally:
        c.kill()


def test_content_api_writes_what_a_sandbox_reads(volume):
    volume.make_dir("/a/b", force=True)
    volume.write_file("/a/b/f.txt", "hello", uid=0, gid=0, mode=0o600)
    names = [e.name for e in volume.list("/a")]
    assert names == ["b"]
    sb = sandbox_with(volume.name)
    try:
        r = sb.commands.run("cat /mnt/data/a/b/f.txt; echo; stat -c %u:%a /mnt/data/a/b/f.txt",
                            user="root")
        assert r.stdout.splitlines() == ["hello", "0:600"]
    finally:
        sb.kill()
    volume.remove("/a")
    assert not volume.exists("/a")


def test_a_link_a_sandbox_makes_in_a_volume_stays_inside_it(volume):
    """A sandbox can write symlinks into the volume; the content API (the daemon, host root)
    resolves them inside the volume, never on the host."""
    sb = sandbox_with(volume.name)
    try:
        sb.commands.run("ln -s /etc /mnt/data/etc-link && ln -s ../../../../etc/hostname "
                        "/mnt/data/up")
    finally:
        sb.kill()
    from e2b.exceptions import NotFoundException

    for path in ("/etc-link/passwd", "/up"):
        with pytest.raises(Exception) as caught:
            volume.read_file(path)
        assert isinstance(caught.value, NotFoundException) or "not found" in str(caught.value)
    assert volume.get_info("/etc-link").type.value == "symlink"


def test_delete_is_refused_while_mounted_then_works(e2b):
    from e2b import Volume

    vol = Volume.create(f"busy-{uuid.uuid4().hex[:8]}")
    sb = sandbox_with(vol.name)
    with e2b.api() as api:
        r = api.delete(f"/volumes/{vol.volume_id}")
        assert r.status_code == 409, r.text
        assert sb.sandbox_id in r.json()["message"]
    sb.kill()
    assert Volume.destroy(vol.volume_id) is True
    assert Volume.destroy(vol.volume_id) is False
    assert vol.name not in [v.name for v in Volume.list()]


@pytest.mark.parametrize("name", ["", "..", "a/b", "../x", ".hidden", "x" * 64, "sp ace"])
def test_bad_names_get_one_line_400(daemon, name):
    with daemon.api() as api:
        r = api.post("/volumes", json={"name": name})
    assert r.status_code == 400, r.text
    assert "\n" not in r.json()["message"] and "volume name" in r.json()["message"]


def test_names_are_unique_per_team_and_another_team_sees_none(daemon, volume):
    with daemon.api() as api:
        assert api.post("/volumes", json={"name": volume.name}).status_code == 409
        made = abx(daemon, "keys", "create", "--name", "vol-other", "--team", "vol-other")
        key = next(w for w in made.stdout.split() if w.startswith("e2b_"))
    with httpx.Client(base_url=daemon.url, headers={"X-API-KEY": key}, timeout=30) as other:
        assert other.get(f"/volumes/{volume.volume_id}").status_code == 404
        assert other.delete(f"/volumes/{volume.volume_id}").status_code == 404
        assert other.get("/volumes").json() == []
        r = other.get(f"/volumecontent/{volume.volume_id}/path", params={"path": "/"})
        assert r.status_code == 404
        r = other.post("/sandboxes", json={"templateID": "host",
                                           "volumeMounts": [{"name": volume.name, "path": "/v"}]})
        assert r.status_code == 404 and "volume" in r.json()["message"]
        # Its own volume of the same name is another volume.
        r = other.post("/volumes", json={"name": volume.name})
        assert r.status_code == 201
        assert other.delete(f"/volumes/{r.json()['volumeID']}").status_code == 204
    # The content API wants the volume's token (or a key of its team).
    r = httpx.get(f"{daemon.url}/volumecontent/{volume.volume_id}/path", params={"path": "/"},
                  headers={"Authorization": "Bearer vt_wrong"})
    assert r.status_code == 401
    r = httpx.get(f"{daemon.url}/volumecontent/{volume.volume_id}/path", params={"path": "/"},
                  headers={"Authorization": f"Bearer {volume.token}"})
    assert r.status_code == 200 and r.json()["type"] == "directory"


def test_mount_paths_are_checked(daemon, volume):
    with daemon.api() as api:
        for path in ("relative", "/", "/proc/x", "/a/../b"):
            r = api.post("/sandboxes", json={"templateID": "host",
                                             "volumeMounts": [{"name": volume.name, "path": path}]})
            assert r.status_code == 400, (path, r.text)


def test_the_quota_refuses_a_write_past_it_and_a_mount_of_a_full_volume(daemon, volume):
    team = "default"
    abx(daemon, "quota", "set", "--team", team, "--volume-mb", "1")
    try:
        from e2b.exceptions import SandboxException

        volume.write_file("/half", b"x" * (600 << 10))
        with pytest.raises(Exception) as caught:
            volume.write_file("/more", b"y" * (600 << 10))
        assert "full" in str(caught.value) or isinstance(caught.value, SandboxException)
        assert not volume.exists("/more")
        # Past the quota from inside a sandbox, which the kernel does not stop:
        sb = sandbox_with(volume.name)
        try:
            sb.commands.run("head -c 700000 /dev/zero > /mnt/data/big")
        finally:
            sb.kill()
        with daemon.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host",
                                             "volumeMounts": [{"name": volume.name, "path": "/v"}]})
            assert r.status_code == 429 and "quota" in r.json()["message"], r.text
        volume.remove("/big")
        sandbox_with(volume.name).kill()
    finally:
        abx(daemon, "quota", "set", "--team", team, "--volume-mb", "1024")


def test_the_cli_makes_mounts_lists_and_removes_a_volume(daemon):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    r = abx(daemon, "volume", "create", name)
    assert r.returncode == 0, r.stderr
    volume_id = r.stdout.strip()
    r = abx(daemon, "create", "host", "--volume", f"{name}:/work/v")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    try:
        r = abx(daemon, "exec", sandbox, "--", "sh", "-c", "echo cli > /work/v/f && cat /work/v/f")
        assert r.returncode == 0 and r.stdout == "cli\n", r.stderr
        listed = abx(daemon, "volume", "list")
        row = next(line for line in listed.stdout.splitlines() if line.startswith(name))
        assert volume_id in row and sandbox in row
        r = abx(daemon, "volume", "rm", name)
        assert r.returncode == 1 and "mounted by a sandbox" in r.stderr and sandbox in r.stderr
    finally:
        abx(daemon, "kill", sandbox, "--yes")
    r = abx(daemon, "volume", "rm", name)
    assert r.returncode == 0 and r.stdout == f"removed {name}\n", r.stderr
    assert name not in abx(daemon, "volume", "list", "-q").stdout.split()
    r = abx(daemon, "create", "host", "--volume", "no-colon")
    assert r.returncode != 0 and "NAME:/path" in r.stderr


def test_our_sdk_mounts_a_volume_by_name(daemon, volume, monkeypatch):
    from agent_sandbox.sync import Sandbox as OurSandbox

    volume.write_file("/from-e2b", "shared")
    sb = OurSandbox.create("host", volume_mounts={"/data": volume.name},
                           api_key=daemon.api_key, api_url=daemon.url)
    try:
        assert sb.commands.run("cat /data/from-e2b").stdout == "shared"
    finally:
        sb.kill()


def test_mounts_are_on_where_the_quota_is_hard_and_off_where_it_is_soft(tmp_path):
    """With no config.json, a daemon that makes volumes as loop-mounted images (a hard size
    quota) mounts them; one that cannot (not root, no /dev/loop-control) keeps plain
    directories, whose quota is soft, and mounts them only when config.json says so. The
    store and its API work either way."""
    state = private_state_dir()
    d = start_daemon(state / "state", extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            made = api.post("/volumes", json={"name": "default-mounts"})
            assert made.status_code == 201, made.text
            volume_id = made.json()["volumeID"]
            info = api.get(f"/volumes/{volume_id}").json()
            assert info["mountable"] == (info["storage"] == "image"), info
            r = api.post("/sandboxes", json={"templateID": "host", "volumeMounts": [
                {"name": "default-mounts", "path": "/data"}]})
            if info["storage"] == "image":
                assert r.status_code == 201, r.text
                assert api.delete(f"/sandboxes/{r.json()['sandboxID']}").status_code == 204
            else:
                assert r.status_code == 400, r.text
                assert '"volumes": {"mounts": true}' in r.json()["message"]
                assert api.get("/sandboxes").json() == []
            assert api.delete(f"/volumes/{volume_id}").status_code in (200, 204)
    finally:
        stop_daemon(d)
    (state / "state" / "config.json").write_text('{"volumes": {"mounts": "yes"}}')
    with pytest.raises(RuntimeError, match="daemon exited"):
        stop_daemon(start_daemon(state / "state"))
    log = (state / "state" / "daemon.log").read_text()
    assert "volumes.mounts must be true or false" in log
    shutil.rmtree(state, ignore_errors=True)
