"""Commands outlive the daemon: after a SIGKILL and a restart, a background command that
writes is still running, listed, and streamed again through connect(pid) with what it
wrote while no daemon ran; its deadline still holds; a PTY shell still answers. Driven by
the E2B SDK, on the offline `host` template."""
from __future__ import annotations

import re
import signal
import threading
import time

import pytest
from durable_helpers import Collector, e2b_env, kept_output, numbers, restart, running_in
from harness import start_daemon
from helpers import wait_until

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")


def test_a_writing_background_command_survives_a_daemon_sigkill(own_daemon, monkeypatch):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    script = "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.02; done"
    handle = sb.commands.run(script, background=True)
    before = Collector(handle)
    wait_until(lambda: len(before.seen()) >= 10, what="the command to write")
    own_daemon["d"] = restart(own_daemon["d"], monkeypatch)
    last_before = before.seen()[-1]

    again = e2b.Sandbox.connect(sb.sandbox_id)
    listed = {p.pid: p for p in again.commands.list()}
    assert handle.pid in listed, f"{handle.pid} not in {sorted(listed)}"
    assert "echo line" in " ".join([listed[handle.pid].cmd, *listed[handle.pid].args])
    after = Collector(again.commands.connect(handle.pid))
    wait_until(lambda: len(after.seen()) >= 200, timeout=30, what="output after the restart")
    seen = after.seen()
    # What it wrote while no daemon ran comes first, then the rest, with no gap.
    assert seen[0] <= last_before + 5, (last_before, seen[:5])
    assert seen == list(range(seen[0], seen[0] + len(seen))), "a gap in the output"
    assert again.commands.kill(handle.pid)
    wait_until(lambda: handle.pid not in {p.pid for p in again.commands.list()},
               what="the killed command to leave the list")
    again.kill()


def test_a_deadline_holds_across_a_restart_and_a_pty_shell_still_answers(own_daemon, monkeypatch):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    timed = sb.commands.run("sleep 600; echo never", background=True, timeout=8)
    terminal = sb.pty.create(e2b.PtySize(rows=24, cols=80))
    own_daemon["d"] = restart(own_daemon["d"], monkeypatch)

    again = e2b.Sandbox.connect(sb.sandbox_id)
    assert timed.pid in {p.pid for p in again.commands.list()}
    again.pty.send_stdin(terminal.pid, b"echo alive > /tmp/pty-answered\n")
    wait_until(lambda: again.commands.run("cat /tmp/pty-answered || true").stdout == "alive\n",
               timeout=15, what="the PTY shell started before the restart to run a command")

    def sleeping() -> bool:
        return "sleep 600" in again.commands.run("ps -eo args", user="root").stdout

    wait_until(lambda: not sleeping(), timeout=40,
               what="the command to be stopped at its 8 s timeout by the new daemon")
    assert timed.pid not in {p.pid for p in again.commands.list()}
    again.kill()


def test_the_sandbox_enforces_a_deadline_while_no_daemon_runs(own_daemon, monkeypatch):
    sb = e2b.Sandbox.create(template="host", timeout=300)
    timed = sb.commands.run("sleep 6001", background=True, timeout=3)
    untimed = sb.commands.run("sleep 6002", background=True)
    assert running_in(sb.sandbox_id, "sleep 6001")
    d = own_daemon["d"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    # No daemon runs now: the sandbox's init ends the command at its timeout by itself,
    # and leaves the one without a timeout alone.
    wait_until(lambda: not running_in(sb.sandbox_id, "sleep 6001"), timeout=30,
               what="the 3 s timeout to be enforced while no daemon runs")
    assert running_in(sb.sandbox_id, "sleep 6002")
    own_daemon["d"] = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    e2b_env(monkeypatch, own_daemon["d"])
    again = e2b.Sandbox.connect(sb.sandbox_id)
    listed = {p.pid for p in again.commands.list()}
    assert untimed.pid in listed and timed.pid not in listed, listed
    again.kill()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "stop"])
