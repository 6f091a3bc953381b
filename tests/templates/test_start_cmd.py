"""Templates that start a service (E2B's startCmd/readyCmd): a Sandboxfile's CMD/ENTRYPOINT and
READY, run when a sandbox is created; the create returns once the service is ready, its output is
in `abx logs`, and one that never comes up fails the create with its last output and leaves
nothing behind. Real daemon, the Debian `base`."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx, sandbox_host_pids, wait_until

BUILD_TIMEOUT = 600
READY_TIMEOUT_S = 5
HTTP_READY = "curl -sf -o /dev/null http://127.0.0.1:9000/"


@pytest.fixture(scope="module")
def svc_daemon(built_base: Daemon) -> Daemon:
    """A daemon on the built base's templates, with a short ready timeout and no warm pool (so
    every abx-init of it belongs to a sandbox a test made)."""
    state = private_state_dir("abx-start-")
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--templates-dir", str(built_base.data_dir / "templates"),
                                 "--warm-pool", "0"),
                     env={"ABX_READY_TIMEOUT_S": str(READY_TIMEOUT_S)})
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


def build_template(d: Daemon, tmp_path: Path, name: str, sandboxfile: str,
                   files: dict[str, str] | None = None) -> dict:
    context = tmp_path / name
    context.mkdir()
    (context / "Sandboxfile").write_text(sandboxfile)
    for file, text in (files or {}).items():
        (context / file).write_text(text)
    r = abx(d, "template", "build", str(context), "--name", name, timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    r = abx(d, "template", "inspect", name)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def e2b_sandbox(d: Daemon, template: str, monkeypatch):
    from e2b import Sandbox
    monkeypatch.setenv("E2B_API_URL", d.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", d.url)
    monkeypatch.setenv("E2B_API_KEY", d.api_key)
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{urlparse(d.url).port}")
    return Sandbox.create(template=template, timeout=120)


def logs(d: Daemon, sandbox_id: str) -> str:
    r = abx(d, "logs", sandbox_id)
    assert r.returncode == 0, r.stderr
    return r.stdout


def assert_daemon_fine(d: Daemon) -> None:
    assert d.proc.poll() is None
    assert httpx.get(f"{d.url}/health").status_code == 204


def created_ids(d: Daemon, template: str) -> list[str]:
    """The ids the daemon's log says it created from `template`."""
    text = (d.data_dir / "daemon.log").read_text(errors="replace")
    return re.findall(rf"sandbox (\w+) created from {re.escape(template)} ", text)


def listed_ids(d: Daemon) -> set[str]:
    r = abx(d, "list", "--json")
    assert r.returncode == 0, r.stderr
    return {s["sandboxID"] for s in json.loads(r.stdout or "[]")}


def test_service_answers_through_get_host_right_after_create(svc_daemon, tmp_path, monkeypatch):
    """CMD starts python3 -m http.server 9000 as the template's user in its workdir; when create
    returns it answers through get_host(9000), and its request log is in `abx logs`."""
    info = build_template(svc_daemon, tmp_path, "svc-http",
                          "FROM base\nWORKDIR /srv\nCOPY index.html /srv/\n"
                          "CMD [\"python3\", \"-m\", \"http.server\", \"9000\"]\n"
                          f"READY {HTTP_READY}\n",
                          {"index.html": "served by the start command\n"})
    assert info["startCmd"] == "exec 'python3' '-m' 'http.server' '9000'"
    assert info["readyCmd"] == HTTP_READY
    sb = e2b_sandbox(svc_daemon, "svc-http", monkeypatch)
    try:
        reply = httpx.get(svc_daemon.url + "/index.html", headers={"Host": sb.get_host(9000)})
        assert reply.status_code == 200 and reply.text == "served by the start command\n"
        who = sb.commands.run("ps -o user=,args= -C python3").stdout
        assert "http.server 9000" in who and who.split()[0] == "user"
        text = wait_until(lambda: (t := logs(svc_daemon, sb.sandbox_id))
                          and '"GET /index.html HTTP/1.1" 200' in t and t, what="the request log")
        assert "start: " in text
    finally:
        sb.kill()
    assert_daemon_fine(svc_daemon)


def test_from_inherits_the_start_command(svc_daemon, tmp_path):
    """A template FROM one with a start command keeps it (and its ready check) unless it names
    its own; CMD [] clears it."""
    build_template(svc_daemon, tmp_path, "svc-parent",
                   f"FROM base\nCMD python3 -m http.server 9000\nREADY {HTTP_READY}\n")
    child = build_template(svc_daemon, tmp_path, "svc-child", "FROM svc-parent\nENV A=1\n")
    assert child["startCmd"] == "python3 -m http.server 9000"
    assert child["readyCmd"] == HTTP_READY
    cleared = build_template(svc_daemon, tmp_path, "svc-cleared", "FROM svc-parent\nCMD []\n")
    assert cleared["startCmd"] == "" and cleared["readyCmd"] == ""


