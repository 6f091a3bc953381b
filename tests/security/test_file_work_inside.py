"""Issue 12, "file work inside the sandbox's walls": what the files API writes is written by a
process inside the sandbox, as the requested user, and charged to the sandbox's memory (its
disk is RAM), never to the daemon's; an upload past that limit fails with a clear message and
leaves no partial file; and sandbox code cannot look into the process doing the work."""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from harness import start_daemon, stop_daemon
from helpers import abx, wait_until

pytestmark = pytest.mark.offline  # the `host` template needs no build

MiB = 1 << 20


@pytest.fixture
def d(state_dir):
    daemon = start_daemon(state_dir / "state", shared_templates=False,
                          extra_args=("--warm-pool", "0"))
    pid = daemon.proc.pid
    yield daemon
    assert daemon.proc.pid == pid and daemon.proc.poll() is None, "the daemon died"
    assert httpx.get(daemon.url + "/health", timeout=10).status_code == 204
    stop_daemon(daemon)


def create(d, **body) -> dict:
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", **body})
    assert r.status_code == 201, r.text
    return r.json()


def plane_headers(d, sandbox: dict) -> dict[str, str]:
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983",
               "X-API-KEY": d.api_key}
    if sandbox.get("envdAccessToken"):
        headers["X-Access-Token"] = sandbox["envdAccessToken"]
    return headers


def upload(d, sandbox: dict, path: str, content, timeout: float = 120) -> httpx.Response:
    headers = {**plane_headers(d, sandbox), "Content-Type": "application/octet-stream"}
    return httpx.post(d.url + "/files", params={"path": path, "username": "user"},
                      content=content, headers=headers, timeout=timeout)


def memory_used(d, sandbox: dict) -> int:
    with d.api() as api:
        r = api.get(f"/sandboxes/{sandbox['sandboxID']}/metrics")
    assert r.status_code == 200, r.text
    return r.json()[-1]["memUsed"]


def test_an_upload_is_charged_to_the_sandboxs_memory(d):
    sandbox = create(d, memoryMB=256, diskSizeMB=512)
    before = memory_used(d, sandbox)
    r = upload(d, sandbox, "/tmp/data.bin", os.urandom(MiB) * 64)
    assert r.status_code == 200, r.text
    # The file's pages (its disk is RAM) count toward the sandbox, as they would had code in
    # the sandbox written it; written by the daemon they were the daemon's.
    assert memory_used(d, sandbox) - before >= 48 * MiB


@pytest.mark.slow  # sends 200 MiB
def test_an_upload_past_the_memory_limit_fails_cleanly(d):
    sandbox = create(d, memoryMB=128, diskSizeMB=512)
    r = upload(d, sandbox, "/tmp/too-big.bin", os.urandom(MiB) * 200)
    assert r.status_code == 507, r.text
    message = r.json()["message"]
    assert "want of memory" in message and "/tmp/too-big.bin" in message, message
    # No partial file is left, and the memory it took is the sandbox's again.
    gone = httpx.get(d.url + "/files", params={"path": "/tmp/too-big.bin"},
                     headers=plane_headers(d, sandbox), timeout=30)
    assert gone.status_code == 404, gone.text
    assert memory_used(d, sandbox) < 32 * MiB
    ran = abx(d, "exec", sandbox["sandboxID"], "--", "echo", "still here")
    assert ran.returncode == 0 and ran.stdout == "still here\n", ran.stderr


def slow_body(started: threading.Event, finish: threading.Event) -> Iterator[bytes]:
    yield b"first piece\n"
    started.set()
    finish.wait()  # until the test says so
    yield b"last piece\n"