def test_interpreter_contexts_keep_their_state_across_a_daemon_restart(own_daemon, monkeypatch,
                                                                       how):
    from e2b_code_interpreter import Sandbox as CodeSandbox

    sb = CodeSandbox.create(template="host", timeout=300)
    assert sb.run_code("x = 41").error is None
    made = sb.create_code_context(language="python", cwd="/tmp")
    assert sb.run_code("y = 'kept'", context=made).error is None
    bash = sb.create_code_context(language="bash")
    assert sb.run_code("export GREETING=hello", context=bash).error is None
    # An execution in flight when the daemon dies completes in the sandbox; the next one in
    # that context runs after it.
    def run_across_the_kill():
        try:  # its stream ends with the daemon
            sb.run_code("import time; open('/tmp/started', 'w').close(); time.sleep(3); "
                        "z = 'finished'", context=made)
        except Exception:
            pass

    in_flight = threading.Thread(target=run_across_the_kill, daemon=True)
    in_flight.start()
    wait_until(lambda: sb.files.exists("/tmp/started"), what="the execution to start")
    own_daemon["d"] = restart(own_daemon["d"], monkeypatch, how)
    in_flight.join(30)

    again = CodeSandbox.connect(sb.sandbox_id)
    assert again.run_code("x + 1").text == "42"
    ids = {c.id for c in again.list_code_contexts()}
    assert made.id in ids and bash.id in ids, ids
    assert again.run_code("y + ' ' + z", context=made).text == "kept finished"
    assert again.run_code("echo $GREETING", context=bash).logs.stdout == ["hello\n"]
    again.kill()


def test_five_sigkills_in_a_row_lose_no_command_and_no_context_state(own_daemon, monkeypatch):
    from e2b_code_interpreter import Sandbox as CodeSandbox

    script = "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.01; done"
    boxes = [CodeSandbox.create(template="host", timeout=600) for _ in range(2)]
    writers = {sb.sandbox_id: sb.commands.run(script, background=True).pid for sb in boxes}
    for sb in boxes:
        assert sb.run_code("n = 0").error is None
    streams: dict[str, Collector] = {}
    for restart_number in range(1, 6):
        for sb in boxes:
            before = streams.get(sb.sandbox_id)
            stream = streams[sb.sandbox_id] = Collector(sb.commands.connect(writers[sb.sandbox_id]))
            wait_until(lambda s=stream: len(s.seen()) >= 20, timeout=30,
                       what=f"output after restart {restart_number - 1}")
            seen = stream.seen()
            assert seen == list(range(seen[0], seen[0] + len(seen))), "a gap in the output"
            if before is not None:  # the stream the last daemon's death ended
                before.thread.join(30)
                last = before.seen()[-1]
                # Nothing twice, and at most the few lines the killed daemon had read but
                # not sent yet.
                assert last < seen[0] <= last + 5, (last, seen[:5])
            assert sb.run_code("n += 1; n").text == str(restart_number)
        own_daemon["d"] = restart(own_daemon["d"], monkeypatch)
        boxes = [CodeSandbox.connect(sb.sandbox_id) for sb in boxes]
        for sb in boxes:
            listed = {p.pid for p in sb.commands.list()}
            assert writers[sb.sandbox_id] in listed, listed
    for sb in boxes:
        assert sb.run_code("n").text == "5"
        sb.kill()


