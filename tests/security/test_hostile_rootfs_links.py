"""A hostile image cannot make the sandbox's init write on the host (the CVE-2019-16884 /
CVE-2021-30465 class). While init assembles a sandbox's root, the host's "/" is reachable at
/oldroot; an image whose /tmp, /home/user, /etc/resolv.conf (a build's bind target), /proc or
/dev is a link to /oldroot/<host dir>, a `../..` chain or a path through /proc/self/root once
made init create dirs and files there and chmod them 1777. Each such image is imported, started
and built FROM: a world-writable host dir stays empty with its mode unchanged, and the sandbox
either starts (the link resolved inside its own root) or fails with an error naming the path."""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Daemon, start_daemon, stop_daemon
from helpers import abx
from test_hostile_image import BUSYBOX, IMPORT_TIMEOUT, docker_save, snapshot

pytestmark = pytest.mark.offline  # images are made here, no Debian template is built

BUILD_TIMEOUT = 180
# What each group of links covers: every path init makes, binds on, chmods or mounts on,
# each with where in the host dir its link leads: /tmp to a dir the sandbox's root owns on
# the host (init chmods /tmp 1777), /home to the host dir itself (init makes /home/user
# there), a build's bind target /etc/resolv.conf to a file init would create.
GROUPS = {
    "files": {"tmp": "owned", "home": "", "etc/resolv.conf": "resolv.conf"},
    "proc": {"proc": "owned"},
    "dev": {"dev": "owned"},
}
# How a link reaches the host dir from where init stood (its staging root, the host at
# /oldroot): directly, climbing out of /newroot, or through init's own root in /proc.
STYLES = {
    "oldroot": "/oldroot{host}",
    "dotdot": "../../../../../../../../oldroot{host}",
    "proc-self-root": "/proc/self/root/oldroot{host}",
    "host-proc": "/oldroot/proc/self/root/oldroot{host}",
}
CASES = [
    # (group, style, starts): a link inside the root is followed there; /proc and /dev must be
    # directories, and /proc's magic links are refused.
    ("files", "oldroot", True),
    ("files", "dotdot", True),
    ("files", "host-proc", True),
    ("files", "proc-self-root", False),
    ("proc", "oldroot", False),
    ("proc", "dotdot", False),
    ("dev", "oldroot", False),
    ("dev", "host-proc", False),
]


def rootfs_with_links(links: dict[str, str]) -> bytes:
    """A tiny root with busybox whose `links` (path -> target) replace those paths."""
    dirs = {"etc", "root", "bin", "home", "tmp", "proc", "dev"} - set(links)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(dirs):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in [("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"),
                           ("etc/group", b"root:x:0:\n")]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        tar.add(BUSYBOX, "bin/busybox")
        sh = tarfile.TarInfo("bin/sh")
        sh.type, sh.linkname = tarfile.SYMTYPE, "busybox"
        tar.addfile(sh)
    return out.getvalue()


@pytest.fixture(scope="module")
def own_daemon(tmp_path_factory) -> Iterator[Daemon]:
    state = tmp_path_factory.mktemp("hostile-rootfs-links")
    (state / "state").mkdir()
    (state / "state" / "config.json").write_text('{"volumes": {"mounts": true}}')  # for volumes' links
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--templates-dir", str(state / "templates"), "--warm-pool", "0"))
    yield d
    stop_daemon(d)


@pytest.fixture
def d(own_daemon: Daemon) -> Iterator[Daemon]:
    pid = own_daemon.proc.pid
    yield own_daemon
    assert own_daemon.proc.poll() is None and own_daemon.proc.pid == pid, "the daemon died"


@pytest.fixture(scope="module")
def sandbox_root_uid(own_daemon: Daemon, tmp_path_factory) -> int:
    """The host uid sandbox root maps to, read from a sandbox of a harmless image."""
    image = docker_save(tmp_path_factory.mktemp("plain") / "image.tar", [rootfs_with_links({})])
    r = abx(own_daemon, "template", "import", str(image), "--name", "plain",
            timeout=IMPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    r = abx(own_daemon, "create", "plain")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    r = abx(own_daemon, "exec", sandbox, "--", "/bin/busybox", "cat", "/proc/self/uid_map")
    abx(own_daemon, "kill", sandbox, "--yes")
    abx(own_daemon, "template", "rm", "plain")
    assert r.returncode == 0, r.stderr
    inside, outside, _ = r.stdout.split("\n")[0].split()
    assert inside == "0"
    return int(outside)


@pytest.fixture
def host_dir(sandbox_root_uid: int) -> Iterator[Path]:
    """A host dir anyone may write to (as the host's /tmp, /var/tmp, /dev/shm are), under a
    path anyone may search, with a dir `owned` by the sandbox's root: all in its reach."""
    host = Path(tempfile.mkdtemp(prefix="abx-hostile-links-", dir="/tmp"))
    host.chmod(0o777)
    (host / "owned").mkdir(mode=0o755)
    os.chown(host / "owned", sandbox_root_uid, sandbox_root_uid)
    yield host
    shutil.rmtree(host, ignore_errors=True)


def assert_names(r, path: str) -> None:
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    assert f"/{path}" in last, r.stderr


@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox for the image's shell")
@pytest.mark.parametrize("group, style, starts", CASES,
                         ids=[f"{g}-{s}" for g, s, _ in CASES])
def test_links_in_an_image_never_reach_the_host(d, host_dir, tmp_path, group, style, starts):
    before = snapshot(host_dir)  # every path below it with its mode and content
    links = {path: "/".join(filter(None, [STYLES[style].format(host=host_dir), leads_to]))
             for path, leads_to in GROUPS[group].items()}
    paths = list(links)
    context = tmp_path / "ctx"
    context.mkdir()
    image = docker_save(context / "image.tar", [rootfs_with_links(links)])
    name = f"links-{group}-{style}"

    r = abx(d, "template", "import", str(image), "--name", name, timeout=IMPORT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    try:
        r = abx(d, "create", name)
        if starts:
            assert r.returncode == 0, r.stderr
            sandbox = r.stdout.strip()
            run = abx(d, "exec", sandbox, "--", "/bin/sh", "-c",
                      "echo inside > /tmp/probe && cat /tmp/probe")
            abx(d, "kill", sandbox, "--yes")
            assert run.returncode == 0 and run.stdout == "inside\n", run.stderr
        else:
            if r.returncode == 0:
                abx(d, "kill", r.stdout.strip(), "--yes")
            assert r.returncode != 0, "the sandbox started"
            assert_names(r, paths[0])
        assert snapshot(host_dir) == before

        # A build's RUN step starts a sandbox with /etc/resolv.conf bound over the image's.
        (context / "Sandboxfile").write_text("FROM image.tar\nRUN echo built > /tmp/built\n")
        r = abx(d, "template", "build", str(context), "--name", f"{name}-built",
                timeout=BUILD_TIMEOUT)
        if r.returncode == 0:
            abx(d, "template", "rm", f"{name}-built")
        assert (r.returncode == 0) == starts, r.stderr
        if not starts:
            assert_names(r, paths[0])
        assert snapshot(host_dir) == before
    finally:
        abx(d, "template", "rm", name)
    assert [p.name for p in host_dir.iterdir()] == ["owned"]
    assert not list((host_dir / "owned").iterdir())
