"""Review: a build whose context has a commands.py gets the in-sandbox server as its start
command, decided by fs::is_regular_file(context / "commands.py") on the daemon's host, as
root: a commands.py that is a symlink (COPY copies it as one) is followed on the host, so
the template's startCmd tells an API caller whether any host path is a regular file."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest
from harness import start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # an image archive in the context: nothing to build first


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def tiny_image() -> bytes:
    """An OCI layout tar with one layer holding /app (so COPY has somewhere to go)."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as layer:
        info = tarfile.TarInfo("app")
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        layer.addfile(info)
    layer_tar = raw.getvalue()
    layer = blob(layer_tar, "application/vnd.oci.image.layer.v1.tar")
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


def context_tar(target: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        add(tar, "Sandboxfile", b"FROM ./image.tar\nCOPY commands.py /app/commands.py\n")
        add(tar, "image.tar", tiny_image())
        link = tarfile.TarInfo("commands.py")
        link.type = tarfile.SYMTYPE
        link.linkname = target
        tar.addfile(link)
    return out.getvalue()


def start_cmd_of(d, name: str, target: str) -> str:
    with d.api() as api:
        r = api.post(f"/abx/v1/templates/{name}/build", content=context_tar(target),
                     headers={"Content-Type": "application/x-tar"}, timeout=300)
        assert r.status_code == 200, r.text
        assert '"error"' not in r.text, r.text
        info = api.get(f"/abx/v1/templates/{name}")
        assert info.status_code == 200, info.text
        return info.json()["startCmd"]


def test_a_commands_py_symlink_tells_nothing_of_the_hosts_files(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        present = start_cmd_of(d, "link-present", "/etc/shadow")
        absent = start_cmd_of(d, "link-absent", "/etc/no-such-file-here")
        assert present == absent, f"/etc/shadow exists on the host, says startCmd {present!r}"
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)
