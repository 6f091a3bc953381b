"""Issue 37: the flight record keeps each command's output size with the first and last 4 KiB of
its output, and each code cell run_code ran (its context, language, code, and the error it
raised). Real daemon, `abx` binary, E2B's code-interpreter SDK."""
from __future__ import annotations

import json

import pytest
from helpers import abx

pytestmark = pytest.mark.offline
code_interpreter = pytest.importorskip("e2b_code_interpreter",
                                       reason="the E2B code-interpreter SDK is installed by "
                                       "make deps")


def events(d, sandbox_id: str) -> list[dict]:
    r = abx(d, "events", sandbox_id, "--json", "--type", "commands")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_a_commands_output_size_head_and_tail_are_recorded(own_daemon):
    d = own_daemon["d"]
    sandbox_id = abx(d, "create", "--template", "host").stdout.strip()
    r = abx(d, "exec", sandbox_id, "--", "sh", "-c",
            "echo first; head -c 20000 /dev/zero | tr '\\0' x; echo; echo last")
    assert r.returncode == 0, r.stderr
    ended = [e for e in events(d, sandbox_id) if e["event"] == "ended"][-1]
    # One stream: the order of stdout's and stderr's bytes between them is the pipes' race.
    assert ended["outputBytes"] == len("first\n") + 20000 + 1 + len("last\n")
    assert ended["outputHead"].startswith("first\nxxx") and len(ended["outputHead"]) == 4096
    assert ended["outputTail"].endswith("x\nlast\n") and len(ended["outputTail"]) == 4096
    small = abx(d, "exec", sandbox_id, "--", "echo", "tiny")
    assert small.returncode == 0
    ended = [e for e in events(d, sandbox_id) if e["event"] == "ended"][-1]
    assert ended["outputHead"] == "tiny\n" and "outputTail" not in ended, ended


def test_each_code_cell_is_recorded_with_the_error_it_raised(own_daemon):
    sb = code_interpreter.Sandbox.create(template="host", timeout=300)
    assert sb.run_code("x = 6 * 7").error is None
    assert sb.run_code("1 / 0").error is not None
    bash = sb.create_code_context(language="bash")
    assert sb.run_code("echo $((2 + 3))", context=bash).error is None
    cells = [e for e in events(own_daemon["d"], sb.sandbox_id) if e["event"].startswith("code")]
    assert [(e["event"], e.get("code")) for e in cells] == [
        ("code started", "x = 6 * 7"), ("code ended", None),
        ("code started", "1 / 0"), ("code ended", None),
        ("code started", "echo $((2 + 3))"), ("code ended", None)], cells
    assert cells[0]["language"] == "python" and "error" not in cells[1]
    assert cells[3]["error"] == "ZeroDivisionError", cells[3]
    assert cells[4]["language"] == "bash" and cells[4]["context"] == bash.id
    sb.kill()
