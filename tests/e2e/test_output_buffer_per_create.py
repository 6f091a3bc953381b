"""A create's `outputBufferBytes`: that sandbox's agent keeps only its newest N bytes of a
command's output, another sandbox the daemon's default (1 MiB); a fork keeps the setting; a
value out of range is a 400 naming the field. Real daemon, E2B SDK for the commands."""
from __future__ import annotations

import pytest
from helpers import wait_until

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")

WRITTEN = 200_000  # bytes the command writes: past a small buffer, within the default


def create(d, **extra) -> str:
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", "timeout": 300, **extra})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def kept(d, sandbox_id: str, pid: int) -> dict:
    with d.api() as api:
        r = api.get(f"/abx/v1/sandboxes/{sandbox_id}/processes/{pid}/output")
    assert r.status_code == 200, r.text
    return r.json()


def write_and_wait(d, sandbox_id: str) -> dict:
    sb = e2b.Sandbox.connect(sandbox_id)
    pid = sb.commands.run(f"head -c {WRITTEN} /dev/zero | tr '\\0' x; sleep 60",
                          background=True).pid
    wait_until(lambda: kept(d, sandbox_id, pid)["end"] == WRITTEN, what="all output written")
    return kept(d, sandbox_id, pid)


def test_a_sandbox_keeps_the_output_its_create_asked_for(own_daemon):
    d = own_daemon["d"]
    small = create(d, outputBufferBytes=8192)
    with d.api() as api:
        assert api.get(f"/sandboxes/{small}").json()["outputBufferBytes"] == 8192
    output = write_and_wait(d, small)
    assert output["start"] > 0, "older output than the buffer is no longer kept"
    assert output["end"] - output["start"] <= 64 * 1024, output["start"]

    default = create(d)
    assert write_and_wait(d, default)["start"] == 0, "the default 1 MiB keeps it all"

    with d.api() as api:
        forked = api.post(f"/sandboxes/{small}/fork", json={"timeout": 60})
        assert forked.status_code == 201, forked.text
        child = forked.json()[0]["sandbox"]["sandboxID"]
        assert api.get(f"/sandboxes/{child}").json()["outputBufferBytes"] == 8192
        for value in (1024, 1 << 30, "big"):
            r = api.post("/sandboxes", json={"templateID": "host", "outputBufferBytes": value})
            assert r.status_code == 400, r.text
            assert "outputBufferBytes" in r.json()["message"]
        for sandbox_id in (small, default, child):
            api.delete(f"/sandboxes/{sandbox_id}")
