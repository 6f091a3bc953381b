"""Issue 15, snapshots of a hostile sandbox: the daemon copies the sandbox's writable layer as
host root, so whatever sandbox root leaves in it (symlinks to host files, FIFOs, sparse
files far larger than its disk, trees deeper than the walk allows, many hard links, set-id
bits) must come out as the same harmless thing in the copy, or be refused, with the host's
files untouched, the daemon alive and nothing left behind; a snapshot also survives a
daemon restart and its disk is freed on delete."""
from __future__ import annotations

import shutil
import stat
from pathlib import Path

import httpx
import pytest
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx

HOST_SECRET = "host-only-secret-5b1e"


def root_sh(d: Daemon, sandbox_id: str, script: str, timeout: float = 120):
    r = abx(d, "exec", "--user", "root", sandbox_id, "--", "sh", "-c", script, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def create(api: httpx.Client, template: str = "base") -> str:
    r = api.post("/sandboxes", json={"templateID": template, "timeout": 300})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def snapshot(api: httpx.Client, sandbox_id: str) -> httpx.Response:
    return api.post(f"/sandboxes/{sandbox_id}/snapshots", json={}, timeout=120)


def layer_dirs(d: Daemon) -> set[str]:
    return {p.name for p in (d.data_dir / "snapshots").iterdir()}


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text(HOST_SECRET)
    secret.chmod(0o600)
    return secret


def test_links_fifos_sparse_files_and_set_id_bits_come_out_harmless(daemon, host_secret):
    with daemon.api() as api:
        source = create(api)
        try:
            root_sh(daemon, source, f"""
                mkdir -p /home/user/h && cd /home/user/h
                ln -s {host_secret} to-host-file
                ln -s /proc/1/root/etc/shadow to-proc
                mkfifo pipe
                truncate -s 100G sparse && printf tail >> sparse
                echo shared > one && ln one two
                cp /bin/true suid && chmod 4755 suid
            """)
            r = snapshot(api, source)
            assert r.status_code == 201, r.text
            snap = r.json()["snapshotID"]
            copy = create(api, snap)
            try:
                out = root_sh(daemon, copy, """
                    cd /home/user/h
                    readlink to-host-file; readlink to-proc
                    test -p pipe && echo fifo
                    stat -c '%s %b' sparse; tail -c 4 sparse; echo
                    stat -c '%h %i' one two | sort -u | wc -l
                    cat two
                    stat -c '%a' suid
                """)
                lines = out.split("\n")
                # The links are links (not the host file copied), and point where they did.
                assert lines[0] == str(host_secret) and lines[1] == "/proc/1/root/etc/shadow"
                assert HOST_SECRET not in out
                assert lines[2] == "fifo"
                size, blocks = map(int, lines[3].split())
                assert size == 100 * 2**30 + 4 and blocks < 1024  # still sparse
                assert lines[4] == "tail"
                assert lines[5] == "1" and lines[6] == "shared"  # one inode, two names
                assert lines[7] == "4755"  # kept: the sandbox's no_new_privs makes it inert
                # Nothing in the daemon's copy is the host's file either.
                for layer in layer_dirs(daemon):
                    for path in (daemon.data_dir / "snapshots" / layer).rglob("*"):
                        if path.is_symlink() or not path.is_file() or stat.S_ISFIFO(
                                path.lstat().st_mode):
                            continue
                        if path.stat().st_size < 1 << 20:
                            assert HOST_SECRET not in path.read_text(errors="replace")
            finally:
                api.delete(f"/sandboxes/{copy}")
                api.delete(f"/templates/{snap}")
        finally:
            api.delete(f"/sandboxes/{source}")
    assert host_secret.read_text() == HOST_SECRET and host_secret.stat().st_mode & 0o777 == 0o600
    assert daemon.proc.poll() is None


def test_a_tree_deeper_than_the_walk_allows_is_refused_and_leaves_nothing(daemon):
    with daemon.api() as api:
        source = create(api)
        try:
            before = layer_dirs(daemon)
            root_sh(daemon, source, "cd /home/user && for i in $(seq 300); do mkdir d && cd d; done")
            r = snapshot(api, source)
            assert r.status_code == 400 and "deeper than 256" in r.json()["message"], r.text
            assert layer_dirs(daemon) == before
            # The sandbox goes on, thawed.
            assert root_sh(daemon, source, "echo alive").strip() == "alive"
        finally:
            api.delete(f"/sandboxes/{source}")
    assert daemon.proc.poll() is None


def test_a_directory_of_many_empty_files_is_copied_without_holding_them_all(daemon):
    """Empty files cost no disk on a tmpfs (its inode limit bounds them); 50 000 of them in
    one directory are copied (names are read as the walk goes) and arrive in the new
    sandbox."""
    with daemon.api() as api:
        source = create(api)
        try:
            root_sh(daemon, source, "mkdir /home/user/many && cd /home/user/many &&"
                                    " seq 50000 | xargs touch", timeout=300)
            r = snapshot(api, source)
            assert r.status_code == 201, r.text
            snap = r.json()["snapshotID"]
            copy = create(api, snap)
            try:
                assert root_sh(daemon, copy, "ls /home/user/many | wc -l").strip() == "50000"
            finally:
                api.delete(f"/sandboxes/{copy}")
                api.delete(f"/templates/{snap}")
        finally:
            api.delete(f"/sandboxes/{source}")


def test_a_snapshot_survives_a_daemon_restart_and_its_disk_is_freed_on_delete():
    state = private_state_dir("abx-snap-restart-")
    d = start_daemon(state / "state", extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            source = create(api)
            root_sh(d, source, "echo kept > /home/user/kept.txt && head -c 3000000 /dev/urandom"
                               " > /home/user/blob")
            snap = snapshot(api, source).json()["snapshotID"]
            api.delete(f"/sandboxes/{source}")
        stop_daemon(d, kill_sandboxes=False)  # SIGTERM: what it keeps must come back
        d = start_daemon(state / "state", extra_args=("--warm-pool", "0"))
        with d.api() as api:
            listed = api.get("/snapshots").json()
            assert snap in [s["snapshotID"] for s in listed]
            copy = create(api, snap)
            assert root_sh(d, copy, "cat /home/user/kept.txt").strip() == "kept"
            api.delete(f"/sandboxes/{copy}")
            used = sum(f.stat().st_size for f in (d.data_dir / "snapshots").rglob("*")
                       if f.is_file() and not f.is_symlink())
            assert used >= 3_000_000
            assert api.delete(f"/templates/{snap}").status_code == 204
            left = [f for f in (d.data_dir / "snapshots").rglob("*") if f.is_file()]
            assert not left, left
    finally:
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)
