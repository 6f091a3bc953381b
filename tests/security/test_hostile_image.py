"""A hostile image (imported, or ADDed in a Sandboxfile) cannot touch a host file: a layer's
symlink `x -> <host dir>` followed by whiteouts `x/.wh.file` and `x/sub/.wh..wh..opq`, hard
links out, `..` names and writes through the link leave the host dir as it was. The import
either fails with a one-line error naming the entry or imports harmlessly, and the daemon
stays up. A build whose /etc/passwd is a link to /proc/kmsg ends instead of hanging."""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest
from harness import Daemon, start_daemon, stop_daemon
from helpers import abx

pytestmark = pytest.mark.offline  # images are made here, no Debian template is built

BUSYBOX = Path("/bin/busybox")
IMPORT_TIMEOUT = 120
# The /etc/passwd -> /proc/kmsg build once never ended; any bound far above a build's
# few seconds tells "ends" from "hangs".
BUILD_BOUND = 120

# (name, kind, argument): kind is file (content), dir, symlink (target), hardlink (target), chardev.
Member = tuple[str, str, str]


def layer(members: list[Member]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, arg in members:
            info = tarfile.TarInfo(name)
            data = b""
            if kind == "file":
                data = arg.encode()
                info.size, info.mode = len(data), 0o644
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, arg
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, arg
            elif kind == "chardev":
                info.type, info.devmajor, info.devminor, info.mode = tarfile.CHRTYPE, 8, 0, 0o666
            tar.addfile(info, io.BytesIO(data) if data else None)
    return out.getvalue()


def base_layer(passwd: Member | None = None) -> bytes:
    """A tiny root: the dirs a sandbox mounts on, accounts, and busybox when the host has it."""
    members: list[Member] = [("etc", "dir", ""), ("tmp", "dir", ""), ("root", "dir", ""),
                             ("bin", "dir", "")]
    members.append(passwd or ("etc/passwd", "file", "root:x:0:0:root:/root:/bin/sh\n"))
    members.append(("etc/group", "file", "root:x:0:\n"))
    out = layer(members)
    if BUSYBOX.exists():
        with tarfile.open(fileobj=io.BytesIO(out), mode="r") as tar:
            kept = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for m, data in kept:
                tar.addfile(m, io.BytesIO(data) if data is not None else None)
            tar.add(BUSYBOX, "bin/busybox")
            sh = tarfile.TarInfo("bin/sh")
            sh.type, sh.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(sh)
        out = buf.getvalue()
    return out


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def config_for(layers: list[bytes]) -> bytes:
    return json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers",
                   "diff_ids": [f"sha256:{hashlib.sha256(x).hexdigest()}" for x in layers]},
    }).encode()


def docker_save(out: Path, layers: list[bytes]) -> Path:
    config = config_for(layers)
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    names = []
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, config_name, config)
        for data in layers:
            name = f"{hashlib.sha256(data).hexdigest()}/layer.tar"
            add_bytes(tar, name, data)
            names.append(name)
        add_bytes(tar, "manifest.json", json.dumps(
            [{"Config": config_name, "RepoTags": ["hostile:latest"], "Layers": names}]).encode())
    return out


def oci_archive(out: Path, layers: list[bytes]) -> Path:
    def descriptor(media_type: str, data: bytes) -> dict:
        return {"mediaType": media_type, "digest": f"sha256:{hashlib.sha256(data).hexdigest()}",
                "size": len(data)}

    config = config_for(layers)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", config),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", x) for x in layers],
    }).encode()
    index = {"schemaVersion": 2, "manifests": [
        descriptor("application/vnd.oci.image.manifest.v1+json", manifest)]}
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        for data in [config, manifest, *layers]:
            add_bytes(tar, f"blobs/sha256/{hashlib.sha256(data).hexdigest()}", data)
        add_bytes(tar, "index.json", json.dumps(index).encode())
    return out


FORMATS = {"docker-save": docker_save, "oci-archive": oci_archive}


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every path below `root` (and root itself) with its mode, link count and content."""
    seen = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        content = path.read_text() if path.is_file() and not path.is_symlink() else ""
        seen[str(path.relative_to(root))] = (st.st_mode, st.st_nlink, content)
    return seen


@pytest.fixture
def host_dir(tmp_path) -> Path:
    """A host dir full of files that no image may change."""
    host = tmp_path / "host"
    (host / "sub" / "deeper").mkdir(parents=True)
    (host / "file").write_text("host file\n")
    (host / "other").write_text("host other\n")
    (host / "sub" / "a").write_text("host a\n")
    (host / "sub" / "deeper" / "b").write_text("host b\n")
    host.chmod(0o750)
    return host


@pytest.fixture(scope="module")
def own_daemon(tmp_path_factory):
    state = tmp_path_factory.mktemp("hostile-image")
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--templates-dir", str(state / "templates"), "--warm-pool", "0"))
    yield d
    stop_daemon(d)


@pytest.fixture
def d(own_daemon: Daemon) -> Daemon:
    """The module's daemon, checked to be the same live process answering /health after a test."""
    pid = own_daemon.proc.pid
    yield own_daemon
    assert own_daemon.proc.poll() is None, "the daemon died"
    assert own_daemon.proc.pid == pid
    assert httpx.get(own_daemon.url + "/health", timeout=10).status_code == 204


def import_image(d: Daemon, tar: Path, name: str) -> subprocess.CompletedProcess:
    r = abx(d, "template", "import", str(tar), "--name", name, timeout=IMPORT_TIMEOUT)
    if r.returncode == 0:
        abx(d, "template", "rm", name)
    return r


