"""Issue 16, items 6 and 7: the CLI habits of Docker and E2B users (`info`, `ps`, `logs`,
`stats`, `shell`, `ls`/`rm`, `help CMD`, "did you mean", `list -q/--format/--metadata`,
`create --json` with metadata and times) and errors that say what to do instead of
leaking internals. Each test drives the real `abx` against a real daemon."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Iterator

import pytest
from harness import ABX_BIN, Daemon
from helpers import abx, wait_until

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


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def bad_value_error(r: subprocess.CompletedProcess, command: str) -> str:
    """A bad flag value is a usage error: exit 2, its line, then the command's usage."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 3 and lines[1].startswith(f"Usage: abx {command} "), r.stderr
    assert lines[2] == f"run `abx {command} --help` for more", r.stderr
    return lines[0]


# --- item 6: new commands -------------------------------------------------------------


def test_info_shows_the_sandbox_and_its_json(daemon, sandbox):
    r = abx(daemon, "info", sandbox)
    assert r.returncode == 0, r.stderr
    assert sandbox in r.stdout and "TEMPLATE" in r.stdout and "ENDS" in r.stdout
    info = json.loads(abx(daemon, "info", sandbox, "--json").stdout)
    assert info["sandboxID"] == sandbox and info["state"] == "running"


def test_ps_lists_a_running_command_with_its_pid_and_tag(daemon, sandbox):
    p = subprocess.Popen([str(ABX_BIN), "exec", sandbox, "--", "sh", "-c", "echo up; sleep 60"],
                         env=daemon.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == "up\n"
        r = abx(daemon, "ps", sandbox)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0].split() == ["PID", "TAG", "CWD", "COMMAND"]
        assert "sleep 60" in r.stdout
        listed = json.loads(abx(daemon, "ps", sandbox, "--json").stdout)
        assert any("sleep 60" in " ".join(x["config"]["args"]) for x in listed)
        assert all(isinstance(x["pid"], int) for x in listed)
    finally:
        p.kill()
        p.communicate()


