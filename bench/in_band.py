"""Issue 32's switch: the daemon as a client of the sandbox's agent (in-band commands:
`abx serve --in-band-commands`) beside the fd path it replaces (the agent hands each
command's pipes to the daemon), one build, two daemons, alternating in the same rounds:
create p50, `exec true` p50 (Connect, as the E2B SDKs send it), and a background
`yes | head -c 1G` that no client follows, from its start to its end as the agent reports it
(in band: the daemon follows it out of the agent's ring)."""
from __future__ import annotations

import random
import shutil
import time

import durable
import events
from harness import private_state_dir, start_daemon, stop_daemon

HEADER = "## In-band commands against the fd path"
MODES = {"fd path (default)": {}, "in band (--in-band-commands)": {"ABX_IN_BAND_COMMANDS": "1"}}


def _daemons() -> dict[str, tuple]:
    started = {}
    for name, env in MODES.items():
        state = private_state_dir("abx-bench-in-band-")
        started[name] = (state, start_daemon(state, env=env))
    return started


def measure(rounds: int, mib: int, template: str, pct, table) -> str:
    started = _daemons()
    times: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {name: [] for name in MODES}
    try:
        for name in MODES:
            times[f"create ({name})"] = []
            times[f"exec true ({name})"] = []
        for _ in range(rounds):
            for name in random.sample(list(MODES), len(MODES)):  # neither always goes first
                with started[name][1].api() as api:
                    t = time.perf_counter()
                    sandbox = api.post("/sandboxes", json={"templateID": template}).json()
                    times[f"create ({name})"].append((time.perf_counter() - t) * 1000)
                    times[f"exec true ({name})"].append(events.exec_true_ms(api, sandbox))
                    api.delete(f"/sandboxes/{sandbox['sandboxID']}")
            time.sleep(0.05)  # let both warm pools refill
        pipeline = durable.PIPELINE.format(size=mib << 20)
        sandboxes = {}
        for name in MODES:
            with started[name][1].api() as api:
                sandboxes[name] = api.post("/sandboxes", json={"templateID": template}).json()
        for _ in range(max(3, rounds // 6)):
            for name in random.sample(list(MODES), len(MODES)):
                seconds = durable._through_the_agent(started[name][1],
                                                     sandboxes[name]["sandboxID"], pipeline)
                rates[name].append(mib / 1024 / seconds)
    finally:
        for state, daemon in started.values():
            stop_daemon(daemon)
            shutil.rmtree(state, ignore_errors=True)
    fd, band = list(MODES)
    create = pct(times[f"create ({band})"], 50) / pct(times[f"create ({fd})"], 50)
    exec_true = pct(times[f"exec true ({band})"], 50) / pct(times[f"exec true ({fd})"], 50)
    rate_rows = "".join(f"| {name} | {pct(r, 50):.2f} | {len(r)} |\n" for name, r in rates.items())
    return f"""{HEADER}

One build, two daemons (`ABX_IN_BAND_COMMANDS` unset and `1`), template `{template}`,
alternating each round.

{table(list(times.items()))}
- in band / fd path = **{create:.2f}×** for create, **{exec_true:.2f}×** for `exec true`
  (target ≤ 1.05×).

`{pipeline}` ({mib} MiB) in the background, no client following it, from its start to its end
as the agent reports it:

| daemon | GiB/s (p50) | n |
|---|---|---|
{rate_rows}- target: ≥ 1 GiB/s in band.
"""
