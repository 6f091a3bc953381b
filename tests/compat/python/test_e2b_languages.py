"""e2b_code_interpreter: the languages E2B's kernels speak, as E2B's own suites use them
(code-interpreter python/tests/sync/test_default_kernels.py, test_cwd.py, test_bash.py;
their JS twins are tests/defaultKernels.test.ts, cwd.test.ts, bash.test.ts)."""
from __future__ import annotations

import pytest
from e2b_code_interpreter import Sandbox


@pytest.fixture
def ci():
    sb = Sandbox.create(timeout=120)
    yield sb
    sb.kill()


def test_js_alias(ci):
    """Mirrors test_default_kernels.py::test_js_kernel: language="js" is javascript."""
    execution = ci.run_code("console.log('Hello, World!')", language="js")
    assert execution.logs.stdout == ["Hello, World!\n"] and execution.error is None


def test_js_and_javascript_share_the_default_context(ci):
    """"js" is an alias, not a second kernel: state set under one name is seen by the other."""
    ci.run_code("globalThis.sharedByAlias = 41", language="javascript")
    assert ci.run_code("sharedByAlias + 1", language="js").text == "42"


def test_js_esm_imports(ci):
    """Mirrors test_default_kernels.py::test_js_esm_imports (indented, as the suite writes it)."""
    execution = ci.run_code(
        """
    import { readFileSync } from 'fs'
    console.log(typeof readFileSync)
    """,
        language="js",
    )
    assert execution.logs.stdout == ["function\n"] and execution.error is None


def test_js_import_forms_bind_for_later_cells(ci):
    """Default, namespace and renamed imports; the bindings outlive the cell."""
    ci.run_code("import path, * as ns from 'node:path'\nimport { join as j } from 'path'", language="js")
    execution = ci.run_code("[path.sep, typeof ns.join, j('a', 'b')].join(' ')", language="js")
    assert execution.text == "/ function a/b"


def test_js_dynamic_import(ci):
    """import() in a cell, awaited at top level or inside a function."""
    execution = ci.run_code(
        "const { join } = await import('node:path')\n"
        "function load() { return import('fs') }\n"
        "join('a', typeof (await load()).readFileSync)",
        language="js",
    )
    assert execution.error is None and execution.text == "a/function"


def test_js_top_level_await(ci):
    """Mirrors test_default_kernels.py::test_js_top_level_await: the awaited value is the result."""
    execution = ci.run_code(
        """
    await Promise.resolve('Hello World!')
    """,
        language="js",
    )
    assert execution.text == "Hello World!"


def test_js_top_level_await_keeps_declarations(ci):
    """A cell that awaits still declares its consts, functions and classes for later cells."""
    ci.run_code(
        "const base = await Promise.resolve(40)\n"
        "function twice(n) { return 2 * n }\n"
        "class Adder { add(n) { return base + n } }",
        language="js",
    )
    assert ci.run_code("new Adder().add(twice(1))", language="js").text == "42"


def test_js_error_after_await_is_reported(ci):
    """A rejection after an await is the execution's error, not a lost promise."""
    execution = ci.run_code("await null\nthrow new TypeError('late')", language="js")
    assert execution.error.name == "TypeError" and execution.error.value == "late"


def test_ts_kernel(ci):
    """Mirrors test_default_kernels.py::test_ts_kernel: language="ts" strips types and runs."""
    execution = ci.run_code(
        "const message: string = 'Hello, World!'; console.log(message)", language="ts"
    )
    assert execution.logs.stdout == ["Hello, World!\n"] and execution.error is None


def test_ts_cwd(ci):
    """Mirrors test_cwd.py::test_cwd_typescript."""
    assert ci.run_code("process.cwd()", language="ts").text == "/home/user"


def test_ts_types_interfaces_and_await(ci):
    """Interfaces, enums and top-level await in TypeScript; types are not checked (transpile only)."""
    execution = ci.run_code(
        "interface Point { x: number }\n"
        "enum Color { Red, Green }\n"
        "const p: Point = { x: await Promise.resolve(40) }\n"
        "p.x + Color.Green + (('1' as unknown) as number)",
        language="typescript",
    )
    assert execution.text == "411"


def test_ts_syntax_error_names_the_place(ci):
    """A TypeScript syntax error says what and where."""
    execution = ci.run_code("const x: = 1", language="ts")
    assert execution.error.name == "SyntaxError" and "line 1" in execution.error.value


def test_python_indented_cell_is_dedented(ci):
    """E2B's suites write cells as indented triple-quoted strings; IPython dedents them."""
    execution = ci.run_code(
        """
        x = 40
        if x:
            x += 2
        x
        """
    )
    assert execution.error is None and execution.text == "42"


def test_python_shell_escape(ci):
    """Mirrors test_bash.py::test_bash: `!cmd` runs in a shell in the context's cwd."""
    result = ci.run_code("!pwd")
    assert "".join(result.logs.stdout).strip() == "/home/user"


def test_python_shell_escape_capture_and_expansion(ci):
    """`x = !cmd` keeps output lines; {expr} expands from the namespace; _exit_code is set."""
    execution = ci.run_code(
        """
        word = 'abc'
        lines = !echo {word.upper()}; echo two
        !exit 3
        (lines, _exit_code)
        """
    )
    assert execution.error is None and execution.text == "(['ABC', 'two'], 3)"


def test_python_bang_inside_a_string_is_text(ci):
    """A line starting with `!` inside a multi-line string stays text."""
    execution = ci.run_code("s = '''\n!not a command\n'''\n!true\ns.strip()")
    assert execution.text == "!not a command"


def test_unknown_language_names_the_known_ones(ci):
    """An unknown language is refused with the list of known names (aliases included)."""
    with pytest.raises(Exception) as refused:
        ci.run_code("1", language="cobol")
    assert "typescript" in str(refused.value) and "js" in str(refused.value)
