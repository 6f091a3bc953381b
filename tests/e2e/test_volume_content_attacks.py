"""What a sandbox plants in a volume, and what an API caller sends to its content API, stays
inside that volume: a FIFO answers at once (the daemon never blocks opening it), links to host
files or to another volume's host dir resolve inside the volume, `..` and encoded paths never
climb out, a NUL is refused, one volume's token opens no other, owners stay in the sandboxes'
range, and a hard link to a file outside the volume cannot be made."""
from __future__ import annotations

import os
import uuid

import httpx
import pytest

pytestmark = pytest.mark.offline  # sandboxes from the `host` template only


@pytest.fixture
def two_volumes(e2b):
    from e2b import Volume

    vols = [Volume.create(f"atk-{uuid.uuid4().hex[:8]}") for _ in range(2)]
    yield vols
    for vol in vols:
        Volume.destroy(vol.volume_id)


def content(daemon, vol, verb: str, path: str, token: str | None = None, **kwargs):
    headers = {"Authorization": f"Bearer {token or vol.token}"}
    return httpx.request(verb, f"{daemon.url}/volumecontent/{vol.volume_id}/{path}",
                         headers=headers, timeout=20, **kwargs)


def test_what_a_sandbox_plants_is_read_inside_the_volume(e2b, two_volumes):
    from e2b import Sandbox

    a, b = two_volumes
    b_dir = e2b.data_dir / "volumes" / b.volume_id / "data"
    b.write_file("/secret", "of-b")
    sb = Sandbox.create("host", timeout=120, volume_mounts={"/mnt/data": a.name})
    try:
        r = sb.commands.run(
            "cd /mnt/data && mkfifo fifo && ln -s /etc/shadow shadow && "
            f"ln -s {b_dir} other && ln -s {b_dir}/secret other-secret && "
            "(ln /etc/hostname hard 2>&1 || true)")
        assert "hard" not in sb.commands.run("ls /mnt/data").stdout.split()
        assert "cross-device" in r.stdout or "Invalid cross-device" in r.stdout, r.stdout
    finally:
        sb.kill()
    r = content(e2b, a, "GET", "file", params={"path": "/fifo"})
    assert r.status_code == 400, r.text
    for path in ("/shadow", "/other/secret", "/other-secret", "/../../../etc/hostname",
                 f"{b_dir}/secret"):
        r = content(e2b, a, "GET", "file", params={"path": path})
        assert r.status_code == 404, (path, r.status_code, r.text)
    raw = f"{e2b.url}/volumecontent/{a.volume_id}/file?path=/%2e%2e/%2E%2E/etc/hostname"
    r = httpx.get(raw, headers={"Authorization": f"Bearer {a.token}"}, timeout=20)
    assert r.status_code == 404, r.text
    r = content(e2b, a, "GET", "file", params={"path": "/a\0b"})
    assert r.status_code == 400
    # A write through a planted link replaces the link; nothing lands in volume b.
    r = content(e2b, a, "PUT", "file", params={"path": "/other-secret", "force": "true"},
                content=b"from-a")
    assert r.status_code == 201, r.text
    assert (b_dir / "secret").read_text() == "of-b"


def test_one_volumes_token_opens_no_other(e2b, two_volumes):
    a, b = two_volumes
    r = content(e2b, b, "GET", "path", token=a.token, params={"path": "/"})
    assert r.status_code == 401
    r = content(e2b, b, "PUT", "file", token=a.token, params={"path": "/x"}, content=b"x")
    assert r.status_code == 401


def test_owners_and_modes_stay_in_the_sandboxes_range(e2b, two_volumes):
    a, _ = two_volumes
    r = content(e2b, a, "PUT", "file", params={"path": "/suid", "uid": "0", "mode": str(0o4755)},
                content=b"#!/bin/sh\n")
    assert r.status_code == 201, r.text
    host = os.stat(e2b.data_dir / "volumes" / a.volume_id / "data" / "suid")
    assert host.st_uid != 0 and host.st_gid != 0
    for body in ({"uid": 70000}, {"gid": 1 << 31}, {"mode": 0o10000}, {"uid": -1}):
        r = content(e2b, a, "PATCH", "path", params={"path": "/suid"}, json=body)
        assert r.status_code == 400, (body, r.text)
    assert os.stat(e2b.data_dir / "volumes" / a.volume_id / "data" / "suid").st_uid == host.st_uid


def test_mount_lists_that_reach_kernel_trees_or_are_too_long_are_refused(e2b, two_volumes):
    a, _ = two_volumes
    with e2b.api() as api:
        for path in ("/dev", "/sys/x", "/proc", "/etc/..", "//", "/./", "/x\0y"):
            r = api.post("/sandboxes", json={"templateID": "host",
                                             "volumeMounts": [{"name": a.name, "path": path}]})
            assert r.status_code == 400, (path, r.text)
        many = [{"name": a.name, "path": f"/m{i}"} for i in range(17)]
        r = api.post("/sandboxes", json={"templateID": "host", "volumeMounts": many})
        assert r.status_code == 400 and "16" in r.json()["message"], r.text


def test_the_same_volume_twice_is_one_directory(e2b, two_volumes):
    from e2b import Sandbox

    a, _ = two_volumes
    sb = Sandbox.create("host", timeout=120, volume_mounts={"/v1": a.name, "/v2": a.name})
    try:
        r = sb.commands.run("echo same > /v1/f && cat /v2/f")
        assert r.stdout == "same\n"
    finally:
        sb.kill()
