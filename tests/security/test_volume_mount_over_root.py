"""A hostile image cannot have a volume mounted over the sandbox's whole root: the API refuses
the mount path "/", and an image whose mount point is a link to its root ("/data -> /",
"/data -> ../..") once got the volume stacked on the root, so the sandbox ran from the
volume's files and init made its /proc, /dev and /tmp inside the team's volume. The create
now fails naming the path, and the volume stays empty."""
from __future__ import annotations

import uuid

import pytest
from helpers import abx
from test_hostile_image import BUSYBOX, IMPORT_TIMEOUT, docker_save
from test_hostile_rootfs_links import d, own_daemon, rootfs_with_links  # noqa: F401 (fixtures)

pytestmark = pytest.mark.offline


@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox for the image's shell")
@pytest.mark.parametrize("target", ["/", "../..", "/etc/.."])
def test_a_mount_point_linked_to_the_root_is_refused(d, tmp_path, target):  # noqa: F811
    image = docker_save(tmp_path / "image.tar", [rootfs_with_links({"data": target})])
    name = f"vol-root-{uuid.uuid4().hex[:6]}"
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
            if r.status_code == 201:
                abx(d, "kill", r.json()["sandboxID"], "--yes")
            # Init's refusal (a 500, as every failure of init on a template path).
            assert r.status_code != 201 and "/data" in r.json()["message"], r.text
            listed = api.get(f"/volumecontent/{volume['volumeID']}/dir", params={"path": "/"})
            assert listed.status_code == 200 and listed.json() == [], listed.text
        finally:
            api.delete(f"/volumes/{volume['volumeID']}")
            abx(d, "template", "rm", name)
