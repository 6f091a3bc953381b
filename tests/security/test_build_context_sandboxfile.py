"""An uploaded build context is the caller's: its Sandboxfile may be a FIFO (reading it
blocked the build forever, holding its upload dir) or a sparse file of a gigabyte or a
terabyte that the tar describes in a few hundred bytes (it was read whole into the daemon's
memory). Either build ends with a one-line error naming the Sandboxfile, and the daemon
stays up. So does one whose context holds a sparse file of more bytes than the disk has
free (COPY hashed, then copied, every one of its terabytes of zeros)."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile

import httpx
import pytest
from harness import start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the build is refused before anything is built

# Far above the few ms a refusal takes: tells "ends" from "hangs".
BUILD_BOUND = 120
# Less than any test disk has free (so it is unpacked), far more than a Sandboxfile needs.
SPARSE_SIZE = 1 << 30


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def tiny_image() -> bytes:
    """An OCI layout tar with one empty layer."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w"):
        pass
    layer = blob(raw.getvalue(), "application/vnd.oci.image.layer.v1.tar")
    config = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                              "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}
                             ).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = blob(json.dumps({"schemaVersion": 2, "config": config, "layers": [layer]}
                               ).encode(), "application/vnd.oci.image.manifest.v1+json")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        add(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add(tar, "index.json", json.dumps({"schemaVersion": 2, "manifests": [manifest]}).encode())
        for digest, data in blobs.items():
            add(tar, f"blobs/sha256/{digest}", data)
    return out.getvalue()


def sparse_member(name: str, size: int) -> tuple[tarfile.TarInfo, bytes]:
    """A PAX 1.0 sparse member: its map (one byte, at the end) is all the data it carries."""
    sparse_map = f"1\n{size - 1}\n1\n".encode().ljust(512, b"\0")
    data = sparse_map + b"x"
    info = tarfile.TarInfo(f"GNUSparseFile.0/{name}")
    info.size, info.mode = len(data), 0o644
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                        "GNU.sparse.name": name, "GNU.sparse.realsize": str(size)}
    return info, data


def fifo_context() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("Sandboxfile")
        info.type, info.mode = tarfile.FIFOTYPE, 0o644
        tar.addfile(info)
    return out.getvalue()


def sparse_context() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info, data = sparse_member("Sandboxfile", SPARSE_SIZE)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def sparse_copy_context(size: int) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "Sandboxfile", b"FROM ./image.tar\nCOPY big /big\n")
        add(tar, "image.tar", tiny_image())
        info, data = sparse_member("big", size)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    state = tmp_path_factory.mktemp("build-context")
    daemon = start_daemon(state / "state", shared_templates=False,
                          extra_args=("--templates-dir", str(state / "templates"),
                                      "--warm-pool", "0"))
    yield daemon
    stop_daemon(daemon)


@pytest.mark.parametrize("context, why", [(fifo_context, "not a regular file"),
                                           (sparse_context, "1 MiB")], ids=["fifo", "sparse"])
def test_a_sandboxfile_that_is_a_fifo_or_huge_is_refused(d, context, why):
    with d.api() as api:
        r = api.post("/abx/v1/templates/hostile-context/build", content=context(),
                     headers={"Content-Type": "application/x-tar"}, timeout=BUILD_BOUND)
    assert '"error"' in r.text, r.text
    assert "Sandboxfile" in r.text and why in r.text, r.text
    assert d.proc.poll() is None, "the daemon died"
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204


def test_a_context_file_bigger_than_the_free_disk_is_refused(d):
    free = shutil.disk_usage(d.data_dir.parent).free  # the templates dir is beside it
    size = min(max(free * 2, 1 << 40), 8 << 40)  # below ext4's 16 TiB, above what is free
    assert size > free, "the disk has more than 8 TiB free: this test cannot tell"
    with d.api() as api:
        r = api.post("/abx/v1/templates/hostile-sparse-copy/build",
                     content=sparse_copy_context(size),
                     headers={"Content-Type": "application/x-tar"}, timeout=BUILD_BOUND)
    assert '"error"' in r.text, r.text
    assert "'big'" in r.text and "free" in r.text, r.text
    assert d.proc.poll() is None, "the daemon died"
