"""Issue 36 minor: `abx list --state running|paused` and `--limit N`, through the real `abx`
against a real daemon (`host` template, no build)."""
from __future__ import annotations

import pytest
from helpers import abx

pytestmark = pytest.mark.offline


def ids(daemon, *flags: str) -> list[str]:
    r = abx(daemon, "list", "-q", *flags)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_list_by_state_and_limited(daemon):
    made = [abx(daemon, "create", "host").stdout.strip() for _ in range(2)]
    running, paused = made
    try:
        r = abx(daemon, "pause", paused)
        assert r.returncode == 0, r.stderr
        assert paused in ids(daemon, "--state", "paused")
        assert running not in ids(daemon, "--state", "paused")
        assert running in ids(daemon, "--state", "running")
        assert paused not in ids(daemon, "--state", "running")
        assert len(ids(daemon, "--limit", "1")) == 1
        r = abx(daemon, "list", "--state", "stopped")
        assert r.returncode == 2 and "stopped" in r.stderr, r.stderr
    finally:
        abx(daemon, "kill", "--yes", *made)


def test_kill_all_by_metadata_kills_only_those(daemon):
    tagged = [abx(daemon, "create", "host", "--metadata", "job=sweep-7").stdout.strip()
              for _ in range(2)]
    other = abx(daemon, "create", "host", "--metadata", "job=keep").stdout.strip()
    try:
        r = abx(daemon, "kill", "--all", "--metadata", "job=sweep-7", "--yes")
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.split()[1::2]) == sorted(tagged), r.stdout
        left = ids(daemon)
        assert other in left and not set(tagged) & set(left)
        r = abx(daemon, "kill", "--metadata", "job=keep", "--yes")  # without --all: a usage error
        assert r.returncode == 2 and "--all" in r.stderr, r.stderr
    finally:
        abx(daemon, "kill", "--yes", other, *tagged)
