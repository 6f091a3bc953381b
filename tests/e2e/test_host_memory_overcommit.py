"""Memory limits overcommit by default, as Docker's and Kubernetes' do: a daemon with no
config admits sandboxes whose limits add up past the host's memory (they are caps; an idle
sandbox uses about 1 MiB). Real daemon, real sandboxes."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.offline


def mem_total_mb() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no MemTotal")


def test_limits_past_the_hosts_memory_are_admitted_by_default(own_daemon):
    d = own_daemon["d"]
    each = min(65536, mem_total_mb() * 45 // 100)  # three of them: 135 % of the host
    made = []
    with d.api() as api:
        try:
            for _ in range(3):
                r = api.post("/sandboxes",
                             json={"templateID": "host", "timeout": 120, "memoryMB": each})
                assert r.status_code == 201, r.text
                made.append(r.json()["sandboxID"])
        finally:
            for sandbox_id in made:
                api.delete(f"/sandboxes/{sandbox_id}")