def assert_refused_naming(r: subprocess.CompletedProcess, entry: str) -> None:
    """Imported harmlessly, or failed with a last line that names the entry."""
    if r.returncode == 0:
        return
    last = r.stderr.strip().splitlines()[-1]
    assert entry in last, r.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_whiteouts_through_a_symlink_leave_the_host_dir_alone(d, host_dir, tmp_path, fmt):
    before = snapshot(host_dir)
    climb = "../" * 12 + str(host_dir).lstrip("/")
    planted = layer([("x", "symlink", str(host_dir)), ("up", "symlink", climb),
                     ("slash", "symlink", "/")])
    whiteouts = layer([("x/.wh.file", "file", ""), ("x/sub/.wh..wh..opq", "file", ""),
                       ("up/.wh.other", "file", ""), ("up/.wh.sub", "file", ""),
                       (f"slash{host_dir}/.wh.file", "file", "")])
    tar = FORMATS[fmt](tmp_path / "image.tar", [base_layer(), planted, whiteouts])
    r = import_image(d, tar, f"hostile-wh-{fmt}")
    assert_refused_naming(r, ".wh.")
    assert snapshot(host_dir) == before


@pytest.mark.parametrize("members, entry", [
    ([("../escape", "file", "x")], "../escape"),
    ([("a/../../escape", "file", "x")], "a/../../escape"),
    ([("h", "hardlink", "../../../../../../../../etc/hostname")], "h"),
    ([("h", "hardlink", "HOST/file")], "h"),
    ([("x", "symlink", "HOST"), ("h", "hardlink", "x/file")], "h"),
    ([("x", "symlink", "HOST"), ("x/new", "file", "evil"), ("x/file", "file", "evil")], "x/"),
    ([("x", "symlink", "HOST"), ("x/sub", "dir", "")], "x/sub"),
    ([("etc/.wh...", "file", "")], ".wh..."),
    ([("dev", "dir", ""), ("dev/sda", "chardev", "")], "dev/sda"),
], ids=["dotdot", "dotdot-inside", "hardlink-dotdot", "hardlink-absolute", "hardlink-via-symlink",
        "write-via-symlink", "dir-via-symlink", "whiteout-dotdot", "device"])
def test_hostile_entries_fail_naming_them_or_import_harmlessly(d, host_dir, tmp_path, members,
                                                               entry):
    before = snapshot(host_dir)
    members = [(n.replace("HOST", str(host_dir)), k, a.replace("HOST", str(host_dir)))
               for n, k, a in members]
    tar = docker_save(tmp_path / "image.tar", [base_layer(), layer(members)])
    r = import_image(d, tar, "hostile-entry")
    assert_refused_naming(r, entry)
    assert snapshot(host_dir) == before
    assert not list((d.data_dir.parent / "templates").rglob("escape"))
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("members", [
    [("x", "symlink", "HOST"), ("x/.wh.file", "file", ""), ("x/sub/.wh..wh..opq", "file", "")],
    [("x", "symlink", "HOST"), ("x/new", "file", "evil"), ("x/file", "file", "evil")],
    [("h", "hardlink", "../../../../RELHOST/file")],
    [("../escape", "file", "x")],
], ids=["whiteouts", "writes", "hardlink", "dotdot"])
def test_sandboxfile_add_of_a_hostile_tar_leaves_the_host_dir_alone(d, host_dir, tmp_path,
                                                                    members):
    before = snapshot(host_dir)
    context = tmp_path / "ctx"
    context.mkdir()
    docker_save(context / "image.tar", [base_layer()])
    relative = str(host_dir).lstrip("/")
    members = [(n, k, a.replace("RELHOST", relative).replace("HOST", str(host_dir)))
               for n, k, a in members]
    (context / "evil.tar").write_bytes(layer(members))
    (context / "Sandboxfile").write_text("FROM image.tar\nADD evil.tar /opt/\n")
    r = abx(d, "template", "build", str(context), "--name", "hostile-add", timeout=IMPORT_TIMEOUT)
    if r.returncode == 0:
        abx(d, "template", "rm", "hostile-add")
    else:
        assert "evil.tar" in r.stderr.strip().splitlines()[-1], r.stderr
    assert snapshot(host_dir) == before
    assert not (tmp_path / "escape").exists()


def test_a_build_whose_passwd_links_to_proc_kmsg_ends(d, tmp_path):
    context = tmp_path / "ctx"
    context.mkdir()
    docker_save(context / "image.tar",
                [base_layer(passwd=("etc/passwd", "symlink", "/proc/kmsg")),
                 layer([("etc/group", "symlink", "/proc/kmsg")])])
    (context / "Sandboxfile").write_text("FROM image.tar\nUSER root:root\nRUN echo built\n")
    try:
        r = abx(d, "template", "build", str(context), "--name", "kmsg-passwd", timeout=BUILD_BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the build did not end within {BUILD_BOUND} s: the user lookup blocked")
    if r.returncode == 0:
        abx(d, "template", "rm", "kmsg-passwd")
    else:
        assert "passwd" in r.stderr or "group" in r.stderr, r.stderr
    # The templates dir's build lock is free again: another build goes through.
    (context / "Sandboxfile").write_text("FROM image.tar\nENV A=b\n")
    r = abx(d, "template", "build", str(context), "--name", "after-kmsg", timeout=BUILD_BOUND)
    assert r.returncode == 0, r.stderr
    abx(d, "template", "rm", "after-kmsg")

