"""`process`: run a command with its output streamed as NDJSON, list and kill processes."""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..api import Call, Stream, row
from ..errors import HttpError, bad_input
from .file_ops import checked_path

CMD = {"type": ["string", "array"], "items": {"type": "string"},
       "description": "a shell command line (run by /bin/sh -c) or an argv list"}


def _argv(cmd: str | list[str]) -> list[str]:
    if isinstance(cmd, str):
        if not cmd.strip():
            raise bad_input("cmd", "empty command")
        return ["/bin/sh", "-c", cmd]
    if not cmd or not cmd[0]:
        raise bad_input("cmd", "empty argv")
    return list(cmd)


def _started(call: Call) -> dict[int, dict[str, Any]]:
    """Processes this server started, by pid: {"popen", "cmd", "started"}."""
    with call.app.state_lock:
        table: dict[int, dict[str, Any]] = call.app.state.setdefault("process", {})
        return table


def _spawn(call: Call, stdin: bool, capture: bool = True) -> subprocess.Popen[bytes]:
    args = call.args
    env = None
    if args["env"]:
        if not all(isinstance(value, str) for value in args["env"].values()):
            raise bad_input("env", "values must be strings")
        env = {**os.environ, **args["env"]}
    cwd = checked_path(args["cwd"], "cwd") if args["cwd"] else None
    if cwd is not None and not os.path.isdir(cwd):
        raise bad_input("cwd", f"{cwd} is not a directory")
    argv = _argv(args["cmd"])
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError:
        raise bad_input("cmd", f"no such program {argv[0]!r}") from None
    except PermissionError:
        raise bad_input("cmd", f"{argv[0]!r} is not executable") from None
    _started(call)[process.pid] = {"popen": process, "cmd": args["cmd"], "started": time.time()}
    return process


def run(call: Call) -> Stream:
    timeout: float = call.args["timeout"]
    if timeout < 0:
        raise bad_input("timeout", "must be >= 0 (0: no limit)")
    stdin: str | None = call.args["stdin"]
    process = _spawn(call, stdin is not None)
    if process.stdin is not None:
        try:
            process.stdin.write((stdin or "").encode())
            process.stdin.close()
        except BrokenPipeError:
            pass
    return Stream(_output(process, timeout))


def _output(process: subprocess.Popen[bytes], timeout: float) -> Iterator[dict[str, Any]]:
    """start, then stdout/stderr chunks as they come, then exit (or timeout then exit)."""
    yield {"type": "start", "pid": process.pid}
    selector = selectors.DefaultSelector()
    decoders = {}
    for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
        assert pipe is not None
        selector.register(pipe, selectors.EVENT_READ, name)
        decoders[name] = codecs.getincrementaldecoder("utf-8")(errors="replace")
    deadline = time.monotonic() + timeout if timeout else None
    timed_out = False
    try:
        while selector.get_map():
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = selector.select(wait)
            if not events and deadline is not None and time.monotonic() >= deadline:
                timed_out = True
                _kill_group(process.pid, signal.SIGKILL)
                break
            for key, _ in events:
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                text = decoders[key.data].decode(data)
                if text:
                    yield {"type": key.data, "data": text}
        exit_code = process.wait()
        if timed_out:
            yield {"type": "timeout", "seconds": timeout}
        yield {"type": "exit", "exit_code": exit_code}
    finally:  # the client went away (or we are done): leave nothing running
        selector.close()
        if process.poll() is None:
            _kill_group(process.pid, signal.SIGKILL)
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def start_background(call: Call) -> dict[str, Any]:
    process = _spawn(call, False, capture=False)  # nobody would read its pipes
    threading.Thread(target=_reap, args=(_started(call), process), daemon=True).start()
    return {"pid": process.pid}


def _reap(table: dict[int, dict[str, Any]], process: subprocess.Popen[bytes]) -> None:
    """Waits for a background process so that it leaves no zombie."""
    process.wait()
    table.pop(process.pid, None)


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def list_processes(call: Call) -> dict[str, Any]:
    ours = _started(call)
    for pid, record in list(ours.items()):
        if record["popen"].poll() is not None:
            del ours[pid]
    processes: list[dict[str, Any]] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                argv = [part.decode(errors="replace") for part in file.read().split(b"\0") if part]
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        processes.append({"pid": pid, "ppid": int(fields[1]), "state": fields[0],
                          "cmdline": argv, "started_by_server": pid in ours})
    processes.sort(key=lambda entry: entry["pid"])
    return {"processes": processes}


_SIGNALS = ["TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT"]


def kill(call: Call) -> dict[str, Any]:
    pid: int = call.args["pid"]
    if pid <= 1 or pid == os.getpid():
        raise bad_input("pid", f"refusing to signal pid {pid} (init or this server)")
    sig = getattr(signal, "SIG" + call.args["signal"])
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        raise HttpError(404, f"no process {pid}", field="pid") from None
    except PermissionError:
        raise HttpError(403, f"not allowed to signal process {pid}", field="pid") from None
    record = _started(call).get(pid)
    if record is not None and sig in (signal.SIGKILL, signal.SIGTERM):
        _kill_group(pid, sig)
    return {"pid": pid, "signal": call.args["signal"]}


_SPAWN: dict[str, Any] = {"cmd": CMD, "cwd": {"type": ["string", "null"], "default": None},
          "env": {"type": "object", "default": {}}}
ROWS = [
    row("POST", "/process/run", "process", run,
        "Runs a command; NDJSON lines: start {pid}, stdout/stderr {data}, [timeout], exit "
        "{exit_code}", {**_SPAWN, "stdin": {"type": ["string", "null"], "default": None},
                        "timeout": {"type": "number", "default": 600}}, ("cmd",)),
    row("POST", "/process/start", "process", start_background,
        "Starts a command in the background (output discarded); answers its pid",
        _SPAWN, ("cmd",)),
    row("GET", "/process/list", "process", list_processes,
        "The sandbox's processes (pid, ppid, state, argv, whether this server started it)"),
    row("POST", "/process/kill", "process", kill, "Sends a signal (default TERM) to a process",
        {"pid": {"type": "integer"}, "signal": {"enum": _SIGNALS, "default": "TERM"}}, ("pid",)),
]
