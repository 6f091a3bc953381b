"""Issue 36, CLI items: errors without errno text, the `-it` hint of `abx exec ID -- bash`,
`abx stats -w` to the sandbox's end, exit statuses (the command's own, 125 for abx's
failures, 2 for usage errors) and shell completion of live ids and template names. Each
test drives the real `abx` against a real daemon."""
from __future__ import annotations

import json
import os
import pty
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from harness import ABX_BIN, Daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build


def make(daemon: Daemon, *extra: str) -> str:
    r = abx(daemon, "create", "--template", "host", *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def sandbox(daemon: Daemon) -> Iterator[str]:
    sandbox_id = make(daemon)
    yield sandbox_id
    abx(daemon, "kill", sandbox_id, "--yes")


# --- item 1: an unknown template reads as a mistyped name, not as a missing file -------


def test_an_unknown_template_says_what_was_meant_without_errno_text(daemon):
    r = abx(daemon, "create", "bsae")
    assert r.returncode != 0
    assert r.stderr.strip().splitlines() == [
        "abx: could not create the sandbox: unknown template 'bsae'; did you mean base? "
        "known: base, code-interpreter-v1, host"]


# --- item 2: `abx exec ID -- bash` at a terminal without -it gets a hint ----------------


def run_on_a_terminal(daemon: Daemon, *args: str) -> subprocess.CompletedProcess:
    """`abx ARGS` with a terminal (a pty) on stdin, as typed by a person; stdout and
    stderr are pipes so what abx says on each can be told apart."""
    controller, terminal = pty.openpty()
    try:
        return subprocess.run([str(ABX_BIN), *args], stdin=terminal, capture_output=True,
                              text=True, timeout=60, env=daemon.env())
    finally:
        os.close(terminal)
        os.close(controller)


@pytest.mark.parametrize("shell", ["bash", "sh", "/usr/bin/python3"])
def test_an_interactive_shell_without_it_gets_a_hint_and_still_runs(daemon, sandbox, shell):
    r = run_on_a_terminal(daemon, "exec", sandbox, "--", shell)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"abx: hint: {shell} gets no terminal without -it and may exit at once; for an "
        f"interactive session: abx exec -it {sandbox} -- {shell}"]


def test_the_hint_names_run_for_abx_run(daemon):
    r = run_on_a_terminal(daemon, "run", "host", "--", "bash")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        "abx: hint: bash gets no terminal without -it and may exit at once; for an "
        "interactive session: abx run -it host -- bash")


@pytest.mark.parametrize("command", [["bash", "-c", "echo hi"], ["echo", "hi"]])
def test_no_hint_for_a_command_that_needs_no_terminal(daemon, sandbox, command):
    r = run_on_a_terminal(daemon, "exec", sandbox, "--", *command)
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\n", "")


def test_no_hint_when_stdin_is_not_a_terminal(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "bash", input="echo from-a-pipe\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "from-a-pipe\n", "")


# --- item 3: `abx stats -w` follows a sandbox to its end ---------------------------------


def test_stats_watch_reads_afresh_and_ends_cleanly_at_the_sandbox_timeout(daemon):
    sandbox = make(daemon, "--timeout", "5")
    r = abx(daemon, "stats", "-w", "--json", sandbox, timeout=30)
    assert r.returncode == 0, r.stderr
    readings = [json.loads(line)[0] for line in r.stdout.splitlines()]
    assert len(readings) >= 2 and all(x["sandboxID"] == sandbox for x in readings)
    stamps = [x["timestampUnix"] for x in readings]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0], stamps  # new samples
    assert r.stderr == (f"abx: sandbox {sandbox} has ended (timeout reached: killed); "
                        "no more readings of it\n")


