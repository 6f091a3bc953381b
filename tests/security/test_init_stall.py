"""Sandbox root may SIGSTOP the process init has just forked, before it execs. Init waited
for that exec (up to 30 s) serving nothing else, while the daemon's caller held one of the
threads every tenant shares. Now init notices the stopped child and fails that spawn at
once, saying why; the sandbox's other calls and other sandboxes carry on."""
from __future__ import annotations

import base64
import json
import shlex
import struct

import httpx
import pytest
from harness import Daemon
from helpers import envd_headers

pytestmark = pytest.mark.needs_template

# Stops every new process that still carries init's name: a child between fork and exec.
STOPPER = r"""
import os, signal
me, comm, seen = os.getpid(), open("/proc/1/comm").read(), set()
while True:
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me) or int(name) in seen:
            continue
        try:
            if open(f"/proc/{name}/comm").read() == comm:
                os.kill(int(name), signal.SIGSTOP)
                seen.add(int(name))
        except OSError:
            pass
"""
# Thousands of PATH entries to try before /usr/bin: the child stays init's (unexec'd) for
# milliseconds, long enough for the stopper's scan of /proc to find it.
LONG_PATH = ":".join(f"/nonexistent/{i}" for i in range(6000)) + ":/usr/bin:/bin"


def start(daemon: Daemon, sandbox: dict, cmd: str, args: list[str],
          env: dict[str, str] | None = None) -> str:
    """process.Process/Start as root; the whole answer as text."""
    msg = json.dumps({"process": {"cmd": cmd, "args": args, "envs": env or {}}}).encode()
    headers = {**envd_headers(sandbox), "Content-Type": "application/connect+json",
               "Authorization": "Basic " + base64.b64encode(b"root:").decode()}
    r = httpx.post(daemon.url + "/process.Process/Start", headers=headers, timeout=60,
                   content=struct.pack(">BI", 0, len(msg)) + msg)
    return f"{r.status_code} {r.text}"


def test_a_child_stopped_before_its_exec_fails_its_spawn_at_once(daemon: Daemon):
    with daemon.api() as api:
        hostile = api.post("/sandboxes", json={"templateID": "base"}).json()
        other = api.post("/sandboxes", json={"templateID": "base"}).json()
        try:
            launched = start(daemon, hostile, "/bin/bash",
                             ["-c", f"python3 -c {shlex.quote(STOPPER)} >/dev/null 2>&1 &"])
            assert launched.startswith("200"), launched
            # A bare program name: init itself searches the long PATH, in the child.
            answers = []
            for _ in range(20):
                answers.append(start(daemon, hostile, "true", [], {"PATH": LONG_PATH}))
                if "stopped before it could start" in answers[-1]:
                    break
            assert "stopped before it could start" in answers[-1], answers
            # Other sandboxes, and the daemon, carry on.
            ran = start(daemon, other, "/bin/bash", ["-c", "echo fine"])
            assert base64.b64encode(b"fine\n").decode() in ran, ran
            assert api.get("/health").status_code == 204
            assert daemon.proc.poll() is None
        finally:
            for sb in (hostile, other):
                api.delete(f"/sandboxes/{sb['sandboxID']}")
