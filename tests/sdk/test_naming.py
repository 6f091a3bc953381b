"""Issue 36: the SDK's class names as E2B's: `AsyncSandbox` is the async class,
`agent_sandbox.sync.Sandbox` the blocking one; `agent_sandbox.Sandbox` (the async class under
its old name) still works, with a PendingDeprecationWarning that names both (hidden in a plain
run, so the seed example prints none)."""
from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import agent_sandbox
import agent_sandbox.sync
from agent_sandbox import AsyncSandbox, ProviderSandbox


def test_new_names_import_without_any_warning():
    # -W error: a warning raised by importing the package or the new names fails the run.
    code = ("import agent_sandbox, agent_sandbox.sync\n"
            "from agent_sandbox import *\n"
            "from agent_sandbox import AsyncSandbox, ProviderSandbox\n"
            "from agent_sandbox.sync import Sandbox\n"
            "assert 'AsyncSandbox' in agent_sandbox.__all__\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], check=False,
                          capture_output=True, text=True, timeout=60)
    # `import *` takes every name of __all__, the deprecated `Sandbox` too: it alone may warn.
    assert done.returncode != 0 and "agent_sandbox.Sandbox is deprecated" in done.stderr, \
        done.stderr
    without_star = code.replace("from agent_sandbox import *\n", "")
    done = subprocess.run([sys.executable, "-W", "error", "-c", without_star],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_old_name_is_the_async_class_with_a_deprecation_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from agent_sandbox import Sandbox
    assert Sandbox is AsyncSandbox
    deprecations = [w for w in caught if issubclass(w.category, PendingDeprecationWarning)]
    assert deprecations, "no PendingDeprecationWarning"
    message = str(deprecations[0].message)
    assert "AsyncSandbox" in message and "agent_sandbox.sync.Sandbox" in message, message
    # It points at the importing line, not at the SDK or importlib.
    assert deprecations[0].filename == __file__, deprecations[0].filename
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert agent_sandbox.Sandbox is AsyncSandbox
    assert any(issubclass(w.category, PendingDeprecationWarning) for w in caught)


def test_which_is_async_and_which_blocks():
    assert inspect.iscoroutinefunction(AsyncSandbox.create)
    assert inspect.iscoroutinefunction(AsyncSandbox.kill)
    assert not inspect.iscoroutinefunction(agent_sandbox.sync.Sandbox.create)
    assert issubclass(ProviderSandbox, AsyncSandbox)
    assert "AsyncSandbox" in (AsyncSandbox.__doc__ or "")
    assert "agent_sandbox.sync.Sandbox" in (AsyncSandbox.__doc__ or "")
    assert "AsyncSandbox" in (agent_sandbox.sync.Sandbox.__doc__ or "")


async def test_async_sandbox_runs_a_command(conn):
    async with await AsyncSandbox.create(**conn) as sandbox:
        assert isinstance(sandbox, AsyncSandbox)
        assert (await sandbox.commands.run("echo async")).stdout == "async\n"


def test_sync_sandbox_runs_a_command(conn):
    with agent_sandbox.sync.Sandbox.create(**conn) as sandbox:
        assert sandbox.commands.run("echo blocking").stdout == "blocking\n"


def test_a_plain_run_of_code_on_the_old_name_prints_no_warning():
    """The seed example (`make demo`) imports the old name: its output stays clean."""
    done = subprocess.run([sys.executable, "-c", "from agent_sandbox import Sandbox"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
