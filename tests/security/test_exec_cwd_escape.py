"""An API caller's cwd cannot lead a command out of the sandbox's root (the CVE-2024-21626
class). Init's child once chdir'd while it still held every fd of init, so `exec --cwd
/proc/self/fd/250` landed on init's staging tmpfs (the overlay's raw upper dir) and the command
wrote there behind overlayfs's back. Through `abx exec` (as `user` and as root) and the SDK's
`commands.run`, each cwd through /proc's fd, cwd and root links ends with a clear error naming
it, the command never runs, and no file appears in any directory init holds open; the files
API refuses the same paths."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_sandbox.errors import SandboxException
from agent_sandbox.sync import Sandbox
from harness import Daemon, start_daemon, stop_daemon
from helpers import abx, sandbox_host_pids

pytestmark = pytest.mark.offline  # the `host` template needs no build

MARKER = "abx-cwd-escape-marker"
CWDS = [f"/proc/self/fd/{n}" for n in (3, 4, 5, 6, 7, 8, 9, 10, 250)] + [
    "/proc/thread-self/fd/250", "/dev/fd/250", "/proc/1/fd/250", "/proc/self/cwd",
    "/proc/1/cwd", "/proc/1/root", "/proc/self/root/..", "/proc/self/fd/250/..",
]
# What the caller is told instead of the command running.
CLEAR = ("not a directory inside the sandbox", "no such directory in the sandbox",
         "the user may not enter this directory in the sandbox")


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """The host template needs no build."""


@pytest.fixture(scope="module")
def host_sandbox(tmp_path_factory) -> Iterator[tuple[Daemon, str]]:
    state = tmp_path_factory.mktemp("abx-cwd")
    state.chmod(0o755)
    d = start_daemon(state / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host"})
            assert r.status_code == 201, r.text
        yield d, r.json()["sandboxID"]
    finally:
        stop_daemon(d)


def init_pid(sandbox_id: str) -> int:
    """The host pid of the sandbox's init (pid 1 in its namespace)."""
    for pid in sandbox_host_pids(sandbox_id):
        status = Path(f"/proc/{pid}/status").read_text()
        nspid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
        if nspid.split()[-1] == "1":
            return pid
    raise AssertionError(f"no init found for {sandbox_id}")


def markers_init_can_reach(sandbox_id: str) -> list[str]:
    """Every directory init holds open (the overlay's upper dir among them) with the marker."""
    fds = Path(f"/proc/{init_pid(sandbox_id)}/fd")
    found = []
    for fd in fds.iterdir():
        if fd.is_dir() and MARKER in os.listdir(fd):
            found.append(str(fd))
    return found


def assert_clear(line: str, cwd: str) -> None:
    assert cwd in line and any(reason in line for reason in CLEAR), line
    assert "sandbox init" not in line and "chdir" not in line, line


@pytest.mark.parametrize("user", ["user", "root"])
@pytest.mark.parametrize("cwd", CWDS)
def test_exec_in_a_proc_link_cwd_is_refused(host_sandbox, cwd, user):
    d, sandbox_id = host_sandbox
    r = abx(d, "exec", "--user", user, "--cwd", cwd, sandbox_id, "--", "sh", "-c",
            f"touch {MARKER}; echo ran")
    assert "ran" not in r.stdout, f"the command ran in {cwd}"
    assert r.returncode != 0
    assert_clear(r.stderr.strip().splitlines()[-1], cwd)
    assert markers_init_can_reach(sandbox_id) == []
    inside = abx(d, "exec", "--user", "root", sandbox_id, "--", "ls", "-a", "/")
    assert MARKER not in inside.stdout
    assert d.proc.poll() is None


def test_sdk_commands_run_in_a_proc_link_cwd_is_refused(host_sandbox):
    d, sandbox_id = host_sandbox
    sandbox = Sandbox.connect(sandbox_id, api_key=d.api_key, api_url=d.url)
    try:
        for cwd in ["/proc/self/fd/250", "/proc/1/cwd", "/proc/self/root", "/dev/fd/250"]:
            with pytest.raises(SandboxException) as refused:
                sandbox.commands.run(f"touch {MARKER}; echo ran", cwd=cwd, user="root")
            assert_clear(str(refused.value), cwd)
        # The files API resolves its paths inside the root as well.
        for path in ["/proc/self/fd/250", "/proc/1/cwd", "/proc/1/root/tmp"]:
            with pytest.raises(SandboxException):
                sandbox.files.write(f"{path}/{MARKER}", "escaped", user="root")
            with pytest.raises(SandboxException):
                sandbox.files.list(path, user="root")
        # An ordinary cwd, a link to one among them, still works.
        sandbox.commands.run("mkdir -p /tmp/real && ln -sfn /tmp/real /tmp/link")
        assert sandbox.commands.run("pwd -P", cwd="/tmp/link").stdout == "/tmp/real\n"
    finally:
        sandbox.close()
    assert markers_init_can_reach(sandbox_id) == []
