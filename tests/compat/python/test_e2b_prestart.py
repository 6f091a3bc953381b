"""Issue 14, Speed: sandboxes of code-interpreter-v1 handed out by the warm pool
come with the default Python context's interpreter already running (started in
the pool, off the request path), yet behave exactly as a context started on first
use: empty state, execution count 1, and the env vars given at create."""
from __future__ import annotations

import time

import pytest
from e2b_code_interpreter import Sandbox

DRIVER = "python3 -u -c"  # how the context's driver shows in ps (its source follows)


def driver_pids(sb: Sandbox) -> list[int]:
    out = sb.commands.run("ps -eo pid=,args=", user="root").stdout
    return [int(line.split()[0]) for line in out.splitlines() if DRIVER in line]


def pooled_sandbox(**create_args) -> tuple[Sandbox, int]:
    """A sandbox the warm pool made with Python prestarted, and the driver's pid.
    The first create of a spec misses the pool (it enters the pool then) and the
    pool refills one sandbox at a time, so a few creates may come back plain."""
    for _ in range(30):
        sb = Sandbox.create(timeout=120, **create_args)
        pids = driver_pids(sb)
        if pids:
            return sb, pids[0]
        sb.kill()
        time.sleep(1)  # let the pool's thread make one
    pytest.fail("30 creates of code-interpreter-v1 and none came from the warm pool prestarted")


def test_pooled_sandbox_has_python_running_before_first_run_code():
    sb, pid = pooled_sandbox()
    try:
        assert len(driver_pids(sb)) == 1
        execution = sb.run_code("import os\nos.getpid()")
        assert execution.error is None, execution.error
        assert execution.text == str(pid)  # the prestarted process served it
        assert execution.execution_count == 1  # the pool's readiness check was no execution
        assert sb.run_code("1+1").text == "2"
        assert [c.language for c in sb.list_code_contexts()] == ["python", "javascript"]
    finally:
        sb.kill()


def test_pooled_sandboxes_share_no_state():
    """One user's variables never reach the next user of a pooled sandbox."""
    first, _ = pooled_sandbox()
    try:
        assert first.run_code("secret = 41").error is None
        assert first.run_code("secret + 1").text == "42"
    finally:
        first.kill()
    second, _ = pooled_sandbox()
    try:
        execution = second.run_code("'secret' in dir()")
        assert execution.text == "False"
        assert execution.execution_count == 1
    finally:
        second.kill()


def test_env_vars_given_at_create_reach_run_code_despite_prestart():
    """The pool's interpreter started without them: it is replaced, not used."""
    sb, prestarted = pooled_sandbox(envs={"ABX_PRESTART_PROBE": "from-create"})
    try:
        execution = sb.run_code("import os\n(os.environ.get('ABX_PRESTART_PROBE'), os.getpid())")
        assert execution.error is None, execution.error
        value, pid = eval(execution.text)  # a tuple's repr
        assert value == "from-create"
        assert pid != prestarted
        assert driver_pids(sb) == [pid]  # the prestarted one was killed, not left idle
    finally:
        sb.kill()