def test_a_commands_output_is_kept_in_the_sandbox_from_its_first_byte(own_daemon, monkeypatch):
    """Read from the agent, not from the daemon: after a SIGKILL and a restart the output
    a command wrote before (which the old daemon had read and streamed) is there again from
    line 1, stdout and stderr apart, with no gap or duplicate; then, once it ended, its
    exit code and tail; a pid that is no command is a 404 that says where to look."""
    sb = e2b.Sandbox.create(template="host", timeout=300)
    script = ("for i in $(seq 1 400); do echo line $i; echo err $i >&2; "
              "if [ $i = 300 ]; then until [ -e /tmp/go ]; do sleep 0.1; done; fi; done; exit 3")
    handle = sb.commands.run(script, background=True)
    streamed = Collector(handle)
    wait_until(lambda: len(streamed.seen()) >= 300, what="the command to write 300 lines")
    own_daemon["d"] = restart(own_daemon["d"], monkeypatch)
    d = own_daemon["d"]

    body, out, err = kept_output(d, sb.sandbox_id, handle.pid)
    assert numbers(out.decode()) == list(range(1, 301)), "stdout from its first line, whole"
    assert re.findall(r"^err (\d+)$", err.decode(), re.M) == [str(i) for i in range(1, 301)]
    assert body["start"] == 0 and not body["ended"]

    again = e2b.Sandbox.connect(sb.sandbox_id)
    again.commands.run("touch /tmp/go")
    wait_until(lambda: kept_output(d, sb.sandbox_id, handle.pid)[0]["ended"],
               what="the command to end")
    body, out, _ = kept_output(d, sb.sandbox_id, handle.pid)
    assert body["exitCode"] == 3, body
    assert numbers(out.decode())[-1] == 400

    with d.api() as api:
        missing = api.get(f"/abx/v1/sandboxes/{sb.sandbox_id}/processes/99999/output")
        assert missing.status_code == 404
        assert f"abx ps {sb.sandbox_id}" in missing.json()["message"]
        bad = api.get(f"/abx/v1/sandboxes/{sb.sandbox_id}/processes/{handle.pid}/output",
                      params={"offset": "-1"})
        assert bad.status_code == 400 and "offset" in bad.json()["message"]
    again.kill()


def test_a_command_never_waits_on_its_output_while_no_daemon_runs(own_daemon, monkeypatch):
    """With the daemon gone, a command that writes 4 MB (more than the pipe and the ring
    hold) runs to its end instead of waiting for a reader; the agent keeps its newest output
    and counts every byte it wrote."""
    sb = e2b.Sandbox.create(template="host", timeout=300)
    # It starts writing once the daemon is gone (SIGKILLed at once).
    script = "sleep 2; head -c 4000000 /dev/zero | tr '\\0' x; date +%s.%N > /tmp/wrote-all"
    handle = sb.commands.run(script, background=True)
    d = own_daemon["d"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    killed_at = time.time()
    time.sleep(5)  # the command runs while no daemon does
    own_daemon["d"] = d = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    e2b_env(monkeypatch, d)
    again = e2b.Sandbox.connect(sb.sandbox_id)
    wrote_all = again.commands.run("cat /tmp/wrote-all || echo 1e12").stdout
    assert float(wrote_all) < killed_at + 5, "the command waited for a daemon to read"
    wait_until(lambda: kept_output(d, sb.sandbox_id, handle.pid)[0]["ended"],
               what="the command to be seen ended")
    body, out, _ = kept_output(d, sb.sandbox_id, handle.pid)
    assert body["end"] == 4000000 and body["exitCode"] == 0
    assert out and set(out) == {ord("x")} and len(out) <= 1024 * 1024
    again.kill()


def test_a_commands_stdin_stays_open_across_a_restart_and_closes_on_request(
        own_daemon, monkeypatch):
    """A command reading its stdin does not read EOF when the daemon dies: the next daemon
    sends it more, and close_stdin (before or after the restart) gives it EOF."""
    sb = e2b.Sandbox.create(template="host", timeout=300)
    reader = sb.commands.run("while read line; do echo got $line; done; echo eof",
                             background=True, stdin=True)
    cat = sb.commands.run("cat; echo cat-eof", background=True, stdin=True)
    sb.commands.send_stdin(reader.pid, "one\n")
    streamed = Collector(reader)
    wait_until(lambda: "got one" in streamed.text, what="the first line to be read")
    own_daemon["d"] = restart(own_daemon["d"], monkeypatch)

    again = e2b.Sandbox.connect(sb.sandbox_id)
    after = Collector(again.commands.connect(reader.pid))
    again.commands.send_stdin(reader.pid, "two\n")
    wait_until(lambda: "got two" in after.text, what="a line sent after the restart")
    assert "eof" not in after.text.replace("got", "")
    again.commands.close_stdin(reader.pid)
    wait_until(lambda: "\neof\n" in after.text, what="EOF after close_stdin")
    cat_after = Collector(again.commands.connect(cat.pid))
    again.commands.close_stdin(cat.pid)
    wait_until(lambda: "cat-eof" in cat_after.text, what="cat to read EOF")
    again.kill()
