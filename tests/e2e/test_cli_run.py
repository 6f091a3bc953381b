"""Issue 36 item 4, the one-shot: `abx run [TEMPLATE] -- CMD` creates a sandbox, streams the
command's output, exits with its code and kills the sandbox (unless --keep), like
`docker run --rm`; abx's own failures exit 125. Each test drives the real `abx` binary
against a real daemon, with the `host` template (no build)."""
from __future__ import annotations

import json

import pytest
from harness import Daemon
from helpers import abx

pytestmark = pytest.mark.offline


def listed(daemon: Daemon) -> set[str]:
    r = abx(daemon, "list", "--json")
    assert r.returncode == 0, r.stderr
    return {s["sandboxID"] for s in json.loads(r.stdout)}


def test_run_streams_exits_with_the_code_and_leaves_no_sandbox(daemon):
    before = listed(daemon)
    r = abx(daemon, "run", "host", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3, r.stderr
    assert r.stdout == "out\n" and "err" in r.stderr, (r.stdout, r.stderr)
    assert listed(daemon) <= before


def test_run_takes_exec_and_create_flags(daemon):
    r = abx(daemon, "run", "-e", "GREETING=hi", "-w", "/tmp", "-u", "root", "--memory", "300m",
            "host", "--", "sh", "-c", "echo $GREETING $(pwd) $(id -u); grep MemTotal /proc/meminfo")
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    assert words[:3] == ["hi", "/tmp", "0"], r.stdout
    assert int(words[4]) <= 300 * 1024, r.stdout  # kB: the sandbox's memory limit (lxcfs)


def test_run_pipes_stdin_and_takes_a_docker_style_command(daemon):
    r = abx(daemon, "run", "host", "--", "cat", input="piped\n")
    assert r.returncode == 0 and r.stdout == "piped\n", (r.stdout, r.stderr)
    r = abx(daemon, "run", "host", "echo", "no-dashdash")
    assert r.returncode == 0 and r.stdout == "no-dashdash\n", (r.stdout, r.stderr)


def test_run_timeout_is_124(daemon):
    before = listed(daemon)
    r = abx(daemon, "run", "--timeout", "1", "host", "--", "sleep", "30")
    assert r.returncode == 124, (r.returncode, r.stderr)
    assert listed(daemon) <= before


def test_run_keep_leaves_the_sandbox_and_names_it(daemon):
    r = abx(daemon, "run", "--keep", "host", "--", "sh", "-c", "echo kept > /tmp/mark")
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stderr.split("kept sandbox ")[1].split()[0]
    try:
        assert sandbox_id in listed(daemon)
        out = abx(daemon, "exec", sandbox_id, "--", "cat", "/tmp/mark")
        assert out.stdout == "kept\n", out.stderr
    finally:
        abx(daemon, "kill", "--yes", sandbox_id)


def test_run_own_failures_exit_125_with_what_to_do(daemon):
    r = abx(daemon, "run", "no-such-template-x", "--", "true")
    assert r.returncode == 125 and "no-such-template-x" in r.stderr, (r.returncode, r.stderr)
    r = abx(daemon, "run", "host")
    assert r.returncode == 125 and "no command given" in r.stderr, r.stderr
    r = abx(daemon, "run", "host", "other", "--", "true")  # a usage error, as everywhere
    assert r.returncode == 2 and "put the command after --" in r.stderr, r.stderr


def test_exec_in_a_template_name_points_to_run(daemon):
    r = abx(daemon, "exec", "host", "--", "ls", "/")
    assert r.returncode == 125, r.stderr  # abx's own failure
    assert "'host' is a template, not a sandbox: abx run host -- ls /" in r.stderr, r.stderr
    r = abx(daemon, "exec", "nosuchthing", "--", "ls")
    assert "not found" in r.stderr and "abx run" not in r.stderr, r.stderr
