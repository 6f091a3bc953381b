"""Issue 32: a sandbox's agent (abx-init, its PID 1) is never wedged or killed by its own root
user, and when it dies anyway (killed from the host, as the OOM killer would) every request in
flight ends with an error instead of hanging, the sandbox is reported ended with the reason
(`abx list`, `abx logs ID`), nothing of it is left behind, and the daemon keeps running."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from harness import ABX_BIN, start_daemon, stop_daemon
from helpers import abx, sandbox_host_pids, veth_prefix, wait_until
from test_runtime_boundary import assert_nothing_left, create, init_pid, run

pytestmark = pytest.mark.offline  # the `host` template needs no build

# What sandbox root can try against its init. PID 1 of a pid namespace ignores
# signals without a handler from inside it (init handles none); ptrace is refused by
# seccomp and /proc/1/mem by init being undumpable; prlimit on PID 1 was allowed
# (same ids) and set its open-file limit to 3, after which every request hung.
ATTACKS = """
for s in KILL SEGV TERM ABRT STOP INT HUP USR1 XCPU; do kill -$s 1; done
prlimit --pid 1 --nofile=3:3 && echo nofile-lowered
prlimit --pid 1 --cpu=1:1 && echo cpu-lowered
prlimit --pid 1 --as=4096:4096 && echo as-lowered
head -c 1 /proc/1/mem > /dev/null 2>&1 && echo mem-read
python3 -c 'import ctypes; print("ptrace", ctypes.CDLL(None).ptrace(16, 1, 0, 0))'
sleep 1
"""


def links(d) -> list[str]:
    """The network devices of the daemon's sandboxes (it has this one only)."""
    prefix = veth_prefix(d.data_dir / "sandboxes") or "\0"
    return [name for name in os.listdir("/sys/class/net") if name.startswith(prefix)]


def mounts(d, sandbox_id: str) -> list[str]:
    """Mounts of this sandbox the daemon or the host see (its own live in its mount
    namespace, which ends with its processes)."""
    return [line for pid in (d.proc.pid, os.getpid())
            for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
            if sandbox_id in line]


@pytest.fixture
def d(state_dir):
    daemon = start_daemon(state_dir / "state", shared_templates=False,
                          extra_args=("--warm-pool", "0"))
    yield daemon
    stop_daemon(daemon)


def test_root_in_the_sandbox_can_neither_kill_nor_wedge_its_agent(d):
    sandbox_id = create(d)
    agent = init_pid(sandbox_id)
    tried = abx(d, "exec", "--user", "root", sandbox_id, "--", "sh", "-c", ATTACKS, timeout=120)
    assert tried.returncode == 0, tried.stderr
    assert "lowered" not in tried.stdout and "mem-read" not in tried.stdout, tried.stdout
    assert "ptrace -1" in tried.stdout, tried.stdout
    assert init_pid(sandbox_id) == agent
    # The agent still serves new requests: a command, then a file.
    assert run(d, sandbox_id, "echo alive > /tmp/alive; cat /tmp/alive").stdout == "alive\n"
    assert run(d, sandbox_id, "echo again").stdout == "again\n"


def test_requests_in_flight_end_with_an_error_when_the_agent_is_killed(d, monkeypatch):
    from e2b_code_interpreter import Sandbox as CodeSandbox

    monkeypatch.setenv("E2B_API_URL", d.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", d.url)
    monkeypatch.setenv("E2B_API_KEY", d.api_key)
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{urlparse(d.url).port}")
    daemon_pid = d.proc.pid
    sb = CodeSandbox.create(template="host", timeout=300, allow_internet_access=True)
    sandbox_id = sb.sandbox_id
    assert links(d), "the sandbox has no veth to check for"

    streaming = subprocess.Popen([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c",
                                  "echo started; sleep 600"], env=d.env(), text=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
    assert streaming.stdout.readline() == "started\n"
    background = sb.commands.run("echo waiting; sleep 600", background=True)
    following = subprocess.Popen([str(ABX_BIN), "logs", sandbox_id, str(background.pid), "-f"],
                                 env=d.env(), text=True, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert following.stdout.readline() == "waiting\n"
    outcome: dict[str, object] = {}

    def run_code():
        try:
            outcome["result"] = sb.run_code(
                "import time; open('/tmp/code-started', 'w').close(); time.sleep(600)",
                timeout=180, request_timeout=180)
        except Exception as e:  # noqa: BLE001 - any error is the expected outcome
            outcome["error"] = e

    code = threading.Thread(target=run_code, daemon=True)
    code.start()
    wait_until(lambda: sb.files.exists("/tmp/code-started"), what="the code to start")

    os.kill(init_pid(sandbox_id), signal.SIGKILL)  # as the OOM killer would

    # Generous limits: what is asserted is an end with an error, not its speed.
    _, exec_err = streaming.communicate(timeout=120)
    reason = "its init was killed (signal: killed)"
    assert streaming.returncode == 137
    assert f"sandbox {sandbox_id} ended while the command ran: stopped: {reason}" in exec_err, \
        exec_err
    _, follow_err = following.communicate(timeout=120)
    assert following.returncode == 137
    assert f"ended while the command ran: stopped: {reason}" in follow_err, follow_err
    code.join(180)
    assert not code.is_alive(), "run_code still hangs"
    result = outcome.get("result")
    assert "error" in outcome or (result is not None and result.error is not None), outcome
    with pytest.raises(Exception):
        sb.files.read("/tmp/code-started", request_timeout=60)

    wait_until(lambda: sandbox_id not in abx(d, "list", "-q").stdout, timeout=30,
               what="the dead sandbox to leave abx list")
    logs = abx(d, "logs", sandbox_id)
    assert logs.returncode == 0, logs.stderr
    assert reason in logs.stdout, logs.stdout
    wait_until(lambda: not sandbox_host_pids(sandbox_id), timeout=30,
               what="the dead sandbox's processes to go")
    assert_nothing_left(sandbox_id)
    assert links(d) == [] and mounts(d, sandbox_id) == []
    assert d.proc.poll() is None and d.proc.pid == daemon_pid
    assert abx(d, "list").returncode == 0