def test_never_ready_fails_the_create_and_leaves_nothing(svc_daemon, tmp_path):
    """A start command whose ready check never passes: the create fails within the timeout with
    one line naming it and the command's last output; the sandbox and its processes are gone."""
    build_template(svc_daemon, tmp_path, "svc-never",
                   "FROM base\nCMD echo starting up; echo no database here >&2; sleep 1000\n"
                   "READY false\n")
    before = listed_ids(svc_daemon)
    r = abx(svc_daemon, "create", "--template", "svc-never", timeout=120)
    assert r.returncode != 0
    assert f"was not ready within {READY_TIMEOUT_S} s (ready command: false)" in r.stderr
    assert "no database here" in r.stderr
    assert listed_ids(svc_daemon) == before
    ids = created_ids(svc_daemon, "svc-never")
    assert ids, "the daemon log names no sandbox of svc-never"
    wait_until(lambda: not sandbox_host_pids(ids[-1]), what="the sandbox's processes to end")
    assert_daemon_fine(svc_daemon)


def test_ready_command_that_hangs_is_cut_off(svc_daemon, tmp_path):
    """A ready command that never ends is killed at the timeout: the create fails, nothing
    stays."""
    build_template(svc_daemon, tmp_path, "svc-hang", "FROM base\nCMD sleep 1000\nREADY sleep 1000\n")
    r = abx(svc_daemon, "create", "--template", "svc-hang", timeout=120)
    assert r.returncode != 0
    assert f"was not ready within {READY_TIMEOUT_S} s (ready command: sleep 1000)" in r.stderr
    assert "it printed nothing" in r.stderr
    ids = created_ids(svc_daemon, "svc-hang")
    assert ids and ids[-1] not in listed_ids(svc_daemon)
    wait_until(lambda: not sandbox_host_pids(ids[-1]), what="the sandbox's processes to end")
    assert_daemon_fine(svc_daemon)


def test_start_command_that_exits_fails_at_once(svc_daemon, tmp_path):
    """A start command that ends with an error before it is ready fails the create with its exit
    and output, without waiting for the timeout's end."""
    build_template(svc_daemon, tmp_path, "svc-exits",
                   "FROM base\nCMD echo cannot bind; exit 3\nREADY false\n")
    r = abx(svc_daemon, "create", "--template", "svc-exits", timeout=120)
    assert r.returncode != 0
    assert "the start command ended (exit status 3) before it was ready" in r.stderr
    assert "cannot bind" in r.stderr
    ids = created_ids(svc_daemon, "svc-exits")
    assert ids and ids[-1] not in listed_ids(svc_daemon)
    wait_until(lambda: not sandbox_host_pids(ids[-1]), what="the sandbox's processes to end")
    assert_daemon_fine(svc_daemon)


def test_hostile_start_command_floods_and_forks(svc_daemon, tmp_path, monkeypatch):
    """A start command that floods its output and forks many sleepers: the create still works,
    the log stays bounded, and killing the sandbox leaves none of its processes."""
    build_template(svc_daemon, tmp_path, "svc-hostile",
                   "FROM base\n"
                   "CMD (while :; do echo flood flood flood; done) & "
                   "for i in $(seq 100); do sleep 1000 & done; "
                   "head -c 3000000 /dev/zero | tr '\\0' x; python3 -m http.server 9000\n"
                   f"READY {HTTP_READY}\n")
    sb = e2b_sandbox(svc_daemon, "svc-hostile", monkeypatch)
    sandbox_id = sb.sandbox_id
    try:
        reply = httpx.get(svc_daemon.url + "/", headers={"Host": sb.get_host(9000)})
        assert reply.status_code == 200
        lines = logs(svc_daemon, sandbox_id).splitlines()
        assert 0 < len(lines) <= 1000
        assert all(len(line) < 700 for line in lines)
    finally:
        sb.kill()
    wait_until(lambda: not sandbox_host_pids(sandbox_id), what="the sandbox's processes to end")
    assert_daemon_fine(svc_daemon)


def test_commands_py_context_starts_the_server(svc_daemon, tmp_path):
    """A context with a commands.py that the Sandboxfile copies in, and no CMD: the template
    starts agent_sandbox.server with those commands on port 9000 (the package itself comes with
    the server SDK; this checks what the template records)."""
    info = build_template(svc_daemon, tmp_path, "svc-commands",
                          "FROM base\nCOPY commands.py /app/\n",
                          {"commands.py": "def hello():\n    return {}\n"})
    assert info["startCmd"] == ("exec 'python3' '-m' 'agent_sandbox.server' '--port' '9000' "
                                "'--commands' '/app/commands.py'")
    assert "9000" in info["readyCmd"]
    # A CMD of its own wins.
    info = build_template(svc_daemon, tmp_path, "svc-commands-cmd",
                          "FROM base\nCOPY commands.py /app/\nCMD sleep 1\n",
                          {"commands.py": "def hello():\n    return {}\n"})
    assert info["startCmd"] == "sleep 1"


def test_sandbox_without_start_command_is_unchanged(svc_daemon):
    """base has no start command: its sandboxes start nothing and their log has no start lines."""
    r = abx(svc_daemon, "create", "--template", "base")
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stdout.strip()
    try:
        assert "start: " not in logs(svc_daemon, sandbox_id)
    finally:
        abx(svc_daemon, "kill", sandbox_id, "--yes")
