"""Code-interpreter contexts in band (`abx serve --in-band-commands`, issue 32): the sandbox's
agent holds every pipe of a context's driver, the daemon sends its requests and follows its
output through the agent, and after the daemon is killed and restarted the next daemon finds
the contexts in the agent's list with their state. An execution in flight at the kill completes
in the sandbox (what it set is there for the next request) and the next request runs after it.
Driven by E2B's code-interpreter SDK on the offline `host` template."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from durable_helpers import start_in_band
from helpers import sandbox_host_pids, wait_until

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")


def pipes_of(pid: int) -> set[str]:
    """The pipes (as "pipe:[inode]") among a host process's open fds."""
    links = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            links.add(os.readlink(fd))
        except OSError:
            continue
    return {link for link in links if link.startswith("pipe:")}


def context_drivers(sandbox_id: str) -> list[int]:
    """Host pids of the sandbox's context drivers (each has its ABX_INTERP_TOKEN)."""
    drivers = []
    for pid in sandbox_host_pids(sandbox_id):
        try:
            if b"ABX_INTERP_TOKEN=" in Path(f"/proc/{pid}/environ").read_bytes():
                drivers.append(pid)
        except OSError:
            continue
    return drivers


def assert_daemon_holds_no_pipe_of(drivers: list[int], daemon_pid: int) -> None:
    held = pipes_of(daemon_pid)
    for driver in drivers:
        stdio = pipes_of(driver)
        assert stdio, f"driver {driver} has no pipe to check"
        assert not stdio & held, f"the daemon holds pipes of driver {driver}: {stdio & held}"


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "stop"])
def test_contexts_keep_their_state_across_a_restart_and_the_daemon_holds_no_pipe_of_them(
        in_band, monkeypatch, how):
    from e2b_code_interpreter import Sandbox as CodeSandbox

    sb = CodeSandbox.create(template="host", timeout=300)
    assert sb.run_code("x = 41").error is None
    made = sb.create_code_context(language="python", cwd="/tmp")
    assert sb.run_code("y = 'kept'", context=made).error is None
    bash = sb.create_code_context(language="bash")
    assert sb.run_code("export GREETING=hello", context=bash).error is None
    drivers = context_drivers(sb.sandbox_id)
    assert len(drivers) == 3, drivers  # the default Python context, `made` and `bash`
    assert_daemon_holds_no_pipe_of(drivers, in_band["d"].proc.pid)

    ended: list[object] = []

    def run_across_the_restart():
        try:
            ended.append(sb.run_code("import time; open('/tmp/started', 'w').close(); "
                                     "time.sleep(3); z = 'finished'", context=made))
        except Exception as error:  # noqa: BLE001 - its stream ends with the daemon
            ended.append(error)

    in_flight = threading.Thread(target=run_across_the_restart, daemon=True)
    in_flight.start()
    wait_until(lambda: sb.files.exists("/tmp/started"), what="the execution to start")
    d = in_band["d"]
    d.proc.send_signal(how)
    d.proc.wait()
    in_band["d"] = start_in_band(d.data_dir, monkeypatch)
    in_flight.join(30)
    assert ended, "the client of the execution in flight still waits"

    again = CodeSandbox.connect(sb.sandbox_id)
    assert again.run_code("x + 1").text == "42"
    ids = {c.id for c in again.list_code_contexts()}
    assert made.id in ids and bash.id in ids, ids
    # The execution in flight at the restart completed: what it set is there.
    assert again.run_code("y + ' ' + z", context=made).text == "kept finished"
    assert again.run_code("echo $GREETING", context=bash).logs.stdout == ["hello\n"]
    assert sorted(context_drivers(sb.sandbox_id)) == sorted(drivers), "a context started afresh"
    assert_daemon_holds_no_pipe_of(drivers, in_band["d"].proc.pid)
    again.kill()


def test_a_timeout_interrupts_the_code_and_keeps_the_context(in_band):
    from e2b_code_interpreter import Sandbox as CodeSandbox

    sb = CodeSandbox.create(template="host", timeout=300)
    assert sb.run_code("kept = 'yes'").error is None
    with pytest.raises(e2b.TimeoutException):
        sb.run_code("import time; time.sleep(600)", timeout=2)
    # Were the sleep not interrupted, this would wait behind it and time out.
    assert sb.run_code("kept", timeout=60).text == "yes"
    dies = sb.run_code("import os; os._exit(3)")
    assert dies.error is not None and dies.error.name == "ContextDied", dies.error
    assert sb.run_code("'started afresh'").text == "started afresh"
    sb.kill()
