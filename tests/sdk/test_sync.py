"""The sync twin: same names, same behaviour, no await."""
from __future__ import annotations

import time

import pytest
from agent_sandbox.sync import (
    CommandExitException,
    NotFoundError,
    Sandbox,
    SandboxNotFound,
    WriteEntry,
)


def test_sync_end_to_end(conn, tmp_path):
    with Sandbox.create(template="base", **conn) as sandbox:
        sandbox.files.write("/home/user/sales.csv", "region,amount\nx,1\n")
        assert sandbox.files.read("sales.csv") == "region,amount\nx,1\n"
        sandbox.files.write([WriteEntry("a/1.txt", "1"), WriteEntry("a/2.txt", "2")])
        assert sorted(e.name for e in sandbox.files.list("a")) == ["1.txt", "2.txt"]
        assert b"".join(sandbox.files.read("a/1.txt", format="stream")) == b"1"
        assert sandbox.files.make_dir("a") is False
        with pytest.raises(NotFoundError):
            sandbox.files.read("nope")
        seen = []
        result = sandbox.commands.run("echo one; sleep 1; echo two",
                                      on_stdout=lambda chunk: seen.append(time.monotonic()))
        assert result.stdout == "one\ntwo\n" and len(seen) == 2 and seen[1] - seen[0] > 0.5
        with pytest.raises(CommandExitException):
            sandbox.commands.run("false")
        handle = sandbox.commands.run("cat", background=True, stdin=True)
        handle.send_stdin("piped\n")
        handle.close_stdin()
        assert handle.wait().stdout == "piped\n"
        sandbox.run_code("x = 1")
        assert sandbox.run_code("x + 1").text == "2"
        ctx = sandbox.create_code_context()
        assert ctx.id in {c.id for c in sandbox.list_code_contexts()}
        sandbox.remove_code_context(ctx)
        assert sandbox.is_running()
        sandbox_id = sandbox.sandbox_id
        assert sandbox_id in {s.sandbox_id for s in Sandbox.list(**conn)}
    with pytest.raises(SandboxNotFound):
        Sandbox.connect(sandbox_id, **conn)
