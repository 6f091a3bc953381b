"""The daemon under faults: SIGKILL during a create burst leaves no clone of
it alive; concurrent CLI calls start one daemon; SIGTERM does not wait for a
long run_code; the log is bounded; a full data dir gives clear 507s and an
acknowledged timeout is a saved one."""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from harness import ABX_BIN, Daemon, start_daemon, stop_daemon
from helpers import envd_headers, wait_until


def daemon_lineage(data_dir: Path) -> list[int]:
    """Live processes running `abx serve` on `data_dir`: the daemon, and any clone of it
    (a CLONE_VM child shares its memory, so its command line too). Zombies have none."""
    wanted = str(data_dir).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and wanted in args:
            pids.append(int(entry.name))
    return pids


def port_closed(url: str) -> bool:
    parsed = urlparse(url)
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.connect((parsed.hostname, parsed.port))
        except OSError:
            return True
    return False


def cleanup(data_dir: Path, **kwargs) -> None:
    """A daemon on `data_dir` adopts what a killed one left; its sandboxes are killed."""
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0"), **kwargs)
    stop_daemon(d)


def create_burst(d: Daemon, created: threading.Semaphore, stop: threading.Event) -> None:
    """Creates `host` sandboxes until `stop` or the daemon is gone."""
    with d.api() as api:
        while not stop.is_set():
            try:
                r = api.post("/sandboxes", json={"templateID": "host"})
            except httpx.HTTPError:
                return
            if r.status_code == 201:
                created.release()


def kill_during_a_create_burst(data_dir: Path) -> Daemon:
    """Starts a daemon, SIGKILLs it while twenty clients create sandboxes, returns it. With
    many inits cloned at once, each clone held copies of the others' start sockets (and of
    abx.db): killed 30-70 ms into the burst, they waited on each other forever."""
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    created, stop = threading.Semaphore(0), threading.Event()
    threads = [threading.Thread(target=create_burst, args=(d, created, stop), daemon=True)
               for _ in range(20)]
    for t in threads:
        t.start()
    try:
        assert created.acquire(timeout=60), "no create succeeded"
        threading.Event().wait(random.uniform(0.03, 0.07))  # in the thick of the burst
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    return d


@pytest.mark.offline
@pytest.mark.slow  # about 22 s even on an idle machine
def test_sigkill_during_a_create_burst_leaves_no_clone_of_the_daemon(state_dir):
    data_dir = state_dir / "state"
    for trial in range(8):
        d = kill_during_a_create_burst(data_dir)
        try:
            # A clone that is exiting has dropped its memory (and command line) a
            # moment before its fds: the port is checked until it closes too.
            wait_until(lambda url=d.url: not daemon_lineage(data_dir) and port_closed(url),
                       timeout=15,
                       what=f"trial {trial}: the killed daemon's clones to exit, its port to close")
        finally:
            for pid in daemon_lineage(data_dir):  # what the failure left, by pid
                os.kill(pid, signal.SIGKILL)
            cleanup(data_dir)


def cli_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(data_dir), ABX_CONFIG_DIR=str(data_dir / "config"))
    return env


@pytest.mark.offline
def test_concurrent_cli_calls_start_exactly_one_daemon(state_dir):
    data_dir = state_dir / "state"
    env = cli_env(data_dir)
    calls = [subprocess.Popen([str(ABX_BIN), "list"], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    try:
        results = [(c.wait(120), *c.communicate()) for c in calls]
        for code, _, err in results:
            assert code == 0, err
        starts = [err for _, _, err in results if "started the local daemon" in err]
        assert len(starts) == 1, [err for _, _, err in results]
        assert len(daemon_lineage(data_dir)) == 1
    finally:
        stopped = subprocess.run([str(ABX_BIN), "daemon", "stop"], env=env, capture_output=True,
                                 text=True, stdin=subprocess.DEVNULL, timeout=60, check=False)
    try:
        assert stopped.returncode == 0, stopped.stderr
        wait_until(lambda: not daemon_lineage(data_dir), what="the daemon to exit")
    finally:
        for pid in daemon_lineage(data_dir):  # daemons a failure left, by pid
            os.kill(pid, signal.SIGTERM)


def interpreter(d: Daemon, sb: dict) -> httpx.Client:
    headers = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49999"}
    if sb.get("envdAccessToken"):
        headers["X-Access-Token"] = sb["envdAccessToken"]
    return httpx.Client(base_url=d.url, headers=headers, timeout=httpx.Timeout(60, read=None))


@pytest.mark.needs_template
def test_daemon_stop_does_not_wait_for_a_long_run_code(state_dir):
    data_dir = state_dir / "state"
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    started, outcome = threading.Event(), {}

    def run_code(sb: dict) -> None:
        code = "import time\nprint('sleeping', flush=True)\ntime.sleep(600)"
        try:
            with interpreter(d, sb) as client, client.stream(
                    "POST", "/execute", json={"code": code}) as r:
                for line in r.iter_lines():
                    if line and json.loads(line).get("type") == "stdout":
                        started.set()
            outcome["result"] = "finished"
        except httpx.HTTPError as e:
            outcome["result"] = f"error: {type(e).__name__}"

    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "code-interpreter-v1"})
            assert r.status_code == 201, r.text
            sb = r.json()
        execution = threading.Thread(target=run_code, args=(sb,), daemon=True)
        execution.start()
        assert started.wait(120), "run_code did not start"
        stopped = subprocess.run([str(ABX_BIN), "daemon", "stop"], env=cli_env(data_dir),
                                 capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                 timeout=120, check=False)
        assert stopped.returncode == 0, stopped.stderr
        assert d.proc.wait(30) is not None
        execution.join(30)
        assert outcome.get("result", "").startswith("error"), outcome  # not left hanging
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        cleanup(data_dir)


