"""`abx exec` takes Docker's short flags (-e, -u, -w) and names an unknown flag with a
did-you-mean, instead of telling a user who did put the command after `--` to do so. Real
daemon, real `abx` binary, offline `host` template."""
from __future__ import annotations

from typing import Iterator

import pytest
from harness import Daemon
from helpers import abx

pytestmark = pytest.mark.offline


@pytest.fixture
def sandbox(daemon: Daemon) -> Iterator[str]:
    r = abx(daemon, "create", "--template", "host")
    assert r.returncode == 0, r.stderr
    yield r.stdout.strip()
    abx(daemon, "kill", r.stdout.strip(), "--yes")


def test_docker_short_flags_work_before_and_after_the_id(daemon, sandbox):
    r = abx(daemon, "exec", "-e", "A=1", "-e", "B=2", "-u", "root", "-w", "/tmp", sandbox, "--",
            "sh", "-c", "echo $A $B $(id -u) $(pwd)")
    assert r.returncode == 0 and r.stdout == "1 2 0 /tmp\n", r.stderr
    r = abx(daemon, "exec", sandbox, "-u", "user", "-w", "/etc", "--", "sh", "-c",
            "echo $(id -un) $(pwd)")
    assert r.returncode == 0 and r.stdout == "user /etc\n", r.stderr


def test_an_unknown_flag_is_named_with_a_guess(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--tmeout", "5", "--", "ls")
    assert r.returncode == 2
    assert r.stderr == "abx: unknown flag --tmeout for `abx exec`; did you mean --timeout?\n"
    r = abx(daemon, "exec", sandbox, "--no-such-thing", "--", "ls")
    assert r.returncode == 2
    assert r.stderr.startswith("abx: unknown flag --no-such-thing for `abx exec`"), r.stderr
    assert "put the command after --" not in r.stderr
    # Without `--`, the command's own flags still get the hint to use it.
    r = abx(daemon, "exec", sandbox, "ls", "-la")
    assert r.returncode == 2 and "put the command after --" in r.stderr, r.stderr
