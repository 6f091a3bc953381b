"""Issue 32 under load: the daemon goes five times in a row (SIGKILL, SIGTERM, or `abx
daemon stop`, then `abx daemon start`) while 50 sandboxes run background writers, 10
interpreter contexts hold state, a client uploads and downloads files and clients follow
commands' output. Afterwards nothing is lost: every sandbox is listed and usable, every
writer still runs and its output is whole, every deadline was enforced (also while no
daemon ran), every variable is intact, every acknowledged upload reads back the same, and
a client streaming at the moment the daemon went got an error and reconnected. Driven by
the E2B SDKs, on the offline `host` template."""
from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from durable_helpers import Collector, e2b_env, kept_output, numbers, running_in
from harness import ABX_BIN, Daemon
from helpers import cgroup_dirs, sandbox_host_pids, veth_prefix, wait_until

pytestmark = [pytest.mark.offline, pytest.mark.slow]
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")
code_interpreter = pytest.importorskip("e2b_code_interpreter",
                                       reason="the E2B SDK is installed by make deps")

SANDBOXES = 50
CONTEXTS = 10  # the first sandboxes hold an interpreter context each
STREAMED = 10  # writers a client follows when the daemon goes
DEADLINED = 10  # sandboxes that get 60 s commands with a 5 s deadline
UPLOADED = 5  # the last sandboxes, where a client uploads and downloads
RESTARTS = 5
# A numbered line every 50 ms, without a process per line (`read -t` on a FIFO nobody
# writes is bash's own sleep): 50 of them stay light on two cores.
WRITER = ("mkfifo /tmp/tick && exec 9<>/tmp/tick; i=0; "
          "while true; do i=$((i+1)); echo line $i; read -t 0.05 -u 9; done")
