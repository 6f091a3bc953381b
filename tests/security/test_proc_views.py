"""What a sandbox sees of the host: /proc/meminfo and uptime describe the sandbox (lxcfs,
run by the daemon), nproc and os.cpu_count() its CPU limit, /dev/shm is the sandbox's own and bounded by its disk, and
stopping the daemon leaves no lxcfs process or mount behind."""
from __future__ import annotations

import os
import shutil
import subprocess

import httpx
import pytest

from harness import ABX_BIN, start_daemon, stop_daemon

pytestmark = [
    pytest.mark.offline,  # the `host` template needs no build
    pytest.mark.skipif(shutil.which("lxcfs") is None, reason="lxcfs is not installed (make deps)"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse: lxcfs cannot mount"),
]

MEMORY_MB = 256
DISK_MB = 64


def run(d, sandbox_id: str, script: str) -> str:
    r = subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c", script], env=d.env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def lxcfs_pids(mountpoint) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue
        if cmdline and cmdline[0] == b"lxcfs" and str(mountpoint).encode() in cmdline:
            pids.append(int(entry))
    return pids


@pytest.fixture
def small_sandbox(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False)
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "memoryMB": MEMORY_MB,
                                             "diskSizeMB": DISK_MB})
            assert r.status_code == 201, r.text
        yield d, r.json()["sandboxID"]
    finally:
        stop_daemon(d)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="one CPU here: a sandbox's count cannot differ from the host's")
@pytest.mark.parametrize("cpus", [1, 2])
def test_nproc_and_cpu_count_show_the_sandbox_cpu_limit(state_dir, cpus):
    d = start_daemon(state_dir / "state", shared_templates=False)
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "cpuCount": cpus})
            assert r.status_code == 201, r.text
        seen = run(d, r.json()["sandboxID"],
                   "nproc; python3 -c 'import os; print(os.cpu_count())'; "
                   "grep -c ^processor /proc/cpuinfo")
        assert seen.split() == [str(cpus)] * 3, seen
    finally:
        stop_daemon(d)


def test_meminfo_and_free_show_the_sandbox_memory_limit(small_sandbox):
    d, sandbox_id = small_sandbox
    meminfo = run(d, sandbox_id, "head -1 /proc/meminfo").split()
    assert meminfo[:3] == ["MemTotal:", str(MEMORY_MB * 1024), "kB"]
    free = run(d, sandbox_id, "free -m").splitlines()[1].split()
    assert free[0] == "Mem:" and int(free[1]) == MEMORY_MB
    assert d.proc.poll() is None and httpx.get(d.url + "/health", timeout=10).status_code < 300


def test_uptime_is_the_sandbox_not_the_host(small_sandbox):
    d, sandbox_id = small_sandbox
    inside = float(run(d, sandbox_id, "cut -d' ' -f1 /proc/uptime"))
    host = float(open("/proc/uptime").read().split()[0])
    # The host's own value would be within milliseconds of the host's reading.
    assert inside < host - 1, f"sandbox uptime {inside} s is the host's ({host} s)"


def test_dev_shm_is_the_sandboxs_own_and_shares_its_disk(small_sandbox):
    d, sandbox_id = small_sandbox
    # A directory of the sandbox's disk tmpfs: its size, and nothing written there gets past it.
    size_kib = run(d, sandbox_id, "df -k /dev/shm | tail -1").split()[1]
    assert int(size_kib) == DISK_MB * 1024
    assert run(d, sandbox_id, "stat -c %a /dev/shm") == "1777\n"
    full = run(d, sandbox_id, f"head -c {2 * DISK_MB}M /dev/zero 2>&1 >/dev/shm/big; echo $?; "
                              "rm -f /dev/shm/big")
    assert "No space left on device" in full and full.strip().endswith("1"), full
    # Programs may map what they put there executable (JITs), and another sandbox sees none of it.
    run(d, sandbox_id, "cp /bin/true /dev/shm/t && /dev/shm/t && echo secret > /dev/shm/mine")
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", "memoryMB": MEMORY_MB})
        assert r.status_code == 201, r.text
    other = r.json()["sandboxID"]
    assert run(d, other, "ls -A /dev/shm") == ""
    assert run(d, sandbox_id, "cat /dev/shm/mine") == "secret\n"


def test_stopping_the_daemon_ends_its_lxcfs(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False)
    mountpoint = state_dir / "state" / "lxcfs"
    assert lxcfs_pids(mountpoint), "the daemon runs no lxcfs"
    stop_daemon(d)
    assert not lxcfs_pids(mountpoint), "lxcfs outlived a daemon with no sandboxes left"
    mounts = open("/proc/self/mountinfo").read()
    assert str(mountpoint) not in mounts
