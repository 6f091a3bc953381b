"""Per-user kernel counts made inside a sandbox are charged to the sandbox, not to host root:
a sandbox that opens inotify instances until the kernel refuses leaves host root (the test
itself, and every host service running as root) able to open its own."""
from __future__ import annotations

import ctypes
import os
import subprocess

import httpx
import pytest

from harness import ABX_BIN, start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the `host` template needs no build

HOG = """
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 1000 and (fd := libc.inotify_init1(0o2000000)) >= 0:
    fds.append(fd)
print(len(fds), ctypes.get_errno(), flush=True)
time.sleep(120)
"""


def host_inotify_instance() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0o2000000)
    if fd < 0:
        return False
    os.close(fd)
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="charging to host root needs a root daemon")
def test_inotify_instances_in_sandboxes_leave_host_roots_budget(state_dir):
    """Three sandboxes each open all they may: more than host root's default budget (128)."""
    d = start_daemon(state_dir / "state", shared_templates=False)
    hogs = []
    try:
        with d.api() as api:
            for _ in range(3):
                r = api.post("/sandboxes", json={"templateID": "host"})
                assert r.status_code == 201, r.text
                hogs.append(subprocess.Popen(
                    [str(ABX_BIN), "exec", "--user", "root", r.json()["sandboxID"], "--",
                     "python3", "-c", HOG], env=d.env(), stdout=subprocess.PIPE, text=True))
        for hog in hogs:
            held, errno = (int(x) for x in hog.stdout.readline().split())
            assert errno != 0, "the kernel never refused the sandbox an inotify instance"
            assert held <= 64, f"the sandbox's own limit did not hold: {held} instances"
        assert host_inotify_instance(), "sandboxes' inotify instances took host root's budget"
        assert d.proc.poll() is None and httpx.get(d.url + "/health", timeout=10).status_code < 300
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        stop_daemon(d)