# The most lines a killed daemon may have read but not sent to a client following a
# writer: they are not streamed again (README), but the agent keeps them.
UNSENT = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BackgroundDaemon:
    """The user's background daemon, managed as a user does: `abx daemon start` brings it
    up on the port it had last (so SDK objects made before a restart keep working), and it
    goes with a signal to its pid or with `abx daemon stop`."""

    def __init__(self, state_dir: Path):
        self.data_dir = state_dir / "state"
        self.data_dir.mkdir(parents=True)
        # A free port of its own, not the default another test's daemon may hold.
        (self.data_dir / "daemon.port").write_text(f"{free_port()}\n")
        # 50 sandboxes' memory limits (512 MiB each) may add up to more than a small host
        # has: they are caps, not use (as the session daemon's, tests/conftest.py).
        (self.data_dir / "config.json").write_text('{"hostCaps": {"memoryPercent": 1000}}')
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
        self.env.update(ABX_STATE_DIR=str(self.data_dir), ABX_CONFIG_DIR=str(state_dir / "config"),
                        ABX_WARM_POOL="0")

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(ABX_BIN), *args], capture_output=True, text=True,
                              env=self.env, stdin=subprocess.DEVNULL, timeout=120, check=False)

    def start(self) -> Daemon:
        started = self.cli("daemon", "start")
        assert started.returncode == 0, started.stderr
        assert "WARNING" not in started.stderr, started.stderr  # it kept its port
        url = (self.data_dir / "daemon.addr").read_text().strip()
        key = (self.data_dir / "api_key").read_text().strip()
        return Daemon(url=url, api_key=key, data_dir=self.data_dir, proc=None)

    def pid(self) -> int | None:
        try:
            pid = int((self.data_dir / "daemon.lock").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if alive(pid) else None

    def go(self, how: str) -> None:
        pid = self.pid()
        assert pid, "no daemon runs"
        if how == "daemon-stop":
            stopped = self.cli("daemon", "stop")
            assert stopped.returncode == 0, stopped.stderr
        else:
            os.kill(pid, signal.SIGKILL if how == "sigkill" else signal.SIGTERM)
        wait_until(lambda: not alive(pid), timeout=30, what=f"the daemon to exit ({how})")

    def tear_down(self) -> None:
        """Whatever the test left: its sandboxes are killed, then the daemon stops."""
        if not self.pid():
            self.start()
        self.cli("kill", "--all", "--yes")
        self.cli("daemon", "stop")
        pid = self.pid()
        if pid:  # a daemon that would not stop
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def background(state_dir, monkeypatch):
    control = BackgroundDaemon(state_dir)
    yield control
    control.tear_down()


class Uploader:
    """A client writing files of random content into some sandboxes, and reading earlier
    ones back, while the daemon goes and comes back. A write that returned is acknowledged:
    its content must be there afterwards."""

    def __init__(self, boxes: list):
        self.boxes = boxes
        self.acknowledged: list[tuple[object, str, str]] = []  # (sandbox, path, sha256)
        self.refused = 0
        self.read_wrong: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        number = 0
        while not self.stopping.is_set():
            number += 1
            sb = self.boxes[number % len(self.boxes)]
            data = os.urandom(random.randint(1, 128) * 1024)
            path = f"/tmp/upload-{number}"
            try:
                sb.files.write(path, data, request_timeout=60)
            except Exception:  # the daemon is gone: not acknowledged
                self.refused += 1
                time.sleep(0.1)
                continue
            self.acknowledged.append((sb, path, hashlib.sha256(data).hexdigest()))
            earlier, earlier_path, digest = random.choice(self.acknowledged)
            try:
                got = earlier.files.read(earlier_path, format="bytes", request_timeout=60)
            except Exception:
                continue
            if hashlib.sha256(got).hexdigest() != digest:
                self.read_wrong.append(earlier_path)

    def written(self) -> int:
        return len(self.acknowledged)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(120)
        assert not self.thread.is_alive(), "an upload or a download hangs"


def follow(sb, pid: int) -> Collector:
    """A client following a writer's output from now on (no deadline on the stream)."""
    stream = Collector(sb.commands.connect(pid, timeout=0))
    wait_until(lambda: len(stream.seen()) >= 3, timeout=30, what="a followed writer's output")
    return stream


def check_reconnected(before: Collector, after: Collector) -> None:
    """The stream the daemon's going ended with an error, not silently and not never;
    the new one goes on from there: nothing twice, at most the few lines the old daemon
    had read but not sent missing, and no gap within it."""
    before.thread.join(60)
    assert not before.thread.is_alive(), "a client streaming when the daemon went hangs"
    assert before.error is not None, "the stream ended as if the command had ended"
    last, seen = before.seen()[-1], after.seen()
    assert last < seen[0] <= last + UNSENT, (last, seen[:5])
    assert seen == list(range(seen[0], seen[0] + len(seen))), "a gap in the stream"


class Load:
    """The sandboxes and the clients that a daemon's restarts must not disturb: a writer in
    every sandbox, an interpreter context holding state in the first ones, clients following
    some writers, an uploading client, and commands with deadlines."""

    def __init__(self, pool: ThreadPoolExecutor):
        self.pool = pool
        self.boxes = list(pool.map(
            lambda _: code_interpreter.Sandbox.create(template="host", timeout=900),
            range(SANDBOXES)))
        self.writers = dict(pool.map(
            lambda sb: (sb.sandbox_id, sb.commands.run(WRITER, background=True, timeout=0).pid),
            self.boxes))
        self.with_context = self.boxes[:CONTEXTS]
        self.deadlined = self.boxes[CONTEXTS:CONTEXTS + DEADLINED]
        self.tokens = {sb.sandbox_id: os.urandom(8).hex() for sb in self.with_context}
        self.contexts = dict(pool.map(self._make_context, self.with_context))
        self.uploads = Uploader(self.boxes[-UPLOADED:])
        self.streams = self._follow()

    def _make_context(self, sb):
        context = sb.create_code_context(language="python", cwd="/tmp")
        made = sb.run_code(f"token = {self.tokens[sb.sandbox_id]!r}; n = 0", context=context)
        assert made.error is None, made.error
        return sb.sandbox_id, context

    def _follow(self) -> dict[str, Collector]:
        return {sb.sandbox_id: follow(sb, self.writers[sb.sandbox_id])
                for sb in self.boxes[:STREAMED]}

    def start_deadlined(self, marker: str) -> float:
        """60 s commands with a 5 s deadline; when they started."""
        started = time.monotonic()
        list(self.pool.map(lambda sb: sb.commands.run(marker, background=True, timeout=5),
                           self.deadlined))
        return started

    def wait_deadlined_gone(self, marker: str, started: float) -> None:
        """Seen from the host (no daemon needed): gone 10 s after they started."""
        wait_until(lambda: not any(running_in(sb.sandbox_id, marker) for sb in self.deadlined),
                   timeout=max(0.5, started + 10 - time.monotonic()),
                   what=f"`{marker}` to be ended at its 5 s deadline")

    def check_deadlined_unlisted(self) -> None:
        for sb in self.deadlined:
            assert not any("sleep 60" in " ".join([p.cmd, *p.args]) for p in sb.commands.list())

    def check_writers_run_on_their_own(self) -> None:
        """While no daemon runs (seen from the host)."""
        assert all(running_in(sb.sandbox_id, "echo line") for sb in self.boxes), \
            "a writer without a deadline ended while no daemon ran"

    def check_after_restart(self, d: Daemon, number: int) -> None:
        """Every sandbox listed, every writer listed, every context counted every restart,
        and every followed writer followed again from where its stream broke off."""
        with d.api() as api:
            listed = {sb["sandboxID"] for sb in api.get("/v2/sandboxes").json()}
        assert listed == set(self.writers), set(self.writers) ^ listed
        assert all(self.pool.map(self._writer_listed, self.boxes)), "a writer is not listed"
        for sb in self.with_context:
            result = sb.run_code("n += 1; n", context=self.contexts[sb.sandbox_id])
            assert result.text == str(number), (result.text, result.error)
        again = self._follow()
        for sandbox_id, stream in self.streams.items():
            check_reconnected(stream, again[sandbox_id])
        self.streams = again

    def _writer_listed(self, sb) -> bool:
        return self.writers[sb.sandbox_id] in {p.pid for p in sb.commands.list()}

    def check_at_end(self, d: Daemon) -> None:
        self.uploads.stop()
        assert self.uploads.written() >= 2 * RESTARTS, "too few uploads to tell"
        assert not self.uploads.read_wrong, self.uploads.read_wrong
        same = self.pool.map(read_back, self.uploads.acknowledged)
        changed = [path for (_, path, _), kept in zip(self.uploads.acknowledged, same) if not kept]
        assert not changed, f"acknowledged uploads that changed: {changed}"
        list(self.pool.map(lambda sb: self._check_whole_output(d, sb), self.boxes))
        for sb in self.with_context:
            kept = sb.run_code(f"token == {self.tokens[sb.sandbox_id]!r}",
                               context=self.contexts[sb.sandbox_id])
            assert kept.text == "True", (kept.text, kept.error)

    def _check_whole_output(self, d: Daemon, sb) -> None:
        """From line 1, no gap, no repeat, still running; and the sandbox still runs a
        command."""
        body, out, _ = kept_output(d, sb.sandbox_id, self.writers[sb.sandbox_id])
        lines = numbers(out.decode())
        assert body["start"] == 0 and not body["ended"], body
        assert lines == list(range(1, len(lines) + 1)), f"{sb.sandbox_id}: a gap or a repeat"
        assert sb.commands.run("echo usable").stdout == "usable\n"


def read_back(acknowledged: tuple) -> bool:
    sb, path, digest = acknowledged
    return hashlib.sha256(sb.files.read(path, format="bytes")).hexdigest() == digest


def what_is_left(data_dir: Path, ids: set[str]) -> dict[str, list]:
    """What the test's sandboxes could hold on the host after they were killed."""
    prefix = veth_prefix(data_dir / "sandboxes") or "\0"
    return {
        "processes": [i for i in ids if sandbox_host_pids(i)],
        "cgroups": [str(p) for p in cgroup_dirs() if p.name in ids],
        "sandbox dirs": [i for i in ids if (data_dir / "sandboxes" / i).exists()],
        "mounts": [line for line in Path("/proc/mounts").read_text().splitlines()
                   if str(data_dir) in line],
        "links": [name for name in os.listdir("/sys/class/net") if name.startswith(prefix)],
    }


@pytest.mark.timeout(240)
@pytest.mark.parametrize("how", ["sigkill", "sigterm", "daemon-stop"])
def test_five_restarts_under_load_lose_nothing(background, monkeypatch, how):
    d = background.start()
    e2b_env(monkeypatch, d)
    with ThreadPoolExecutor(8) as pool:
        load = Load(pool)
        for number in range(1, RESTARTS + 1):
            # Deadlines pass the first time while no daemon runs, the third time after
            # the next one started.
            marker = f"sleep 60.{number}"
            started = load.start_deadlined(marker) if number in (1, 3) else 0.0
            written = load.uploads.written()
            wait_until(lambda w=written: load.uploads.written() >= w + 2, timeout=30,
                       what="uploads while the daemon runs")
            background.go(how)
            if number == 1:  # the sandboxes' agents keep time by themselves
                load.wait_deadlined_gone(marker, started)
                load.check_writers_run_on_their_own()
            d = background.start()  # same URL and key: the SDK objects made before still work
            load.check_after_restart(d, number)
            if number == 3:
                load.wait_deadlined_gone(marker, started)
            if number in (1, 3):
                load.check_deadlined_unlisted()
        load.check_at_end(d)
        list(pool.map(lambda sb: sb.kill(), load.boxes))
    background.cli("daemon", "stop")
    wait_until(lambda: not any(what_is_left(d.data_dir, set(load.writers)).values()),
               timeout=30, what="nothing of the sandboxes to be left on the host")
