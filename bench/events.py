"""Issue 37's cost on the hot path: the flight recorder appends a line to the sandbox's
record for each command's start and end (the end with its output's first and last 4 KiB),
so exec and command output are measured on two daemons side by side in the same rounds,
one recording (as shipped) and one with `events.enabled: false` in its config.json."""
from __future__ import annotations

import datetime
import json
import random
import shutil
import struct
import subprocess
import time
from pathlib import Path

import httpx
from harness import private_state_dir, start_daemon, stop_daemon

HEADER = "## The flight recorder's cost"
TEMPLATE = "host"  # no build needed; the recorder's work is the same for any template


def _daemon(abx: str, recording: bool):
    state = private_state_dir("abx-bench-events-")
    (state / "config.json").write_text(json.dumps({
        "network": {"enabled": False}, "events": {"enabled": recording}}))
    return state, start_daemon(state, extra_args=("--config", str(state / "config.json")),
                               shared_templates=False, binary=Path(abx))


def exec_true_ms(client: httpx.Client, sandbox: dict) -> float:
    """`true` through process.Process/Start (Connect, as the E2B SDKs send it), to its end."""
    msg = json.dumps({"process": {"cmd": "true"}}).encode()
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983",
               "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
    if sandbox.get("envdAccessToken"):
        headers["X-Access-Token"] = sandbox["envdAccessToken"]
    t = time.perf_counter()
    r = client.post("/process.Process/Start", content=struct.pack(">BI", 0, len(msg)) + msg,
                    headers=headers)
    r.raise_for_status()
    return (time.perf_counter() - t) * 1000


def _output_mib_s(abx: str, daemon, sandbox_id: str, mib: int) -> float:
    """`yes | head -c MIB` read by `abx exec`: MiB/s."""
    t = time.perf_counter()
    subprocess.run([abx, "exec", sandbox_id, "--", "sh", "-c", f"yes | head -c {mib << 20}"],
                   check=True, stdout=subprocess.DEVNULL, env=daemon.env())
    return mib / (time.perf_counter() - t)


def measure(abx: str, rounds: int, mib: int, pct) -> str:
    started = {name: _daemon(abx, name == "recording") for name in ("recording", "not recording")}
    execs: dict[str, list[float]] = {name: [] for name in started}
    output: dict[str, list[float]] = {name: [] for name in started}
    clients = {}
    try:
        sandboxes = {}
        for name, (_, daemon) in started.items():
            clients[name] = httpx.Client(base_url=daemon.url, timeout=120,
                                         headers={"X-API-KEY": daemon.api_key})
            r = clients[name].post("/sandboxes", json={"templateID": TEMPLATE, "secure": False})
            r.raise_for_status()
            sandboxes[name] = r.json()
        for name in started:  # warm up
            exec_true_ms(clients[name], sandboxes[name])
            _output_mib_s(abx, started[name][1], sandboxes[name]["sandboxID"], mib)
        # Alternated one exec and one output run at a time: a busy host slows both alike.
        for _ in range(rounds):
            for _ in range(10):
                for name in random.sample(list(started), len(started)):
                    execs[name].append(exec_true_ms(clients[name], sandboxes[name]))
            for name in random.sample(list(started), len(started)):
                output[name].append(_output_mib_s(abx, started[name][1],
                                                  sandboxes[name]["sandboxID"], mib))
        recorded = clients["recording"].get(
            f"/abx/v1/sandboxes/{sandboxes['recording']['sandboxID']}/events").text.count("\n")
    finally:
        for client in clients.values():
            client.close()
        for state, daemon in started.values():
            stop_daemon(daemon)
            shutil.rmtree(state, ignore_errors=True)
    exec_ratio = pct(execs["recording"], 50) / pct(execs["not recording"], 50)
    output_ratio = pct(output["recording"], 50) / pct(output["not recording"], 50)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = "".join(
        f"| {name} | {pct(execs[name], 50):.2f} | {pct(execs[name], 99):.2f} | {len(execs[name])} "
        f"| {pct(output[name], 50):.0f} | {len(output[name])} |\n" for name in started)
    return f"""{HEADER} (recording vs `events.enabled: false`, same rounds)

| daemon | exec `true` p50 ms | p99 ms | n | `yes \\| head -c {mib}M` via `abx exec`, MiB/s p50 | n |
|---|---|---|---|---|---|
{rows}
- exec p50 recording / not recording = **{exec_ratio:.3f}×**; output throughput recording / not
  recording = **{output_ratio:.3f}×** (two lines appended per command, its start and its end with
  the output's first and last 4 KiB; {recorded} events recorded in the recording sandbox).
- measured {now} at {commit} (`bench/run.py --only-events --rounds {rounds} --events-mib {mib}`),
  template `{TEMPLATE}`, loopback-only sandboxes.
"""
