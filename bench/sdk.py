"""The SDK's figures (issue 16): the one-shot a Python agent does (create → run
`python3 -c pass` → kill, from one process) against bubblewrap's `python3 -c pass`
interleaved in the same rounds, and create → exec `true` → kill cycles per second from
1 and from 8 concurrent client processes."""
from __future__ import annotations

import multiprocessing
import random
import subprocess
import time

SDK_HEADER = "## The Python SDK: one-shot and cycles per second"


def _p50(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]


def _sdk_one_shot(url: str, key: str) -> float:
    from agent_sandbox.sync import Sandbox
    t = time.perf_counter()
    sandbox = Sandbox.create(template="base", api_url=url, api_key=key)
    sandbox.commands.run("python3 -c pass")
    sandbox.kill()
    return (time.perf_counter() - t) * 1000


def _cycles(args: tuple[str, str, float]) -> int:
    """Cycles one client process completes in `seconds`."""
    url, key, seconds = args
    from agent_sandbox.sync import Sandbox
    done, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        sandbox = Sandbox.create(template="base", api_url=url, api_key=key)
        sandbox.commands.run("true")
        sandbox.kill()
        done += 1
    return done


def cycles_per_second(url: str, key: str, clients: int, seconds: float) -> float:
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        pool.map(_cycles, [(url, key, 1.0)] * clients)  # imports and connections warm
        t = time.monotonic()
        total = sum(pool.map(_cycles, [(url, key, seconds)] * clients))
        return total / (time.monotonic() - t)


def measure(daemon, rounds: int, bwrap: list[str], seconds: float = 10) -> str:
    def timed(cmd: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return (time.perf_counter() - t) * 1000
    cases = {"SDK create + commands.run + kill (one process)":
             lambda: _sdk_one_shot(daemon.url, daemon.api_key),
             "bwrap python3 -c pass": lambda: timed(bwrap)}
    for fn in cases.values():
        fn()  # warm up: the SDK's imports and its connection, bwrap's page cache
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for name in random.sample(list(cases), len(cases)):
            times[name].append(cases[name]())
    sdk, bw = (_p50(v) for v in times.values())
    rates = {n: cycles_per_second(daemon.url, daemon.api_key, n, seconds) for n in (1, 8)}
    rows = "".join(f"| {name} | {_p50(v):.1f} | {max(v):.1f} | {len(v)} |\n"
                   for name, v in times.items())
    rate_rows = "".join(f"| {n} client process{'es' if n > 1 else ''} | {r:.0f} |\n"
                        for n, r in rates.items())
    return f"""{SDK_HEADER}

| what | p50 ms | max ms | n |
|---|---|---|---|
{rows}
- SDK one-shot / bwrap = **{sdk / bw:.2f}×** (target ≤ 1.0×).

| create → exec `true` → kill, for {seconds:.0f} s | cycles per second |
|---|---|
{rate_rows}
- target ≥ 100 per second from 8 clients on 2 cores.
"""
