"""A sandbox cannot read host files, see host processes, reach host loopback
services, escape through upload/download paths, or exceed its limits."""
from __future__ import annotations

import os
import socket
import threading
import uuid

import httpx
import pytest

from helpers import abx, create, stop_listening
from helpers import sandbox as sandbox_of


@pytest.fixture(scope="module")
def sandbox(daemon):
    sandbox_id = create(daemon)
    yield sandbox_id
    abx(daemon, "kill", sandbox_id, "--yes")


def sh(daemon, sandbox_id, script, **kw):
    return abx(daemon, "exec", sandbox_id, "--", "sh", "-c", script, **kw)


def test_host_files_are_not_readable(daemon, sandbox, tmp_path):
    secret = tmp_path / f"secret-{uuid.uuid4().hex}"
    secret.write_text("host secret\n")
    r = sh(daemon, sandbox, f"cat {secret}; cat /etc/shadow; ls /root/.pyenv")
    assert "host secret" not in r.stdout
    assert r.returncode != 0
    r = sh(daemon, sandbox, "grep -c . /etc/passwd")
    host_users = sum(1 for _ in open("/etc/passwd"))
    assert int(r.stdout) < host_users  # the synthetic /etc, not the host's


def test_host_processes_are_invisible(daemon, sandbox):
    r = sh(daemon, sandbox, "ls /proc | grep -c '^[0-9]'")
    assert int(r.stdout) < 10
    r = sh(daemon, sandbox, f"test -e /proc/{daemon.proc.pid}/cmdline && cat /proc/{daemon.proc.pid}/cmdline")
    assert "serve" not in r.stdout


def test_host_knobs_in_proc_are_masked_and_dev_runs_nothing(daemon, sandbox):
    # /proc/acpi is an empty read-only directory and /proc/kcore reads nothing, even for
    # sandbox root; /dev holds no executable (noexec), as OCI runtimes set them up.
    r = abx(daemon, "exec", "--user", "root", sandbox, "--", "sh", "-c",
            "ls -A /proc/acpi | wc -l; touch /proc/acpi/x 2>/dev/null && echo wrote-acpi;"
            " cat /proc/kcore 2>/dev/null | wc -c; cp /bin/true /dev/t && /dev/t && echo ran-from-dev;"
            " rm -f /dev/t; echo 1 > /proc/sys/kernel/domainname 2>/dev/null && echo wrote-sys;"
            " ls /dev/null /dev/pts/ptmx /dev/shm >/dev/null && echo devices-ok")
    lines = r.stdout.split()
    assert lines[:2] == ["0", "0"], r.stdout + r.stderr
    assert "wrote-acpi" not in r.stdout and "wrote-sys" not in r.stdout
    assert "ran-from-dev" not in r.stdout
    assert "devices-ok" in r.stdout


def test_root_inside_is_not_root_outside(daemon, sandbox):
    r = abx(daemon, "exec", "--user", "root", sandbox, "--", "cat", "/proc/self/uid_map")
    inside, outside, _count = r.stdout.split()[:3]
    assert inside == "0" and outside != "0"


