"""Issue 32's figures: a command's output through the sandbox beside the same pipeline on
the host and under bwrap, in the same rounds: `yes | head -c 1G` read by `abx exec` (the
sandbox's agent, the daemon's Connect stream, the CLI), and the same run in the background
with no client following it (the agent's relay into the daemon, which drains it: timed from
the start to its end as the agent reports it); and the daemon's own threads and RSS, idle and
after create/exec/kill cycles (the malloc arena cap)."""
from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

HEADER = "## Command output and the daemon's footprint"
PIPELINE = "yes | head -c {size}"


def _seconds(cmd: list[str], env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def _footprint(pid: int) -> tuple[int, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(status.split("VmRSS:")[1].split()[0])
    return len(list(Path(f"/proc/{pid}/task").iterdir())), rss_kib / 1024


def _through_the_agent(daemon, sid: str, pipeline: str) -> float:
    """A background command no client follows, from its start to its end as its agent
    reports it (GET .../processes/{pid}/output, polled every 5 ms)."""
    import e2b  # the E2B SDK starts it: the CLI has no background commands
    os.environ.update(E2B_API_URL=daemon.url, E2B_SANDBOX_URL=daemon.url,
                      E2B_API_KEY=daemon.api_key,
                      E2B_DOMAIN="localhost:" + daemon.url.rsplit(":", 1)[1])
    sb = e2b.Sandbox.connect(sid)
    t = time.perf_counter()
    handle = sb.commands.run(pipeline, background=True)
    handle.disconnect()
    with daemon.api() as api:
        while not api.get(f"/abx/v1/sandboxes/{sid}/processes/{handle.pid}/output",
                          params={"limit": 1}).json().get("ended"):
            time.sleep(0.005)
    return time.perf_counter() - t


def measure(abx: str, daemon, rounds: int, mib: int, cycles: int, bwrap: list[str],
            pct, template: str = "base") -> str:
    env = daemon.env()
    idle_threads, idle_rss = _footprint(daemon.proc.pid)
    sid = subprocess.run([abx, "create", "--template", template], check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    pipeline = PIPELINE.format(size=mib * 1024 * 1024)
    cases = {
        "abx exec (the agent, the daemon's stream, the CLI)":
            lambda: _seconds([abx, "exec", sid, "--", "sh", "-c", pipeline], env),
        "background, no client (the agent's relay into the daemon)":
            lambda: _through_the_agent(daemon, sid, pipeline),
        "bwrap": lambda: _seconds(bwrap + ["sh", "-c", pipeline]),
        "plain pipe on the host": lambda: _seconds(["sh", "-c", pipeline]),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    try:
        for fn in cases.values():
            fn()  # warm up
        for _ in range(rounds):
            for name in random.sample(list(cases), len(cases)):
                times[name].append(cases[name]())
    finally:
        subprocess.run([abx, "kill", sid, "--yes"], check=False, env=env,
                       stdout=subprocess.DEVNULL)
    for _ in range(cycles):
        made = subprocess.run([abx, "create", "--template", template], check=True, env=env,
                              capture_output=True, text=True).stdout.strip()
        subprocess.run([abx, "exec", made, "--", "true"], check=True, env=env)
        subprocess.run([abx, "kill", made, "--yes"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    busy_threads, busy_rss = _footprint(daemon.proc.pid)
    gib_s = {name: mib / 1024 / pct(values, 50) for name, values in times.items()}
    plain = gib_s["plain pipe on the host"]
    through = gib_s["background, no client (the agent's relay into the daemon)"]
    client = gib_s[next(iter(cases))]
    rows = "".join(f"| {name} | {rate:.2f} | {pct(times[name], 50) * 1000:.0f} |\n"
                   for name, rate in gib_s.items())
    return f"""{HEADER}

`{pipeline}` ({mib} MiB), p50 of {rounds} interleaved rounds, output to /dev/null:

| what | GiB/s (p50) | p50 ms |
|---|---|---|
{rows}- through the agent / plain pipe = **{through / plain:.2f}×** (target: ≥ 1 GiB/s through the
  agent); to a client through `abx exec`: {client:.2f} GiB/s (base64 in Connect-JSON both ways).

The daemon itself: {idle_threads} threads and {idle_rss:.1f} MiB RSS idle; {busy_threads} threads and
{busy_rss:.1f} MiB after {cycles} create → exec → kill cycles (glibc capped at 4 malloc arenas).
"""