@pytest.mark.offline
def test_the_daemon_log_is_rotated(state_dir):
    data_dir = state_dir / "state"
    log = state_dir / "logs" / "abx.log"
    log.parent.mkdir()
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0", "--log-file", str(log),
                                           "--log-max-bytes", "4096", "--log-files", "2"))
    try:
        with httpx.Client(base_url=d.url, timeout=30) as client:
            for _ in range(400):  # each one logged at debug: "http: GET /health"
                assert client.get("/health").status_code == 204
        files = sorted(log.parent.iterdir())
        assert len(files) == 3, files  # the live log and two rotated ones
        for f in files:
            assert f.stat().st_size <= 4096, (f, f.stat().st_size)
        assert "GET /health" in log.read_text()
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)


def fill(path: Path) -> None:
    """Writes zeros to `path` until its filesystem is full."""
    chunk = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.mark.offline
def test_a_full_data_dir_answers_507_and_keeps_what_it_acknowledged(state_dir):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the data dir needs root")
    data_dir = state_dir / "state"
    data_dir.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m,mode=0755", "tmpfs", str(data_dir)],
                   check=True)
    config = state_dir / "config.json"
    config.write_text('{"hostCaps": {"memoryPercent": 1000, "diskPercent": 1000}}')
    args = ("--warm-pool", "0", "--config", str(config))
    filler = data_dir / "filler"
    try:
        check_a_full_data_dir(data_dir, args, filler)
    finally:
        subprocess.run(["umount", "-l", str(data_dir)], check=False)


def check_a_full_data_dir(data_dir: Path, args: tuple[str, ...], filler: Path) -> None:
    d = start_daemon(data_dir, extra_args=args)
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": 16})
            assert r.status_code == 201, r.text
            sandbox_id = r.json()["sandboxID"]
            fill(filler)

            r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": 16})
            assert r.status_code == 507, r.text
            message = r.json()["message"]
            assert "No space left on device" in message or "out of disk" in message, message

            extended = api.post(f"/sandboxes/{sandbox_id}/timeout", json={"timeout": 3000})
            assert extended.status_code in (204, 507), extended.text
            before = api.get(f"/sandboxes/{sandbox_id}").json()["endAt"]
            assert d.proc.poll() is None and api.get("/health").status_code == 204
        filler.unlink()
        d.proc.send_signal(signal.SIGKILL)  # what is saved is what survives
        d.proc.wait()
        d = start_daemon(data_dir, extra_args=args)
        with d.api() as api:
            after = api.get(f"/sandboxes/{sandbox_id}")
            assert after.status_code == 200, after.text
            assert after.json()["endAt"] == before  # 204 meant saved; 507 changed nothing
            r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": 16})
            assert r.status_code == 201, r.text
    finally:
        filler.unlink(missing_ok=True)
        stop_daemon(d)


