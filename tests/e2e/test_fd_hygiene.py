"""Every fd the daemon holds is close-on-exec, so the helpers it starts
(newuidmap, mmdebstrap, a sandbox's init) never inherit its listening socket,
its client connections, its state db or its data-dir lock."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from harness import start_daemon, stop_daemon
from helpers import abx, create

O_CLOEXEC = 0o2000000


def listening_socket_inode(port: int) -> str:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "0A":  # LISTEN
                return fields[9]
    raise AssertionError(f"no listening socket on port {port}")


def fd_targets(pid: str) -> dict[str, str]:
    targets = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                targets[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
    except OSError:
        pass  # the process exited
    return targets


def holders_of(target: str) -> set[int]:
    return {int(pid) for pid in os.listdir("/proc") if pid.isdigit()
            and target in fd_targets(pid).values()}


def fds_without_cloexec(pid: int) -> list[str]:
    missing = []
    for fd, target in fd_targets(str(pid)).items():
        if int(fd) <= 2:
            continue
        try:
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        flags = int(info.split("flags:")[1].split()[0], 8)
        if not flags & O_CLOEXEC:
            missing.append(f"{fd} -> {target}")
    return missing


def test_only_the_daemon_holds_its_listening_socket_and_all_its_fds_are_cloexec(state_dir):
    d = start_daemon(state_dir / "state", extra_args=("--warm-pool", "0"))
    try:
        sandbox_id = create(d)
        ran = abx(d, "exec", sandbox_id, "--", "true")
        assert ran.returncode == 0, ran.stderr
        with d.api() as api:  # keeps an accepted connection open meanwhile
            assert api.get("/v2/sandboxes").status_code == 200
            listener = f"socket:[{listening_socket_inode(urlparse(d.url).port)}]"
            assert holders_of(listener) == {d.proc.pid}
            assert holders_of(str(d.data_dir / "daemon.lock")) == {d.proc.pid}
            assert fds_without_cloexec(d.proc.pid) == []
    finally:
        stop_daemon(d)
