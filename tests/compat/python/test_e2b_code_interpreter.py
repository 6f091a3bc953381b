"""e2b_code_interpreter: run_code, contexts, callbacks, rich results, errors."""
from __future__ import annotations

import pytest
from e2b_code_interpreter import Sandbox


@pytest.fixture
def ci():
    sb = Sandbox.create(timeout=120)
    yield sb
    sb.kill()


def test_run_code_python_with_callbacks(ci):
    """run_code(code, on_stdout, on_result): stdout and the last expression."""
    out, results = [], []
    execution = ci.run_code("print('hi')\n6 * 7", on_stdout=lambda m: out.append(m.line), on_result=results.append)
    assert execution.logs.stdout == ["hi\n"] and execution.text == "42"
    assert out == ["hi\n"] and results[0].text == "42"


def test_run_code_is_stateful(ci):
    """run_code keeps state in the default context."""
    ci.run_code("x = 5")
    assert ci.run_code("x + 1").text == "6"


def test_run_code_javascript(ci):
    """run_code(language='javascript')."""
    assert ci.run_code("const a = 20; a + 22", language="javascript").text == "42"


def test_run_code_error_has_traceback(ci):
    """run_code: an exception gives execution.error with name, value and traceback."""
    execution = ci.run_code("1 / 0")
    assert execution.error.name == "ZeroDivisionError"
    assert "division by zero" in execution.error.value and execution.error.traceback


def test_run_code_rich_result_png(ci):
    """run_code: a matplotlib figure is a PNG result (code-interpreter-v1 ships matplotlib)."""
    execution = ci.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
    assert any(r.png for r in execution.results)
    frame = ci.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    assert frame.results and frame.results[0].html and "<table" in frame.results[0].html


def test_run_code_timeout(ci):
    """run_code(timeout=...) gives up on a long execution."""
    with pytest.raises(Exception):
        ci.run_code("import time; time.sleep(30)", timeout=1)


def test_code_contexts_create_list_restart_remove(ci):
    """create_code_context, list_code_contexts, restart_code_context, remove_code_context."""
    ctx = ci.create_code_context(cwd="/tmp", language="python")
    ci.run_code("y = 1", context=ctx)
    assert ci.run_code("import os; os.getcwd()", context=ctx).text == "/tmp"
    assert ctx.id in [c.id for c in ci.list_code_contexts()]
    ci.restart_code_context(ctx)
    assert ci.run_code("y", context=ctx).error.name == "NameError"
    ci.remove_code_context(ctx)
    assert ctx.id not in [c.id for c in ci.list_code_contexts()]


def test_fresh_sandbox_lists_default_python_and_javascript_contexts(ci):
    """Mirrors code-interpreter tests/sync/test_contexts.py::test_list_contexts: E2B's
    server makes a python and a javascript context at start-up."""
    languages = [c.language for c in ci.list_code_contexts()]
    assert "python" in languages and "javascript" in languages
    # The default python context is the one run_code uses: listing did not add another.
    ci.run_code("y = 1")
    assert [c.language for c in ci.list_code_contexts()] == languages


def test_created_context_is_listed_last_and_runs_as_e2b_kernels(ci):
    """Mirrors code-interpreter tests/sync/test_contexts.py::test_create_context_with_options:
    a new context comes last in the list; kernels run as root (E2B's Jupyter server
    runs as root) in the context's cwd, /home/user by default."""
    ctx = ci.create_code_context(language="python", cwd="/root")
    last = ci.list_code_contexts()[-1]
    assert (last.id, last.language, last.cwd) == (ctx.id, "python", "/root")
    assert ci.run_code("import os; os.getcwd()", context=ctx).text == "/root"
    who = ci.run_code("import os; (os.getuid(), os.getcwd(), os.environ['HOME'])").text
    assert who == "(0, '/home/user', '/root')"
