"""`Sandbox.create(cpu_count=, memory_mb=, disk_mb=)`: the limits reach the sandbox (its info
and what /proc/meminfo and nproc say inside); values that are none raise before any request.
The SDK's public API against a real daemon, offline `host` template."""
from __future__ import annotations

import pytest

from agent_sandbox import InvalidArgumentException
from agent_sandbox.sync import Sandbox

pytestmark = pytest.mark.offline


def test_create_takes_cpu_memory_and_disk(daemon, monkeypatch):
    monkeypatch.setenv("ABX_SANDBOX_API_URL", daemon.url)
    monkeypatch.setenv("ABX_SANDBOX_API_KEY", daemon.api_key)
    with Sandbox.create(template="host", cpu_count=1, memory_mb=256, disk_mb=2048) as sandbox:
        inside = sandbox.commands.run("head -1 /proc/meminfo; nproc")
        assert inside.stdout.split() == ["MemTotal:", str(256 * 1024), "kB", "1"]
        with daemon.api() as api:
            info = api.get(f"/sandboxes/{sandbox.sandbox_id}").json()
        assert (info["cpuCount"], info["memoryMB"], info["diskSizeMB"]) == (1, 256, 2048)


@pytest.mark.parametrize("limits", [{"memory_mb": 0}, {"cpu_count": -1}, {"disk_mb": 1.5},
                                    {"memory_mb": "256"}, {"cpu_count": True}])
def test_limits_that_are_none_raise(limits, tmp_path, monkeypatch):
    monkeypatch.setenv("ABX_SANDBOX_API_URL", "http://127.0.0.1:9")  # never reached
    with pytest.raises(InvalidArgumentException, match="must be a whole number above 0"):
        Sandbox.create(template="host", **limits)