@pytest.mark.offline
def test_an_upload_bigger_than_the_sandbox_disk_answers_507(state_dir):
    d = start_daemon(state_dir / "state", extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": 32})
            assert r.status_code == 201, r.text
            sb = r.json()
        headers = envd_headers(sb)
        # A client that reads the answer only once it sent its whole body.
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        body = b"x" * (160 << 20)
        parsed = urlparse(d.url)
        with socket.create_connection((parsed.hostname, parsed.port), timeout=120) as s:
            s.sendall(f"POST /files?path=/tmp/big HTTP/1.1\r\nHost: sandbox\r\n{head}"
                      "Content-Type: application/octet-stream\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            assert s.recv(64).startswith(b"HTTP/1.1 507 ")
        with httpx.Client(base_url=d.url, headers=headers, timeout=120) as envd:
            raw = envd.post("/files", params={"path": "/tmp/big"}, content=body,
                            headers={"Content-Type": "application/octet-stream"})
            assert raw.status_code == 507, raw.text
            multipart = envd.post("/files", files={"file": ("/tmp/big2", body)})
            assert multipart.status_code == 507, multipart.text
            assert envd.get("/files", params={"path": "/tmp/big"}).status_code == 404
            ok = envd.post("/files", files={"file": ("/tmp/small", b"data")})
            assert ok.status_code == 200, ok.text
        assert d.proc.poll() is None and httpx.get(f"{d.url}/health").status_code == 204
    finally:
        stop_daemon(d)


def start_upload(d: Daemon, sb: dict, path: str, declared: int, sent: bytes) -> socket.socket:
    """An upload of `declared` bytes of which only `sent` go out; the caller ends it."""
    head = "".join(f"{k}: {v}\r\n" for k, v in envd_headers(sb).items())
    parsed = urlparse(d.url)
    s = socket.create_connection((parsed.hostname, parsed.port), timeout=60)
    s.sendall(f"POST /files?path={path} HTTP/1.1\r\nHost: sandbox\r\n{head}"
              "Content-Type: application/octet-stream\r\n"
              f"Content-Length: {declared}\r\n\r\n".encode() + sent)
    return s


def settled_content(envd: httpx.Client, path: str, old: bytes) -> bytes | None:
    """The file once no upload is under way: its old content, or None when gone."""
    def settled():
        r = envd.get("/files", params={"path": path})
        return ("gone",) if r.status_code == 404 else (r.content,) if r.content == old else None
    got = wait_until(settled, timeout=30, what=f"{path} to be whole again or gone")
    return None if got == ("gone",) else got[0]


def no_upload_leftovers(envd: httpx.Client, directory: str) -> bool:
    r = envd.get("/files", params={"path": directory + "/.abx-upload-x"})
    listing = envd.post("/filesystem.Filesystem/ListDir", json={"path": directory, "depth": 1},
                        headers={"Content-Type": "application/json",
                                 "Connect-Protocol-Version": "1"})
    assert listing.status_code == 200, listing.text
    return r.status_code == 404 and ".abx-upload-" not in listing.text


@pytest.mark.offline
def test_a_failed_overwrite_keeps_the_old_file(state_dir):
    old = b"the old content\n"
    d = start_daemon(state_dir / "state", extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "diskSizeMB": 32})
            assert r.status_code == 201, r.text
            sb = r.json()
        with httpx.Client(base_url=d.url, headers=envd_headers(sb), timeout=120) as envd:
            for name in ("aborted", "full"):
                r = envd.post("/files", files={"file": (f"/tmp/{name}.txt", old)})
                assert r.status_code == 200, r.text
            # The client goes away mid-body.
            start_upload(d, sb, "/tmp/aborted.txt", 1 << 20, b"new" * 1000).close()
            assert settled_content(envd, "/tmp/aborted.txt", old) == old
            # The sandbox's disk fills up under it.
            full = envd.post("/files", params={"path": "/tmp/full.txt"},
                             content=b"x" * (48 << 20),
                             headers={"Content-Type": "application/octet-stream"})
            assert full.status_code == 507, full.text
            assert settled_content(envd, "/tmp/full.txt", old) == old
            assert no_upload_leftovers(envd, "/tmp")
            # A whole overwrite still replaces it.
            r = envd.post("/files", files={"file": ("/tmp/full.txt", b"new")})
            assert r.status_code == 200, r.text
            assert envd.get("/files", params={"path": "/tmp/full.txt"}).content == b"new"
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)


@pytest.mark.offline
def test_sigkill_mid_upload_leaves_no_partial_file(state_dir):
    data_dir = state_dir / "state"
    old = b"the old content\n"
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host"})
            assert r.status_code == 201, r.text
            sb = r.json()
        with httpx.Client(base_url=d.url, headers=envd_headers(sb), timeout=60) as envd:
            r = envd.post("/files", files={"file": ("/tmp/kept.txt", old)})
            assert r.status_code == 200, r.text
        uploads = [start_upload(d, sb, path, 1 << 20, b"new" * 10000)
                   for path in ("/tmp/kept.txt", "/tmp/new.txt")]
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        for s in uploads:
            s.close()
        d = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
        with httpx.Client(base_url=d.url, headers=envd_headers(sb), timeout=60) as envd:
            assert settled_content(envd, "/tmp/kept.txt", old) == old
            wait_until(lambda: envd.get("/files", params={"path": "/tmp/new.txt"}).status_code
                       == 404, timeout=30, what="the unfinished new file to be removed")
            assert no_upload_leftovers(envd, "/tmp")
    finally:
        stop_daemon(d)