def test_host_loopback_services_are_unreachable(daemon, sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:  # stop_listening below
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        r = sh(daemon, sandbox, f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\"")
        assert r.returncode != 0
        assert not accepted
        # Its own network: loopback and its eth0, none of the host's links.
        r = sh(daemon, sandbox, "ls /sys/class/net")
        assert set(r.stdout.split()) <= {"lo", "eth0"}, r.stdout
    finally:
        stop_listening(server, thread)


def test_privileged_syscalls_are_refused(daemon, sandbox):
    r = abx(daemon, "exec", "--user", "root", sandbox, "--", "sh", "-c",
            "mount -t tmpfs none /mnt 2>&1; unshare -U true 2>&1; echo done")
    assert "done" in r.stdout
    assert "Operation not permitted" in r.stdout or "not permitted" in r.stdout.lower()
    r = abx(daemon, "exec", "--user", "root", sandbox, "--", "sh", "-c", "ls /mnt | wc -l")
    assert r.stdout.strip() == "0"


def test_sudo_gives_user_no_more_than_a_caller_gets_as_root(daemon, sandbox):
    """`base` lets `user` sudo (as E2B's base image does; its spec.toml has allow_setid).
    That makes a process sandbox root and nothing more: the capabilities and seccomp filter
    of `--user root`, root still unprivileged outside, mounts and namespaces still refused."""
    status = "grep -E '^(Uid|Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status"
    via_sudo = sh(daemon, sandbox, f"sudo -n {status}")
    as_root = abx(daemon, "exec", "--user", "root", sandbox, "--", "sh", "-c", status)
    assert via_sudo.returncode == 0, via_sudo.stderr
    assert via_sudo.stdout == as_root.stdout
    assert "Seccomp:\t2" in via_sudo.stdout and "NoNewPrivs:\t0" in via_sudo.stdout
    r = sh(daemon, sandbox, "sudo -n cat /proc/self/uid_map")
    inside, outside, _count = r.stdout.split()[:3]
    assert inside == "0" and outside != "0"
    r = sh(daemon, sandbox, "sudo -n sh -c 'mount -t tmpfs none /mnt 2>/dev/null; echo $?;"
                            " unshare -U true 2>/dev/null; echo $?; ls /mnt | wc -l'")
    mount_status, unshare_status, mnt_entries = r.stdout.split()
    assert mount_status != "0" and unshare_status != "0" and mnt_entries == "0", r.stdout
    assert daemon.proc.poll() is None
    assert httpx.get(daemon.url + "/health", timeout=10).status_code == 204


# Root plants a set-uid-root copy of `id` on the sandbox's own (writable) root; `user` runs it.
PLANT_SETID_ID = "cp /usr/bin/id /setid-id && chmod 4755 /setid-id"
RUN_SETID_ID = "/setid-id -u; grep '^NoNewPrivs:' /proc/self/status"


def test_setid_programs_give_nothing_in_a_template_without_allow_setid(daemon, sandbox):
    """Only templates whose spec.toml says allow_setid (base, and those built FROM it) let
    set-id programs work; every process of any other template (here `host`) has
    no_new_privs, so a set-uid-root binary runs as its caller. The same binary in base
    does make root, so it is no_new_privs that stops it, not the mount."""
    with sandbox_of(daemon, "host") as host:
        planted = abx(daemon, "exec", "--user", "root", host, "--", "sh", "-c", PLANT_SETID_ID)
        assert planted.returncode == 0, planted.stderr
        r = sh(daemon, host, RUN_SETID_ID)
        assert r.stdout == "1000\nNoNewPrivs:\t1\n", r.stdout + r.stderr
        r = abx(daemon, "exec", "--user", "root", host, "--", "grep", "^NoNewPrivs:",
                "/proc/self/status")
        assert r.stdout == "NoNewPrivs:\t1\n"
    planted = abx(daemon, "exec", "--user", "root", sandbox, "--", "sh", "-c", PLANT_SETID_ID)
    assert planted.returncode == 0, planted.stderr
    r = sh(daemon, sandbox, RUN_SETID_ID)
    assert r.stdout == "0\nNoNewPrivs:\t0\n", r.stdout + r.stderr
    assert daemon.proc.poll() is None
    assert httpx.get(daemon.url + "/health", timeout=10).status_code == 204


def test_a_template_built_from_base_keeps_its_sudo(daemon):
    """code-interpreter-v1 is a Sandboxfile FROM base: it inherits allow_setid."""
    with sandbox_of(daemon, "code-interpreter-v1") as sandbox_id:
        r = sh(daemon, sandbox_id, "sudo -n whoami; whoami")
        assert r.stdout == "root\nuser\n", r.stdout + r.stderr


def test_upload_paths_cannot_escape_the_sandbox(daemon, sandbox, tmp_path):
    marker = f"escape-{uuid.uuid4().hex}"
    src = tmp_path / "payload.txt"
    src.write_text("payload\n")
    abx(daemon, "upload", sandbox, str(src), f"/../../../../../tmp/{marker}")
    assert not os.path.exists(f"/tmp/{marker}")
    # a symlink planted inside the sandbox points at a host directory
    sh(daemon, sandbox, f"ln -sfn /tmp /home/user/hostlink")
    abx(daemon, "upload", sandbox, str(src), f"/home/user/hostlink/{marker}")
    assert not os.path.exists(f"/tmp/{marker}")


def test_download_through_a_symlink_reads_the_sandbox_not_the_host(daemon, sandbox, tmp_path):
    sh(daemon, sandbox, "ln -sfn /etc/passwd /home/user/pw")
    out = tmp_path / "pw"
    r = abx(daemon, "download", sandbox, "/home/user/pw", str(out))
    if r.returncode == 0:
        assert out.read_text() != open("/etc/passwd").read()


def test_memory_hog_is_killed_and_others_keep_working(daemon):
    with daemon.api() as api:
        r = api.post("/sandboxes", json={"templateID": "base", "memoryMB": 128})
        assert r.status_code == 201, r.text
        sandbox_id = r.json()["sandboxID"]
    try:
        r = sh(daemon, sandbox_id, "python3 -c \"b = bytearray(512 * 1024 * 1024); print('survived')\"")
        assert r.returncode != 0 and "survived" not in r.stdout
        assert sh(daemon, sandbox_id, "echo alive").stdout == "alive\n"
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


FORK_UNTIL_REFUSED = """
import os, signal, time
pids = []
try:
    for _ in range(5000):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
except OSError as e:
    print("refused", e.strerror)
print(len(pids))
for p in pids:
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
"""


def test_fork_bomb_is_contained_and_others_keep_working(daemon, sandbox):
    bomb = create(daemon)
    try:
        r = abx(daemon, "exec", bomb, "--", "python3", "-c", FORK_UNTIL_REFUSED, timeout=120)
        assert "refused" in r.stdout, r.stdout + r.stderr
        assert int(r.stdout.split()[-1]) < 5000
        assert sh(daemon, bomb, "echo alive").stdout == "alive\n"
        assert sh(daemon, sandbox, "echo neighbour").stdout == "neighbour\n"
    finally:
        abx(daemon, "kill", bomb, "--yes")


def test_output_flood_is_streamed_and_daemon_keeps_serving(daemon, sandbox):
    r = sh(daemon, sandbox, "head -c 50000000 /dev/zero | base64", timeout=120)
    assert r.returncode == 0
    assert len(r.stdout) > 60_000_000
    assert httpx.get(daemon.url + "/health").status_code == 204


def test_full_disk_upload_fails_with_507_and_sandbox_stays_usable(daemon, tmp_path):
    with daemon.api() as api:
        r = api.post("/sandboxes", json={"templateID": "base", "diskSizeMB": 16, "secure": False})
        assert r.status_code == 201, r.text
        sandbox_id = r.json()["sandboxID"]
    try:
        big = os.urandom(32 * 1024 * 1024)
        r = httpx.post(daemon.url + "/files", params={"path": "/home/user/big.bin"}, content=big,
                       headers={"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983", "X-API-KEY": daemon.api_key,
                                "Content-Type": "application/octet-stream"}, timeout=60)
        assert r.status_code == 507
        assert sh(daemon, sandbox_id, "ls /home/user/big.bin 2>&1; echo ok > /home/user/small && cat /home/user/small").stdout.endswith("ok\n")
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")
