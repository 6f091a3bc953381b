"""Issue 12, attacks 6, 7 and 9 (personality): code inside a sandbox cannot reach vsock or
switch on unsafe personality flags, and a sandbox whose init dies (killed from the host, or
out of memory after sandbox root raised its OOM score) is reported stopped at once, leaves
nothing behind, and is never reached again through its old pid number."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest
from harness import start_daemon, stop_daemon
from helpers import abx, sandbox_host_pids, wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build


@pytest.fixture
def d(state_dir):
    daemon = start_daemon(state_dir / "state", shared_templates=False,
                          extra_args=("--warm-pool", "0"))
    yield daemon
    stop_daemon(daemon)


def create(d, **body) -> str:
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", **body})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def run(d, sandbox_id: str, script: str, user: str = "user"):
    return abx(d, "exec", "--user", user, sandbox_id, "--", "sh", "-c", script)


def assert_daemon_healthy(d) -> None:
    assert d.proc.poll() is None, "the daemon died"
    assert httpx.get(d.url + "/health", timeout=10).is_success


def init_pid(sandbox_id: str) -> int:
    """The host pid of the sandbox's abx-init."""
    for pid in sandbox_host_pids(sandbox_id):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == b"abx-init":
                return pid
        except OSError:
            continue
    raise AssertionError(f"no abx-init found for {sandbox_id}")


def sandbox_plane(d, sandbox_id: str, port: int, path: str) -> httpx.Response:
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port),
               "X-API-KEY": d.api_key}
    return httpx.get(d.url + path, headers=headers, timeout=30)


def gone_from_control_plane(d, sandbox_id: str) -> bool:
    with d.api() as api:
        listed = [s["sandboxID"] for s in api.get("/sandboxes").json()]
        return sandbox_id not in listed and api.get(f"/sandboxes/{sandbox_id}").status_code == 404


def assert_nothing_left(sandbox_id: str) -> None:
    assert sandbox_host_pids(sandbox_id) == [], "a process of the dead sandbox is left"
    leftovers = [str(p) for p in Path("/sys/fs/cgroup").glob("*/abx/*/*") if sandbox_id in p.name]
    assert leftovers == [], f"cgroups left: {leftovers}"


def assert_reported_stopped(d, sandbox_id: str, reason: str) -> None:
    wait_until(lambda: gone_from_control_plane(d, sandbox_id), timeout=30,
               what="the control plane to drop the dead sandbox")
    r = sandbox_plane(d, sandbox_id, 49983, "/files?path=/etc/hostname")
    assert r.status_code == 502, r.text
    assert r.json()["message"] == f"sandbox {sandbox_id} stopped: {reason}", r.text
    wait_until(lambda: not sandbox_host_pids(sandbox_id), timeout=30,
               what="the dead sandbox's processes to go")
    assert_nothing_left(sandbox_id)


def test_vsock_and_other_unisolated_socket_families_are_refused(d):
    sandbox_id = create(d)
    r = run(d, sandbox_id, "python3 -c 'import socket; socket.socket(socket.AF_VSOCK, "
                           "socket.SOCK_STREAM)'")
    assert r.returncode != 0
    assert "[Errno 97] Address family not supported by protocol" in r.stderr, r.stderr
    r = run(d, sandbox_id, "python3 -c 'import socket; socket.socket(socket.AF_ALG, "
                           "socket.SOCK_SEQPACKET)'", user="root")
    assert "[Errno 97]" in r.stderr, r.stderr
    # What programs use still works: inet, unix, netlink routing.
    r = run(d, sandbox_id, "python3 -c 'import socket; socket.socket(); "
                           "socket.socket(socket.AF_UNIX); "
                           "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print(\"ok\")'")
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    assert_daemon_healthy(d)


PERSONALITY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.personality.argtypes = [ctypes.c_ulong]
for value in (0x80400000, 0x80000000, 0x400000, 0xffffffff, 0x8):
    result = libc.personality(value)
    print(hex(value), result if result == -1 else "ok", ctypes.get_errno() if result == -1 else 0)
"""


def test_personality_with_bit_31_is_refused(d):
    sandbox_id = create(d)
    r = abx(d, "exec", sandbox_id, "--", "python3", "-c", PERSONALITY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "0x80400000 -1 1",  # READ_IMPLIES_EXEC behind bit 31: EPERM
        "0x80000000 -1 1",
        "0x400000 -1 1",
        "0xffffffff ok 0",  # the query
        "0x8 ok 0",  # PER_LINUX32
    ]
    assert_daemon_healthy(d)


def test_init_killed_from_the_host_is_reported_and_its_pid_never_reused(d):
    sandbox_id = create(d)
    os.kill(init_pid(sandbox_id), signal.SIGKILL)
    assert_reported_stopped(d, sandbox_id, "its init was killed (signal: killed)")
    # A proxied request never reaches another namespace through the old number.
    r = sandbox_plane(d, sandbox_id, 8000, "/")
    assert r.status_code in (404, 502), r.text
    assert_daemon_healthy(d)


def test_root_raising_inits_oom_score_cannot_kill_init_or_leave_a_dead_sandbox_listed(d):
    sandbox_id = create(d, memoryMB=64)
    raised = run(d, sandbox_id, "echo 1000 > /proc/1/oom_score_adj; cat /proc/1/oom_score_adj",
                 user="root")
    assert raised.stdout == "1000\n", raised.stderr  # sandbox root owns init
    hog = run(d, sandbox_id, "python3 -c 'b = bytearray(512 << 20)'")
    assert hog.returncode != 0
    if Path("/sys/fs/cgroup/memory").is_dir():
        # cgroup v1: the limit is on a group init is not in, so init survives the hog.
        assert run(d, sandbox_id, "echo alive").stdout == "alive\n"
    else:
        assert_reported_stopped(d, sandbox_id, "its init was killed (out of memory)")
    assert_daemon_healthy(d)


def test_an_adopted_sandbox_whose_init_dies_is_reported_too(state_dir):
    first = start_daemon(state_dir / "state", shared_templates=False,
                         extra_args=("--warm-pool", "0"))
    sandbox_id = create(first)
    first.proc.kill()
    first.proc.wait()
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        assert abx(d, "exec", sandbox_id, "--", "echo", "adopted").stdout == "adopted\n"
        os.kill(init_pid(sandbox_id), signal.SIGKILL)
        # Not the new daemon's child: its wait status went elsewhere.
        assert_reported_stopped(d, sandbox_id, "its init exited")
        assert_daemon_healthy(d)
    finally:
        stop_daemon(d)


def test_sandbox_processes_start_with_the_usual_open_files_limit(d):
    """The daemon raises its own soft limit to the hard one; sandbox programs that loop over
    every possible descriptor must not inherit hundreds of thousands."""
    sandbox_id = create(d)
    soft, hard = run(d, sandbox_id, "ulimit -Sn; ulimit -Hn").stdout.split()
    assert int(soft) == min(1024, int(hard))
    assert run(d, sandbox_id, f"ulimit -n {hard} && ulimit -Sn").stdout.strip() == hard
    assert_daemon_healthy(d)
