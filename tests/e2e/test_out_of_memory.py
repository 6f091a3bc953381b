"""Issue 36 (major 2) and 37: a command the sandbox's memory limit killed is named as such, with
the limit and how to raise it, in the CLI, the E2B SDK's exception, the sandbox's log and its
events; a command killed any other way is not. Real daemon, `abx` binary, E2B SDK."""
from __future__ import annotations

import json

import pytest
from helpers import abx

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")

HOG = "python3 -c 'x = bytearray(300 * 1024 * 1024)'"


def test_an_out_of_memory_kill_says_so_with_the_limit_and_how_to_raise_it(own_daemon):
    d = own_daemon["d"]
    made = abx(d, "create", "--template", "host", "--memory", "64")
    assert made.returncode == 0, made.stderr
    sandbox_id = made.stdout.strip()

    r = abx(d, "exec", sandbox_id, "--", "sh", "-c", f"exec {HOG}")
    assert r.returncode == 137, (r.returncode, r.stderr)
    assert "out of memory" in r.stderr and "64 MiB" in r.stderr, r.stderr
    assert "--memory" in r.stderr, r.stderr

    with pytest.raises(e2b.CommandExitException) as raised:
        e2b.Sandbox.connect(sandbox_id).commands.run(f"exec {HOG}")
    assert raised.value.exit_code == 137
    assert "out of memory" in (raised.value.error or ""), raised.value

    # Killed another way (its own SIGKILL): 137 too, and not called out of memory.
    r = abx(d, "exec", sandbox_id, "--", "sh", "-c", "kill -9 $$")
    assert r.returncode == 137, (r.returncode, r.stderr)
    assert "out of memory" not in r.stderr, r.stderr

    log = abx(d, "logs", sandbox_id)
    assert log.returncode == 0, log.stderr
    assert log.stdout.count("out of memory") == 2, log.stdout
    events = abx(d, "events", sandbox_id, "--json")
    assert events.returncode == 0, events.stderr
    ended = [e for e in map(json.loads, events.stdout.splitlines())
             if e.get("type") == "commands" and e.get("event") == "ended"]
    assert [e.get("outOfMemory", False) for e in ended] == [True, True, False], ended
