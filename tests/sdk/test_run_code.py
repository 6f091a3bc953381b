"""sandbox.run_code and code contexts."""
from __future__ import annotations

import time

import pytest
from agent_sandbox import NotFoundError, Sandbox, TimeoutException


async def test_state_persists_between_runs(conn):
    async with await Sandbox.create(**conn) as sandbox:
        first = await sandbox.run_code("x = 1")
        assert first.exit_code == 0 and first.error is None
        second = await sandbox.run_code("x + 1")
        assert second.text == "2"
        assert second.results[0].is_main_result and "text" in second.results[0].formats()


async def test_stdout_stderr_logs_and_callbacks(conn):
    async with await Sandbox.create(**conn) as sandbox:
        out, err, results = [], [], []
        execution = await sandbox.run_code(
            "import sys\nprint('a')\nprint('b', file=sys.stderr)\n40 + 2",
            on_stdout=out.append, on_stderr=err.append, on_result=results.append)
        assert execution.stdout == "a\n" and execution.stderr == "b\n"
        assert execution.logs.stdout == ["a\n"]
        assert execution.text == "a\n42"
        assert "".join(out) == "a\n" and "".join(err) == "b\n" and results[0].text == "42"
        assert execution.execution_count is not None


async def test_errors_carry_traceback_and_leave_the_context_usable(conn):
    async with await Sandbox.create(**conn) as sandbox:
        errors = []
        failed = await sandbox.run_code("y = 5\n1 / 0", on_error=errors.append)
        assert failed.error.name == "ZeroDivisionError" and "1 / 0" in failed.error.traceback
        assert failed.exit_code == 1 and errors[0].name == "ZeroDivisionError"
        assert (await sandbox.run_code("y")).text == "5"
        exited = await sandbox.run_code("import sys\nsys.exit(4)")
        assert exited.exit_code == 4


async def test_timeout_interrupts_code_not_sandbox(conn):
    async with await Sandbox.create(**conn) as sandbox:
        await sandbox.run_code("z = 'kept'")
        started = time.monotonic()
        with pytest.raises(TimeoutException):
            await sandbox.run_code("import time\nwhile True: time.sleep(0.1)", timeout=2)
        assert time.monotonic() - started < 10
        assert (await sandbox.run_code("z")).text == "kept"  # text/plain loses one layer of quotes, as in E2B
        assert await sandbox.is_running()


async def test_envs_apply_to_one_execution(conn):
    async with await Sandbox.create(**conn) as sandbox:
        with_env = await sandbox.run_code("import os\nprint(os.environ.get('K'))", envs={"K": "v"})
        assert with_env.stdout == "v\n"


async def test_contexts(conn):
    async with await Sandbox.create(**conn) as sandbox:
        ctx = await sandbox.create_code_context(cwd="/tmp")
        assert ctx.id and ctx.language == "python" and ctx.cwd == "/tmp"
        assert (await sandbox.run_code("import os\nprint(os.getcwd())", context=ctx)).stdout == "/tmp\n"
        await sandbox.run_code("secret = 1", context=ctx)
        default = await sandbox.run_code("'secret' in globals()")
        assert default.text == "False"
        assert ctx.id in {c.id for c in await sandbox.list_code_contexts()}
        await sandbox.restart_code_context(ctx)
        restarted = await sandbox.run_code("'secret' in globals()", context=ctx)
        assert restarted.text == "False"
        await sandbox.remove_code_context(ctx)
        assert ctx.id not in {c.id for c in await sandbox.list_code_contexts()}
        with pytest.raises(NotFoundError):
            await sandbox.run_code("1", context=ctx)
