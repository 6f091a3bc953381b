"""A hostile image cannot turn a volume's mount point into a way onto the host: its mount
path is resolved inside the new root (openat2 RESOLVE_IN_ROOT), so an image whose /data is a
link to /oldroot/<host dir>, a `../..` chain out of /newroot or a /proc/self/root path gets the
volume mounted inside its own root (or the create fails naming the path), and the host dir
stays as it was. What the sandbox writes at the mount point lands in the volume."""
from __future__ import annotations

import uuid

import pytest
from helpers import abx
from test_hostile_image import BUSYBOX, IMPORT_TIMEOUT, docker_save, snapshot
from test_hostile_rootfs_links import (STYLES, d, host_dir, own_daemon,  # noqa: F401 (fixtures)
                                      rootfs_with_links, sandbox_root_uid)

pytestmark = pytest.mark.offline

# (style, reached): a link inside the root is followed there, so the sandbox reaches the
# volume through it. /proc is not mounted yet when volumes are: /proc/self/root/... is made
# as plain dirs under the image's /proc, which the kernel's /proc then hides (the sandbox
# starts, its /data leads nowhere, the host is untouched).
CASES = [("oldroot", True), ("dotdot", True), ("host-proc", True), ("proc-self-root", False)]


@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox for the image's shell")
@pytest.mark.parametrize("style, reached", CASES, ids=[s for s, _ in CASES])
def test_a_linked_mount_point_keeps_the_volume_inside_the_sandbox(d, host_dir, tmp_path, style,
                                                                   reached):
    before = snapshot(host_dir)
    target = STYLES[style].format(host=host_dir)
    image = docker_save(tmp_path / "image.tar", [rootfs_with_links({"data": target})])
    name = f"vol-links-{style}"
    r = abx(d, "template", "import", str(image), "--name", name, timeout=IMPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    with d.api() as api:
        made = api.post("/volumes", json={"name": f"v-{uuid.uuid4().hex[:8]}"})
        assert made.status_code == 201, made.text
        volume = made.json()
        try:
            r = api.post("/sandboxes", json={
                "templateID": name, "secure": False,
                "volumeMounts": [{"name": volume["name"], "path": "/data"}]})
            assert r.status_code == 201, r.text
            sandbox = r.json()["sandboxID"]
            run = abx(d, "exec", sandbox, "--", "/bin/sh", "-c",
                      "echo inside > /data/probe && cat /data/probe")
            abx(d, "kill", sandbox, "--yes")
            got = api.get(f"/volumecontent/{volume['volumeID']}/file", params={"path": "/probe"})
            if reached:
                assert run.returncode == 0 and run.stdout == "inside\n", run.stderr
                assert got.status_code == 200 and got.text == "inside\n"
            else:
                assert run.returncode != 0 and got.status_code == 404
            assert snapshot(host_dir) == before
        finally:
            api.delete(f"/volumes/{volume['volumeID']}")
            abx(d, "template", "rm", name)
    assert [p.name for p in host_dir.iterdir()] == ["owned"]
    assert not list((host_dir / "owned").iterdir())
