"""`abx template import`: an OCI image layout made here with umoci (two layers, the second
whiting out a file of the first) and the same image as a `docker save` tar become templates
whose processes start in the image's working dir, as its user, with its env."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx, sandbox

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static: runs without any library
APPLETS = ("sh", "cat", "ls", "pwd", "env", "id")
TAG = "t"
IMPORT_TIMEOUT = 300


@dataclass
class Image:
    layout: Path  # an OCI image layout whose tag TAG is the image
    docker_tar: Path  # the same image as `docker save` writes it


def umoci(*args: str | Path) -> None:
    r = subprocess.run(["umoci", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"umoci {' '.join(map(str, args))}: {r.stderr}"


def add_layer(layout: Path, bundle: Path, change: Callable[[Path], None]) -> None:
    """Unpacks the image, lets `change` edit its rootfs, repacks: the image gets one more layer."""
    umoci("unpack", "--rootless", "--image", f"{layout}:{TAG}", bundle)
    change(bundle / "rootfs")
    umoci("repack", "--image", f"{layout}:{TAG}", bundle)
    shutil.rmtree(bundle)


def lower_layer(rootfs: Path) -> None:
    (rootfs / "bin").mkdir()
    shutil.copy2(BUSYBOX, rootfs / "bin" / "busybox")
    for applet in APPLETS:
        (rootfs / "bin" / applet).symlink_to("busybox")
    # No bash: `abx exec` falls back to /bin/sh (issue 16, item 10).
    (rootfs / "etc").mkdir()
    (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (rootfs / "etc" / "group").write_text("root:x:0:\n")
    (rootfs / "root").mkdir(mode=0o700)
    (rootfs / "tmp").mkdir()
    (rootfs / "tmp").chmod(0o1777)
    (rootfs / "etc" / "layer1.txt").write_text("from layer one\n")
    (rootfs / "etc" / "doomed.txt").write_text("whited out by layer two\n")


def upper_layer(rootfs: Path) -> None:
    (rootfs / "etc" / "doomed.txt").unlink()  # umoci writes this as etc/.wh.doomed.txt
    (rootfs / "etc" / "layer2.txt").write_text("from layer two\n")
    (rootfs / "data").mkdir()


def blob(layout: Path, digest: str) -> bytes:
    algorithm, hex_digest = digest.split(":")
    return (layout / "blobs" / algorithm / hex_digest).read_bytes()


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def docker_save_tar(layout: Path, out: Path) -> Path:
    """Writes the layout's image as `docker save` did before docker 25: manifest.json,
    <hex>.json for the config and <hex>/layer.tar (uncompressed) for each layer."""
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads(blob(layout, index["manifests"][0]["digest"]))
    config = blob(layout, manifest["config"]["digest"])
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    layer_names = []
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, config_name, config)
        for layer in manifest["layers"]:
            data = blob(layout, layer["digest"])
            if layer["mediaType"].endswith("+gzip"):
                data = gzip.decompress(data)
            name = f"{hashlib.sha256(data).hexdigest()}/layer.tar"
            add_bytes(tar, name, data)
            layer_names.append(name)
        saved = [{"Config": config_name, "RepoTags": ["abx-import-test:latest"],
                  "Layers": layer_names}]
        add_bytes(tar, "manifest.json", json.dumps(saved).encode())
    return out


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Image:
    if shutil.which("umoci") is None or not BUSYBOX.exists():
        pytest.fail("umoci and busybox-static are needed: run scripts/install-deps.sh")
    work = tmp_path_factory.mktemp("image")
    layout = work / "layout"
    umoci("init", "--layout", layout)
    umoci("new", "--image", f"{layout}:{TAG}")
    add_layer(layout, work / "bundle", lower_layer)
    add_layer(layout, work / "bundle", upper_layer)
    umoci("config", "--image", f"{layout}:{TAG}", "--config.env", "FOO=bar",
          "--config.workingdir", "/data", "--config.user", "0")
    return Image(layout=layout, docker_tar=docker_save_tar(layout, work / "image.tar"))


def import_template(daemon: Daemon, source: Path, name: str) -> Iterator[str]:
    r = abx(daemon, "template", "import", str(source), "--name", name, timeout=IMPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"^imported {re.escape(name)} \(", r.stdout + r.stderr, re.M), r.stdout
    yield name
    abx(daemon, "template", "rm", name)


@pytest.fixture(scope="module")
def oci_template(template_daemon: Daemon, image: Image) -> Iterator[str]:
    yield from import_template(template_daemon, image.layout, "imported-oci")


@pytest.fixture(scope="module")
def docker_template(template_daemon: Daemon, image: Image) -> Iterator[str]:
    yield from import_template(template_daemon, image.docker_tar, "imported-docker")


# Printed as key=value lines, so one exec answers every question about the sandbox.
PROBE = "; ".join([
    'echo "layer1=$(cat /etc/layer1.txt)"',
    'echo "layer2=$(cat /etc/layer2.txt)"',
    'echo "etc=" $(ls -A /etc)',  # unquoted: one line of names
    'echo "pwd=$(pwd)"',
    'echo "foo=$FOO"',
    'echo "uid=$(id -u)"',
])


def probe(daemon: Daemon, template: str) -> dict[str, str]:
    """What a process started without --cwd or --user sees in a sandbox of `template`."""
    with sandbox(daemon, template) as sandbox_id:
        r = abx(daemon, "exec", sandbox_id, "--", "sh", "-c", PROBE)
    assert r.returncode == 0, r.stderr
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def assert_is_the_image(seen: dict[str, str]) -> None:
    assert seen["layer1"] == "from layer one"
    assert seen["layer2"] == "from layer two"
    etc = set(seen["etc"].split())
    assert {"layer1.txt", "layer2.txt"} <= etc
    assert "doomed.txt" not in etc, "the second layer's whiteout must delete the file"
    assert ".wh.doomed.txt" not in etc, "whiteout markers must not show up as files"
    assert seen["pwd"] == "/data"
    assert seen["foo"] == "bar"
    assert seen["uid"] == "0"


def test_oci_layout_imports_its_layers_and_config(template_daemon, oci_template):
    assert_is_the_image(probe(template_daemon, oci_template))


def test_docker_save_tar_imports_the_same_image(template_daemon, docker_template):
    assert_is_the_image(probe(template_daemon, docker_template))


def test_an_imported_image_keeps_no_new_privs(template_daemon, oci_template):
    """An image cannot opt in to set-id programs (only a checked-in spec.toml can, as
    base's does for sudo): every process of an imported template has no_new_privs, so a
    set-uid binary an image ships (pkexec, sudo) runs as its caller."""
    with sandbox(template_daemon, oci_template) as sandbox_id:
        r = abx(template_daemon, "exec", sandbox_id, "--", "cat", "/proc/self/status")
    assert r.returncode == 0, r.stderr
    assert "NoNewPrivs:\t1" in r.stdout.splitlines(), r.stdout


def test_imported_template_is_listed_and_inspect_shows_its_config(template_daemon, oci_template):
    listed = json.loads(abx(template_daemon, "template", "list", "--json").stdout)
    assert oci_template in {t["name"] for t in listed}
    assert oci_template in abx(template_daemon, "template", "list").stdout
    r = abx(template_daemon, "template", "inspect", oci_template)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["name"] == oci_template
    assert info["source"], "inspect should say where the template came from"
    assert info["sizeBytes"] >= BUSYBOX.stat().st_size
    assert info["env"]["FOO"] == "bar"
    assert info["workdir"] == "/data"
    assert info["user"] == "0"
    assert info["owner"] == "default", "the importing key's team owns the template"


@pytest.mark.offline
def test_bad_paths_fail_with_a_one_line_error_and_list_nothing(template_daemon, tmp_path):
    absent = tmp_path / "no-such-image.tar"
    r = abx(template_daemon, "template", "import", str(absent), "--name", "bad-import")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(absent) in r.stderr

    not_an_image = tmp_path / "empty-dir"
    not_an_image.mkdir()
    r = abx(template_daemon, "template", "import", str(not_an_image), "--name", "bad-import")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert str(not_an_image) in last and "index.json" in last and "manifest.json" in last, r.stderr

    listed = json.loads(abx(template_daemon, "template", "list", "--json").stdout)
    assert "bad-import" not in {t["name"] for t in listed}


def test_sandboxfile_builds_from_an_image_archive(template_daemon, image, tmp_path):
    """FROM an image tar in the build context: its layers and config, then the steps on top."""
    context = tmp_path / "ctx"
    context.mkdir()
    shutil.copy(image.docker_tar, context / "image.tar")
    (context / "Sandboxfile").write_text("FROM image.tar\nRUN echo built > /etc/built.txt\n")
    r = abx(template_daemon, "template", "build", str(context), "--name", "from-archive",
            timeout=IMPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    try:
        seen = probe(template_daemon, "from-archive")
        assert_is_the_image(seen)
        assert "built.txt" in seen["etc"].split()
    finally:
        abx(template_daemon, "template", "rm", "from-archive")


@pytest.fixture
def small_templates_dir(tmp_path) -> Iterator[Path]:
    """A 24 MiB tmpfs as a daemon's templates dir, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "templates"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_during_a_build_is_reported_as_enospc(image, small_templates_dir, tmp_path):
    state = private_state_dir("abx-enospc-")
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--templates-dir", str(small_templates_dir)))
    try:
        context = tmp_path / "ctx"
        context.mkdir()
        shutil.copy(image.docker_tar, context / "image.tar")
        (context / "Sandboxfile").write_text(
            "FROM image.tar\nRUN dd if=/dev/zero of=/fill bs=1M count=64\n")
        r = abx(d, "template", "build", str(context), "--name", "too-big", timeout=IMPORT_TIMEOUT)
        assert r.returncode != 0
        assert "ENOSPC" in r.stderr and "No space left on device" in r.stderr, r.stderr
        listed = json.loads(abx(d, "template", "list", "--json").stdout)
        assert "too-big" not in {t["name"] for t in listed}
        leftovers = [p.name for p in [*small_templates_dir.iterdir(),
                                      *(small_templates_dir / ".layers").iterdir()]
                     if p.name.startswith((".building", ".staging"))]
        assert leftovers == []
    finally:
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)
