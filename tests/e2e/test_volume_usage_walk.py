"""A volume's usage walk (usedBytes, the quota) stays inside the volume while its sandbox
races it: a directory swapped for a link to a host dir between the walk listing it and
measuring its files once made the daemon lstat host files by their full path and count them."""
from __future__ import annotations

import os
import uuid

import pytest

pytestmark = pytest.mark.offline  # sandboxes from the `host` template only

FILES = 300
HOST_FILE_BYTES = 4 << 20
SWAPPER = """
import os, time
os.chdir('/mnt/data')
end = time.time() + 60
while time.time() < end and not os.path.exists('stop'):
    os.rename('a', 'x'); os.symlink({host!r}, 'a'); os.unlink('a'); os.rename('x', 'a')
"""


@pytest.fixture
def volume(e2b):
    from e2b import Volume

    vol = Volume.create(f"walk-{uuid.uuid4().hex[:8]}")
    yield vol
    Volume.destroy(vol.volume_id)


def test_a_dir_swapped_for_a_host_link_is_not_measured(daemon, volume, tmp_path):
    from e2b import Sandbox

    host = tmp_path / "host"
    host.mkdir()
    (host / "big").write_bytes(os.urandom(HOST_FILE_BYTES))
    for i in range(FILES):
        os.link(host / "big", host / f"f{i}")
    sb = Sandbox.create("host", timeout=120, volume_mounts={"/mnt/data": volume.name})
    try:
        sb.commands.run(f"mkdir /mnt/data/a && cd /mnt/data/a && touch $(seq -f f%g 0 {FILES - 1})")
        sb.files.write("/tmp/swap.py", SWAPPER.replace("{host!r}", repr(str(host))))
        swapper = sb.commands.run("python3 /tmp/swap.py", background=True)
        seen = []
        with daemon.api() as api:
            for _ in range(200):
                r = api.get(f"/volumes/{volume.volume_id}")
                assert r.status_code == 200, r.text
                seen.append(r.json()["usedBytes"])
        sb.commands.run("touch /mnt/data/stop")
        swapper.wait()
        assert max(seen) < HOST_FILE_BYTES, f"host files counted: {max(seen)} bytes"
    finally:
        sb.kill()


def test_a_file_as_deep_as_a_path_can_go_is_counted(daemon, volume):
    """The walk is bounded in depth, but below any path the content API takes (4096 bytes)."""
    deep = "/d" * 2000
    volume.make_dir(deep, force=True)
    volume.write_file(f"{deep}/f", os.urandom(1 << 20))
    with daemon.api() as api:
        used = api.get(f"/volumes/{volume.volume_id}").json()["usedBytes"]
    assert used >= 1 << 20
