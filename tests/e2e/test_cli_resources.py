"""`abx create --cpus N --memory SIZE --disk SIZE`: the limits reach the sandbox (what
`abx info` shows and what /proc/meminfo and nproc say inside it); a size that is none is a
one-line error. Real daemon, real `abx` binary, offline `host` template."""
from __future__ import annotations

import pytest
from helpers import abx

pytestmark = pytest.mark.offline


def test_create_takes_cpus_memory_and_disk(daemon):
    r = abx(daemon, "create", "host", "--cpus", "1", "--memory", "256m", "--disk", "2g")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    try:
        info = abx(daemon, "info", sandbox).stdout
        assert "1 CPU, 256 MiB memory, 2048 MiB disk" in info, info
        inside = abx(daemon, "exec", sandbox, "--", "sh", "-c", "head -1 /proc/meminfo; nproc")
        assert inside.returncode == 0, inside.stderr
        assert inside.stdout.split() == ["MemTotal:", str(256 * 1024), "kB", "1"], inside.stdout
    finally:
        abx(daemon, "kill", sandbox, "--yes")


@pytest.mark.parametrize("flag,value", [("--memory", "lots"), ("--memory", "0.5m"),
                                        ("--disk", "2x")])
def test_a_size_that_is_none_is_a_clear_error(daemon, flag, value):
    r = abx(daemon, "create", "host", flag, value)
    assert r.returncode == 2 and r.stdout == ""  # a usage error: then the usage line
    assert r.stderr.splitlines() == [
        f"abx: {flag}: '{value}' is not a size; give MiB or a unit, e.g. 512m, 2g, 1024",
        "Usage: abx create [OPTIONS] [template]", "run `abx create --help` for more"]