def test_ps_shows_what_each_command_started_as_a_tree(daemon, sandbox):
    p = subprocess.Popen(
        [str(ABX_BIN), "exec", sandbox, "--", "sh", "-c",
         "sh -c 'sleep 1020; true' & setsid sleep 1021 & echo up; wait"],
        env=daemon.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "up\n"
        for _ in range(50):
            r = abx(daemon, "ps", sandbox)
            # Lines of their own: the command's line names both as well.
            ends = [line.rstrip() for line in r.stdout.splitlines()]
            if any(e.endswith(" sleep 1020") for e in ends) and \
                    any(e.endswith(" sleep 1021") for e in ends):
                break
            time.sleep(0.1)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        top = next(i for i, line in enumerate(lines) if "echo up; wait" in line)
        below = lines[top + 1:top + 4]
        # The inner sh under the command, its sleep under it; the setsid one too.
        assert [line.split()[0] for line in below] == ["\\_"] * 3, r.stdout
        inner = next(line for line in below if "sh -c sleep 1020; true" in line)
        sleeper = next(line for line in below if line.split()[2:] == ["sleep", "1020"])
        assert len(sleeper) - len(sleeper.lstrip()) > len(inner) - len(inner.lstrip())
        assert any(line.endswith("sleep 1021") for line in below)
        # The route behind it, with the sandbox's pids.
        tree = daemon.api().get(f"/abx/v1/sandboxes/{sandbox}/processes").json()["commands"]
        commands = {c["pid"]: {p["command"] for p in c["processes"]} for c in tree}
        assert any({"sleep 1020", "sleep 1021"} <= names for names in commands.values())
    finally:
        p.kill()
        p.communicate()


def test_logs_show_creation_and_each_command_with_its_exit(daemon, sandbox):
    assert abx(daemon, "exec", sandbox, "--", "sh", "-c", "exit 3").returncode == 3
    r = abx(daemon, "logs", sandbox)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "sandbox created from template host" in lines[0]
    assert any("command started" in line and "exit 3" in line for line in lines)
    assert any("exited with code 3" in line for line in lines)
    entries = [json.loads(line) for line in abx(daemon, "logs", sandbox, "--json").stdout.splitlines()]
    assert {"timestamp", "level", "message"} <= set(entries[0])
    # E2B's route, as its SDK reads it
    with daemon.api() as api:
        answer = api.get(f"/sandboxes/{sandbox}/logs", params={"limit": 1}).json()
        assert len(answer["logs"]) == 1 and answer["logs"][0]["line"].startswith("sandbox created")
        for bad in ({"limit": 0}, {"limit": "9" * 40}, {"start": "-1"}, {"start": "x" * 5000}):
            assert api.get(f"/sandboxes/{sandbox}/logs", params=bad).status_code == 400
        assert api.get("/sandboxes/..%2F..%2Fetc/logs").status_code in (400, 404)
        assert api.get("/health").status_code == 204
    assert daemon.proc.poll() is None


def test_logs_follow_prints_new_lines_and_ends_with_the_sandbox(daemon):
    sandbox_id = make(daemon)
    p = subprocess.Popen([str(ABX_BIN), "logs", "--follow", sandbox_id], env=daemon.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "sandbox created" in p.stdout.readline()
        abx(daemon, "exec", sandbox_id, "--", "true")
        assert "command started" in p.stdout.readline()
        assert "exited with code 0" in p.stdout.readline()
        abx(daemon, "kill", sandbox_id, "--yes")
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0
    assert out.rstrip().endswith("killed"), out  # why it ended: the last line of its log
    assert f"sandbox {sandbox_id} ended" in err


def test_an_ended_sandboxs_log_is_kept_for_its_team_only(daemon):
    """As E2B's logs route answers for a killed sandbox; another team's key gets 404."""
    killed = make(daemon)
    assert abx(daemon, "exec", killed, "--", "true").returncode == 0
    assert abx(daemon, "kill", killed, "--yes").returncode == 0
    r = abx(daemon, "logs", killed)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "sandbox created" in lines[0] and lines[-1].endswith("killed"), lines
    assert any("exited with code 0" in line for line in lines)
    expired = make(daemon, "--timeout", "1")
    wait_until(lambda: expired not in abx(daemon, "list", "-q").stdout.split(), timeout=30,
               what="the sandbox's timeout")
    assert abx(daemon, "logs", expired).stdout.rstrip().endswith("timeout reached: killed")
    with daemon.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": "logs-other-team"})
        assert made.status_code == 201, made.text
        other = {"ABX_SANDBOX_API_KEY": made.json()["key"]}
        try:
            r = abx(daemon, "logs", killed, env=other)
            assert r.returncode != 0 and "not found" in r.stderr, r.stderr
        finally:
            admin.delete(f"/abx/v1/keys/{made.json()['id']}")
    r = abx(daemon, "logs", "nosuchsandbox0000000")
    assert r.returncode != 0 and "not found" in r.stderr


def test_stats_and_metrics_show_cpu_memory_and_disk(daemon, sandbox):
    r = abx(daemon, "stats", sandbox)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["ID", "CPU", "%", "CPUS", "MEMORY", "DISK", "NET",
                                                "I/O"]
    assert sandbox in r.stdout and "MiB" in r.stdout
    readings = json.loads(abx(daemon, "metrics", sandbox, "--json").stdout)
    assert readings[0]["sandboxID"] == sandbox
    assert {"cpuUsedPct", "memUsed", "memTotal", "diskUsed", "diskTotal", "netRxBytes",
            "netTxBytes"} <= set(readings[0])
    assert sandbox in abx(daemon, "stats").stdout  # no id: every sandbox


def test_stats_watch_prints_a_reading_again_until_stopped(daemon, sandbox):
    p = subprocess.Popen([str(ABX_BIN), "stats", "--watch", sandbox], env=daemon.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        tables = 0
        while tables < 2:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            tables += line.startswith("ID ")
        assert p.poll() is None  # still watching
    finally:
        p.kill()
        p.communicate()


def test_shell_opens_a_login_shell_in_a_terminal(daemon, sandbox):
    main, secondary = pty.openpty()
    p = subprocess.Popen([str(ABX_BIN), "shell", sandbox], env=daemon.env(), stdin=secondary,
                         stdout=secondary, stderr=secondary)
    os.close(secondary)
    try:
        os.write(main, b"echo in-$((6*7)); exit 5\n")
        seen = b""
        deadline = time.monotonic() + 30
        while p.poll() is None and time.monotonic() < deadline:
            if select.select([main], [], [], 0.5)[0]:
                try:
                    seen += os.read(main, 4096)
                except OSError:
                    break
        p.wait(timeout=30)
    finally:
        p.kill()
        os.close(main)
    assert b"in-42" in seen
    assert p.returncode == 5


def test_shell_without_a_terminal_says_how_to_pipe(daemon, sandbox):
    line = one_line_error(abx(daemon, "connect", sandbox, input="echo hi\n"))
    assert "needs a terminal" in line and f"abx exec {sandbox} -- bash <" in line


def test_ls_and_rm_are_list_and_kill(daemon):
    sandbox_id = make(daemon)
    assert sandbox_id in abx(daemon, "ls").stdout
    r = abx(daemon, "rm", sandbox_id, "--yes")
    assert r.returncode == 0, r.stderr
    assert sandbox_id not in abx(daemon, "ls", "-q").stdout


def test_help_cmd_is_cmd_dash_dash_help(daemon):
    for words in (["exec"], ["template", "build"], ["ls"]):
        r = abx(daemon, "help", *words)
        assert r.returncode == 0, r.stderr
        assert r.stdout == abx(daemon, *words, "--help").stdout
    assert "Usage: abx [OPTIONS] SUBCOMMAND" in abx(daemon, "help").stdout
    line = one_line_error(abx(daemon, "help", "exce"))
    assert "did you mean `abx exec`?" in line


@pytest.mark.parametrize(("typed", "meant"), [("lsit", "abx list"), ("craete", "abx create"),
                                              ("exce", "abx exec"), ("templ", "abx template"),
                                              ("template biuld", "abx template build")])
def test_a_mistyped_command_gets_did_you_mean(daemon, typed, meant):
    line = one_line_error(abx(daemon, *typed.split()))
    assert f"unknown command '{typed.split()[-1]}'" in line
    assert f"did you mean `{meant}`?" in line


def test_a_mistyped_flag_gets_did_you_mean(daemon):
    line = one_line_error(abx(daemon, "list", "--jsn"))
    assert line == "abx: unknown flag --jsn for `abx list`; did you mean --json?"
    line = one_line_error(abx(daemon, "create", "--tempalte", "host"))
    assert "did you mean --template?" in line


def test_a_word_far_from_every_command_gets_no_guess(daemon):
    line = one_line_error(abx(daemon, "xyzzyplugh"))
    assert "did you mean" not in line and "abx help" in line


def test_completion_knows_the_new_commands(daemon):
    script = abx(daemon, "completion", "bash").stdout
    for name in ("info", "ps", "logs", "stats", "metrics", "shell", "connect", "ls", "rm", "help"):
        assert f" {name} " in script or f"'{name} " in script or f" {name}'" in script, name


# --- item 6: list -q, --format, --metadata, METADATA; create --json --------------------


def test_list_quiet_format_and_metadata_filter(daemon):
    a = make(daemon, "--metadata", "owner=alice", "--metadata", "job=x y")
    b = make(daemon, "--metadata", "owner=bob")
    try:
        ids = abx(daemon, "list", "-q").stdout.split()
        assert a in ids and b in ids
        r = abx(daemon, "list", "-q", "--metadata", "owner=alice")
        assert r.stdout.split() == [a]
        r = abx(daemon, "list", "-q", "--metadata", "owner=alice", "--metadata", "job=x y")
        assert r.stdout.split() == [a]
        assert abx(daemon, "list", "-q", "--metadata", "owner=carol").stdout == ""
        r = abx(daemon, "list", "--metadata", "owner=alice", "--format",
                r"{{.ID}}\t{{.Template}}\t{{.Metadata.owner}}")
        assert r.stdout == f"{a}\thost\talice\n"
        r = abx(daemon, "list", "--metadata", "owner=bob", "--format", "json")
        assert json.loads(r.stdout)["sandboxID"] == b
        table = abx(daemon, "list").stdout
        assert "METADATA" in table.splitlines()[0] and "owner=alice" in table
        line = bad_value_error(abx(daemon, "list", "--format", "{{.Nope}}"), "list")
        assert "unknown field {{.Nope}}" in line and "{{.ID}}" in line
    finally:
        abx(daemon, "kill", a, b, "--yes")


def test_create_json_has_metadata_and_times(daemon):
    r = abx(daemon, "create", "--template", "host", "--metadata", "k=v", "--json")
    assert r.returncode == 0, r.stderr
    created = json.loads(r.stdout)
    try:
        assert created["metadata"] == {"k": "v"}
        assert created["startedAt"] < created["endAt"]
        assert created["envdAccessToken"]
    finally:
        abx(daemon, "kill", created["sandboxID"], "--yes")


def test_create_takes_the_template_as_an_argument(daemon):
    # `abx create host`, as `e2b sandbox create TEMPLATE` and `docker run IMAGE` take it.
    r = abx(daemon, "create", "host", "--json")
    assert r.returncode == 0, r.stderr
    created = json.loads(r.stdout)
    try:
        assert created["templateID"] == "host"
    finally:
        abx(daemon, "kill", created["sandboxID"], "--yes")
    both = abx(daemon, "create", "host", "--template", "base")
    assert both.returncode != 0 and "excludes" in both.stderr, both.stderr
    unknown = abx(daemon, "create", "no-such-template")
    assert unknown.returncode != 0 and "no-such-template" in unknown.stderr, unknown.stderr


# --- item 7: errors that say what to do -----------------------------------------------


@pytest.mark.parametrize("value", ["0", "-5", "86401", "99999999999999999999", "1.5"])
def test_create_timeout_out_of_range_says_the_range_in_words(daemon, value):
    line = bad_value_error(abx(daemon, "create", "--template", "host", "--timeout", value),
                           "create")
    assert "--timeout" in line and "from 1 to 86400" in line and "one day" in line
    assert len(line) < 160


def test_set_timeout_and_exec_timeout_ranges(daemon, sandbox):
    line = bad_value_error(abx(daemon, "set-timeout", sandbox, "0"), "set-timeout")
    assert "from 1 to 86400" in line
    line = bad_value_error(abx(daemon, "exec", "--timeout", "-1", sandbox, "--", "true"), "exec")
    assert "from 0 to 604800" in line and "0: no limit" in line


@pytest.mark.parametrize("command", [["exec", "bad-id", "--", "true"], ["info", "bad-id"],
                                     ["logs", "Bad_Id"], ["stats", "bad-id"], ["ps", "bad-id"]])
def test_a_malformed_id_is_named_not_a_regex(daemon, command):
    line = one_line_error(abx(daemon, *command))
    assert "not a valid sandbox id" in line and "lowercase letters and digits" in line
    assert "must match" not in line


def test_a_missing_directory_for_cwd_is_named(daemon, sandbox):
    line = one_line_error(abx(daemon, "exec", "--cwd", "/no/such/dir", sandbox, "--", "true"))
    assert "no such directory in the sandbox: /no/such/dir" in line
    assert "chdir" not in line and "sandbox init" not in line
    logged = abx(daemon, "logs", sandbox).stdout
    assert "command did not start (no such directory in the sandbox: /no/such/dir)" in logged


# Not `logs`: an ended sandbox's log is kept a while (test_an_ended_sandboxs_log_is_kept...).
@pytest.mark.parametrize("command", [["exec", "{id}", "--", "true"], ["info", "{id}"],
                                     ["kill", "{id}", "--yes"],
                                     ["stats", "{id}"], ["set-timeout", "{id}", "60"]])
def test_not_found_gives_e2bs_hint(daemon, command):
    gone = make(daemon)
    abx(daemon, "kill", gone, "--yes")
    line = one_line_error(abx(daemon, *[w.format(id=gone) for w in command]))
    assert f"sandbox {gone} not found" in line
    assert "killed or its timeout expired" in line and "`abx list`" in line


def test_a_command_missing_arguments_prints_its_own_usage(daemon):
    r = abx(daemon, "upload", "someid")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("abx: ") and "local" in lines[0]
    assert lines[1].startswith("Usage: abx upload")
    assert "`abx upload --help`" in lines[2]
    assert "Subcommands:" not in r.stderr


def test_pause_and_resume_from_the_cli(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "echo before > /tmp/f")
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "pause", sandbox)
    assert r.returncode == 0 and r.stdout == f"paused {sandbox}\n", r.stderr
    info = json.loads(abx(daemon, "info", sandbox, "--json").stdout)
    assert info["state"] == "paused"
    again = abx(daemon, "pause", sandbox)  # idempotent, as resume of a running one
    assert again.returncode == 0 and again.stdout == f"{sandbox} is paused already\n", again.stderr
    # A paused sandbox is not gone: what needs it running says so and how to go on.
    for args in (("exec", sandbox, "--", "true"), ("ps", sandbox),
                 ("download", sandbox, "/tmp/f", "/dev/null"),
                 ("upload", sandbox, "/etc/hostname", "/tmp/g")):
        line = one_line_error(abx(daemon, *args))
        assert line == f"abx: sandbox {sandbox} is paused: abx resume {sandbox}", (args, line)
    listed = [row for row in abx(daemon, "list").stdout.splitlines() if row.startswith(sandbox)]
    assert listed and listed[0].split()[4] == "-", "a paused sandbox has no end yet"
    assert "ENDS       -" in abx(daemon, "info", sandbox).stdout
    r = abx(daemon, "resume", sandbox, "--timeout", "60")
    assert r.returncode == 0 and r.stdout == f"resumed {sandbox}\n", r.stderr
    assert abx(daemon, "exec", sandbox, "--", "cat /tmp/f").stdout == "before\n"
    logs = abx(daemon, "logs", sandbox).stdout
    assert "paused" in logs and "resumed for 60 s" in logs


def test_kill_from_a_script_goes_ahead_but_all_needs_yes(daemon):
    """No terminal: a named kill proceeds (as docker rm and e2b's kill do), `-f` is --yes, and
    killing every sandbox at once still needs --yes."""
    first, second = make(daemon), make(daemon)
    r = abx(daemon, "kill", first)
    assert r.returncode == 0 and r.stdout == f"killed {first}\n", r.stderr
    r = abx(daemon, "rm", "-f", second)
    assert r.returncode == 0 and r.stdout == f"killed {second}\n", r.stderr
    r = abx(daemon, "kill", "--all")
    assert r.returncode != 0
    assert "refusing to kill every sandbox without confirmation; pass --yes" in r.stderr