def test_stats_watch_ends_cleanly_when_the_sandbox_is_killed(daemon):
    sandbox = make(daemon)
    p = subprocess.Popen([str(ABX_BIN), "stats", "-w", sandbox], env=daemon.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().split()[:2] == ["ID", "CPU"]
        assert sandbox in p.stdout.readline()
        assert abx(daemon, "kill", sandbox, "--yes").returncode == 0
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err
    assert err == f"abx: sandbox {sandbox} has ended (killed); no more readings of it\n"


def test_stats_of_a_sandbox_never_seen_is_still_an_error(daemon):
    r = abx(daemon, "stats", "-w", "nosuchsandbox0000000")
    assert r.returncode == 1 and "sandbox nosuchsandbox0000000 not found" in r.stderr


# --- item 4: exit statuses ----------------------------------------------------------------


@pytest.mark.parametrize("command,code", [(["sh", "-c", "exit 3"], 3),
                                          (["no-such-program-x"], 127),  # the shell's own
                                          (["/etc/hostname"], 126)])
def test_exec_exits_with_the_commands_own_code(daemon, sandbox, command, code):
    assert abx(daemon, "exec", sandbox, "--", *command).returncode == code


def test_exec_exits_125_when_abx_itself_fails(daemon):
    r = abx(daemon, "exec", "nosuchsandbox0000000", "--", "true")
    assert r.returncode == 125 and "sandbox nosuchsandbox0000000 not found" in r.stderr
    for command in (["exec", "nosuchsandbox0000000", "--", "true"], ["run", "host", "--", "true"]):
        r = abx(daemon, *command, env={"ABX_SANDBOX_API_URL": "http://127.0.0.1:9"})
        assert r.returncode == 125 and "cannot reach http://127.0.0.1:9" in r.stderr, r.stderr


@pytest.mark.parametrize("args,command", [
    (["create", "--memory", "abc"], "create"),
    (["create", "host", "--env", "NOVALUE"], "create"),
    (["run", "host", "--disk", "2x", "--", "true"], "run"),
    (["exec", "-e", "NOVALUE", "nosuchsandbox0000000", "--", "true"], "exec"),
    (["list", "--metadata", "novalue"], "list"),
    (["list", "--format", "{{.Nope}}"], "list"),  # no sandbox needed to find it wrong
    (["kill", "--all", "--metadata", "novalue", "--yes"], "kill"),
    (["template", "deploy", "x", "--to", "not-a-url"], "template deploy"),
])
def test_a_bad_flag_value_is_a_usage_error_with_the_usage_line(daemon, args, command):
    r = abx(daemon, *args)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 3 and lines[0].startswith("abx: --"), r.stderr
    assert lines[1].startswith(f"Usage: abx {command} [OPTIONS]"), r.stderr
    assert lines[2] == f"run `abx {command} --help` for more"


# --- item 5: shell completion of live sandbox ids and template names ----------------------


def bash_complete(env: dict[str, str], line: str) -> list[str]:
    """What bash offers at the end of `line` (words split on spaces; a trailing space
    starts a new, empty word), with `abx completion bash` loaded, as at a prompt."""
    words = line.split(" ")
    script = (f"source <({ABX_BIN} completion bash)\n"
              f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
              f"COMP_CWORD={len(words) - 1}\n"
              "_abx\n"
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                       env={**env, "PATH": f"{ABX_BIN.parent}:{env['PATH']}"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [w for w in r.stdout.splitlines() if w]


@pytest.mark.parametrize("line", ["abx exec ", "abx info ", "abx kill ", "abx stats ",
                                  "abx logs ", "abx sandbox kill ", "abx exec -e A=1 "])
def test_bash_completes_the_live_sandbox_ids(daemon, sandbox, line):
    other = make(daemon)
    try:
        offered = bash_complete(daemon.env(), line)
        assert sandbox in offered and other in offered, offered
        assert bash_complete(daemon.env(), line + sandbox[:4]) == [sandbox]
    finally:
        abx(daemon, "kill", other, "--yes")
    assert other not in bash_complete(daemon.env(), line)  # live ones only


def test_bash_completes_template_names_and_nothing_where_neither_goes(daemon, sandbox):
    for line in ("abx create ", "abx run ", "abx create --template ", "abx template inspect "):
        assert {"base", "host"} <= set(bash_complete(daemon.env(), line)), line
    assert bash_complete(daemon.env(), "abx create h") == ["host"]
    # After the id comes the command, after `--` the command's own words: no ids there.
    for line in (f"abx exec {sandbox} ", f"abx exec {sandbox} -- ", f"abx set-timeout {sandbox} "):
        assert sandbox not in bash_complete(daemon.env(), line), line


def test_completion_without_a_daemon_is_quiet_fast_and_starts_none(tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, "ABX_STATE_DIR": str(state), "ABX_CONFIG_DIR": str(tmp_path / "config")}
    env.pop("ABX_SANDBOX_API_URL", None)
    started = time.monotonic()
    assert bash_complete(env, "abx exec ") == []
    assert time.monotonic() - started < 5
    assert not (state / "daemon.addr").exists() and not (state / "daemon.pid").exists()
    r = subprocess.run([str(ABX_BIN), "__complete", "exec", ""], capture_output=True, text=True,
                       env=env, timeout=10)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_completion_gives_up_on_a_daemon_that_does_not_answer(daemon):
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        env = {**daemon.env(), "ABX_SANDBOX_API_URL": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        started = time.monotonic()
        r = subprocess.run([str(ABX_BIN), "__complete", "kill", ""], capture_output=True,
                           text=True, env=env, timeout=10)
        assert time.monotonic() - started < 3
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def zsh_complete(env: dict[str, str], line: str) -> list[str]:
    """What the zsh script offers at the end of `line`: zsh's completion builtins are
    stood in for (compadd prints what it is given; file and command completion print
    FILES and COMMANDS), so the script's own logic and its `abx __complete` call run."""
    words = line.split(" ")
    script = ("compdef() { : }; compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\" }\n"
              "_files() { print FILES }; _describe() { print COMMANDS }\n"
              f"source <({ABX_BIN} completion zsh)\n"
              f"words=({' '.join(shlex.quote(w) for w in words)}); CURRENT={len(words)}\n"
              "_abx; true\n")  # 1: nothing to offer (after --)
    r = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=30,
                       env={**env, "PATH": f"{ABX_BIN.parent}:{env['PATH']}"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout.split()


def fish_complete(env: dict[str, str], line: str) -> list[str]:
    """What fish offers at the end of `line` (`complete -C`), the script loaded."""
    script = f"{ABX_BIN} completion fish | source; complete -C {shlex.quote(line)}"
    r = subprocess.run(["fish", "-c", script], capture_output=True, text=True, timeout=30,
                       env={**env, "PATH": f"{ABX_BIN.parent}:{env['PATH']}"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [row.split("\t")[0] for row in r.stdout.splitlines()]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_complete_ids_and_templates_too(daemon, sandbox, shell):
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed here")
    complete = zsh_complete if shell == "zsh" else fish_complete
    env = daemon.env()
    assert complete(env, "abx exec ") == [sandbox]  # only the ids: no files beside them
    assert complete(env, f"abx kill {sandbox[:4]}") == [sandbox]
    assert complete(env, "abx exec -e A=1 ") == [sandbox]
    assert complete(env, "abx create h") == ["host"]
    assert sandbox not in complete(env, f"abx exec {sandbox} -- ")
    env["ABX_SANDBOX_API_URL"] = "http://127.0.0.1:9"  # no daemon: files, as before
    assert sandbox not in complete(env, "abx exec ")
