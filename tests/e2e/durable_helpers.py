"""Helpers of the tests whose commands and interpreters outlive the daemon
(test_durable_processes.py, test_durable_load.py, test_cli_process_logs.py): a daemon of
the test's own to restart (the own_daemon fixture is in conftest.py), the E2B SDK pointed
at it,
a command's output streamed on a thread, and what the sandbox's agent keeps of it."""
from __future__ import annotations

import base64
import re
import signal
import threading
from pathlib import Path
from urllib.parse import urlparse

from harness import Daemon, start_daemon
from helpers import sandbox_host_pids


def e2b_env(monkeypatch, d: Daemon) -> None:
    monkeypatch.setenv("E2B_API_URL", d.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", d.url)
    monkeypatch.setenv("E2B_API_KEY", d.api_key)
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{urlparse(d.url).port}")


def start_in_band(data_dir: Path, monkeypatch) -> Daemon:
    """A daemon with in-band commands (its flag's variable), no warm pool, the E2B SDK at it."""
    monkeypatch.setenv("ABX_IN_BAND_COMMANDS", "1")
    d = start_daemon(data_dir, extra_args=("--warm-pool", "0"))
    e2b_env(monkeypatch, d)
    return d


def restart(d: Daemon, monkeypatch, how: signal.Signals = signal.SIGKILL) -> Daemon:
    d.proc.send_signal(how)
    d.proc.wait()
    again = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    e2b_env(monkeypatch, again)
    return again


def numbers(text: str, word: str = "line") -> list[int]:
    return [int(n) for n in re.findall(rf"^{word} (\d+)$", text, re.MULTILINE)]


class Collector:
    """Streams a command's stdout on a thread: the sync SDK calls on_stdout inside wait().
    `error` is what ended the stream, if it did not end with the command."""

    def __init__(self, handle):
        self.handle = handle
        self.text = ""
        self.error: Exception | None = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.handle.wait(on_stdout=self._add)
        except Exception as e:  # the stream ends with the daemon, or when the command is killed
            self.error = e

    def _add(self, chunk: str):
        with self.lock:
            self.text += chunk

    def seen(self) -> list[int]:
        with self.lock:
            return numbers(self.text)


def kept_output(d: Daemon, sandbox_id: str, pid: int) -> tuple[dict, bytes, bytes]:
    """The whole of what the sandbox's agent keeps of a command, page by page."""
    out, err, offset, first = b"", b"", 0, None
    with d.api() as api:
        while True:
            page = api.get(f"/abx/v1/sandboxes/{sandbox_id}/processes/{pid}/output",
                           params={"offset": offset, "limit": 100000})
            assert page.status_code == 200, page.text
            body = page.json()
            first = first or body
            for chunk in body["chunks"]:
                data = base64.b64decode(chunk["data"])
                if chunk["stream"] == "stdout":
                    out += data
                else:
                    err += data
            if body["next"] == offset:
                return body | {"start": first["start"]}, out, err
            offset = body["next"]


def running_in(sandbox_id: str, marker: str) -> bool:
    """Whether a process of the sandbox has `marker` in its command line, seen from the host
    (no daemon needed)."""
    for pid in sandbox_host_pids(sandbox_id):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode():
                return True
        except OSError:
            continue
    return False