def test_the_writer_is_a_sandbox_process_that_sandbox_code_cannot_look_into(d):
    sandbox = create(d)
    sid = sandbox["sandboxID"]
    started, finish = threading.Event(), threading.Event()
    result: dict[str, httpx.Response] = {}
    uploader = threading.Thread(target=lambda: result.update(
        r=upload(d, sandbox, "/home/user/slow.txt", slow_body(started, finish))))
    uploader.start()
    try:
        assert started.wait(30)
        # Every process but init and this shell's own: the upload's writer.
        script = ('for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" = 1 ] && continue; '
                  '[ "$n" = $$ ] && continue; case "$(cat $p/comm)" in *abx-init) ;; *) continue;; esac; '
                  'grep "^Uid:" $p/status; ls $p/fd >/dev/null 2>&1 && echo fds-readable; '
                  'done')
        seen = wait_until(
            lambda: (abx(d, "exec", sid, "--", "sh", "-c", script).stdout or None),
            timeout=30, what="the upload's writer to show among the sandbox's processes")
        # Written as the requested user (uid 1000), from inside the sandbox...
        assert seen.startswith("Uid:\t0\t0\t0\t1000"), seen
        # ...and not dumpable: the user's own code cannot open its fds or ptrace it.
        assert "fds-readable" not in seen, seen
    finally:
        finish.set()
        uploader.join(90)
    assert result["r"].status_code == 200, result["r"].text
    cat = abx(d, "exec", sid, "--", "sh", "-c", "cat /home/user/slow.txt; stat -c %U slow.txt")
    assert cat.stdout == "first piece\nlast piece\nuser\n", cat.stderr


def test_a_stalled_upload_does_not_hold_the_files_api(d):
    """While one upload waits on its client, other file calls on the same sandbox go on."""
    sandbox = create(d)
    started, finish = threading.Event(), threading.Event()
    uploader = threading.Thread(target=lambda: upload(d, sandbox, "/tmp/stalled.txt",
                                                      slow_body(started, finish)))
    uploader.start()
    try:
        assert started.wait(30)
        # Were file calls queued behind the stalled one, this would time out.
        other = upload(d, sandbox, "/tmp/other.txt", b"other\n", timeout=30)
        assert other.status_code == 200, other.text
    finally:
        finish.set()
        uploader.join(90)


def find_writer(d, sid: str) -> int:
    """The pid (inside the sandbox) of the worker writing an upload."""
    script = ('for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" = 1 ] && continue; '
              '[ "$n" = $$ ] && continue; case "$(cat $p/comm)" in *abx-init) echo $n;; esac; '
              'done')
    out = wait_until(lambda: abx(d, "exec", sid, "--", "sh", "-c", script).stdout.strip() or None,
                     timeout=30, what="the upload's writer")
    return int(out.split()[0])


def test_sandbox_code_cannot_stop_the_writer_nor_redirect_its_cleanup(d):
    """An abandoned upload's partial file is removed by the writer, by its name in the
    directory it made it in: swapping that directory for a link to /etc meanwhile removes
    nothing there (as root, the daemon once removed /etc/<name> by path)."""
    sandbox = create(d)
    sid = sandbox["sandboxID"]
    ran = abx(d, "exec", "--user", "root", sid, "--", "sh", "-c",
              "echo keep > /etc/victim && mkdir -p /home/user/d && chown user /home/user/d")
    assert ran.returncode == 0, ran.stderr
    started = threading.Event()

    def abandoned_body() -> Iterator[bytes]:
        yield b"partial\n"
        started.set()
        time.sleep(3)
        raise RuntimeError("the client gives up")  # the connection ends mid-body

    def give_up() -> None:
        with contextlib.suppress(httpx.HTTPError, RuntimeError):
            upload(d, sandbox, "/home/user/d/victim", abandoned_body())

    uploader = threading.Thread(target=give_up)
    uploader.start()
    try:
        assert started.wait(30)
        writer = find_writer(d, sid)
        # The user's processes may not signal the writer (its real uid is not theirs)...
        stop = abx(d, "exec", sid, "--", "kill", "-STOP", str(writer))
        assert stop.returncode != 0 and "not permitted" in stop.stderr, stop.stderr
        # ...and moving its directory away does not move where the cleanup goes.
        swapped = abx(d, "exec", sid, "--", "sh", "-c",
                      "cd /home/user && mv d d.old && ln -s /etc d")
        assert swapped.returncode == 0, swapped.stderr
    finally:
        uploader.join(60)
    wait_until(lambda: abx(d, "exec", sid, "--", "ls", "/home/user/d.old").stdout == "",
               timeout=30, what="the partial file to be removed")
    kept = abx(d, "exec", sid, "--", "cat", "/etc/victim")
    assert kept.stdout == "keep\n", kept.stderr
