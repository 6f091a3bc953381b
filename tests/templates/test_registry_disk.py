"""An upload may not take the templates filesystem below 10 % free (it is also the state db's
and every sandbox's); nor may a pull, whose blobs skopeo writes there (a large or hostile,
endless image filled it to the last byte). Shown on a small tmpfs as the templates dir, the
registry behind a proxy that keeps the download at a steady pace, so that a check a few times
a second sees the filesystem before the reserve is gone."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import threading
import time
from pathlib import Path

import pytest
from harness import open_loopback_registries, private_state_dir, start_daemon, stop_daemon
from helpers import stop_listening
from test_registry import REGISTRY_BIN, skopeo, start_registry, stop_registry

pytestmark = pytest.mark.skipif(
    not (Path(REGISTRY_BIN).exists() and shutil.which("skopeo")),
    reason="docker-registry and skopeo are needed: run scripts/install-deps.sh")

FS_MB = 96
BLOB_MB = 120  # incompressible: more than the whole filesystem


def blob(out: Path, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (out / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def big_layout(out: Path) -> None:
    (out / "blobs" / "sha256").mkdir(parents=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("big.bin")
        payload = os.urandom(BLOB_MB << 20)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    layer_tar = raw.getvalue()
    layer = blob(out, gzip.compress(layer_tar, compresslevel=1))
    layer["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
    config = blob(out, json.dumps({
        "architecture": "amd64", "os": "linux", "config": {},
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]}}).encode())
    config["mediaType"] = "application/vnd.oci.image.config.v1+json"
    manifest = blob(out, json.dumps({"schemaVersion": 2, "config": config,
                                     "layers": [layer]}).encode())
    manifest["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    manifest["annotations"] = {"org.opencontainers.image.ref.name": "1"}
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [manifest]}))
    (out / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')


class SlowProxy:
    """Forwards a loopback port to the registry, its answers at about `rate` bytes a second."""

    def __init__(self, upstream: str, rate: int):
        self.upstream, self.rate = upstream, rate
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client: socket.socket) -> None:
        host, port = self.upstream.split(":")
        server = socket.create_connection((host, int(port)))

        def answers() -> None:
            try:
                while data := server.recv(65536):
                    client.sendall(data)
                    time.sleep(len(data) / self.rate)
            except OSError:
                pass
            client.close()
            server.close()

        threading.Thread(target=answers, daemon=True).start()
        try:
            while data := client.recv(65536):
                server.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        stop_listening(self.listener, self.thread)


def test_a_pull_keeps_the_uploads_free_space_reserve(tmp_path):
    registry = start_registry(tmp_path / "registry", auth=False)
    state = private_state_dir("abx-regdisk-")
    templates = state / "templates"
    templates.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_MB}m", "tmpfs", str(templates)],
                   check=True)
    d = None
    try:
        big_layout(tmp_path / "layout")
        ref = f"{registry.host}/big/image:1"
        pushed = skopeo("copy", "--dest-tls-verify=false", f"oci:{tmp_path / 'layout'}:1",
                        f"docker://{ref}")
        assert pushed.returncode == 0, pushed.stderr
        proxy = SlowProxy(registry.host, rate=20 << 20)
        ref = f"{proxy.host}/big/image:1"
        open_loopback_registries(state / "state")
        d = start_daemon(state / "state", shared_templates=False,
                         extra_args=("--templates-dir", str(templates), "--warm-pool", "0"))
        least_free = [1.0]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                vfs = os.statvfs(templates)
                least_free[0] = min(least_free[0], vfs.f_bavail / vfs.f_blocks)
                done.wait(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with d.api() as api:
                r = api.post("/abx/v1/templates/big/pull", json={"ref": ref, "insecure": True},
                             timeout=300)
        finally:
            done.set()
            watcher.join()
        assert '"error"' in r.text, "the image is larger than the filesystem"
        assert "under 10 % free" in r.text.strip().splitlines()[-1], r.text[-400:]
        assert least_free[0] >= 0.05, (
            f"the pull left {least_free[0]:.1%} of the templates filesystem free: {r.text[-300:]}")
        assert not [p for p in templates.iterdir() if p.name.startswith(".building")]
        assert d.proc.poll() is None
        proxy.close()
    finally:
        if d:
            stop_daemon(d)
        subprocess.run(["umount", "-l", str(templates)], check=False)
        stop_registry(registry)
        shutil.rmtree(state, ignore_errors=True)
