"""Issue 36's "where the time goes": a one-shot (create → exec `python3 -c pass` → kill)
split into its phases, for the `abx` CLI and the Python SDK, beside bubblewrap's
`python3 -c pass` and plain `python3 -c pass`, every case interleaved in the same rounds.

The CLI's phases come from commands that do one thing each: process start is
`abx --version` (no request), connect is `abx version` (one GET on a new connection)
less that, and each of create, exec and kill is its command less the two. The SDK's come
from inside one process (the shared client stays connected, so a warm one-shot has no
connect), and from a fresh interpreter that runs one one-shot and stamps its phases
(its start, the import, the first create with the connection, exec, kill)."""
from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HEADER = "## Where the time goes: a one-shot's phases"
PY = "/usr/bin/python3"
SDK_DIR = Path(__file__).resolve().parent.parent / "sdk" / "python"

# A fresh SDK process's one-shot, stamping each phase (ms since its own start).
FRESH_SDK = """
import json, sys, time
t0 = time.perf_counter()
from agent_sandbox.sync import Sandbox
t1 = time.perf_counter()
sb = Sandbox.create(template=sys.argv[1], api_url=sys.argv[2], api_key=sys.argv[3])
t2 = time.perf_counter()
sb.commands.run("python3 -c pass")
t3 = time.perf_counter()
sb.kill()
t4 = time.perf_counter()
print(json.dumps([(b - a) * 1000 for a, b in [(t0, t1), (t1, t2), (t2, t3), (t3, t4)]]))
"""


def _ms(cmd: list[str], env=None, out=subprocess.DEVNULL) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, check=True, stdout=out, stderr=subprocess.DEVNULL, env=env,
                          text=True)
    return (time.perf_counter() - t) * 1000, done.stdout or ""


def loader_figures(binary: str) -> str:
    """What the dynamic loader does for `binary --version`: shared libraries and relocations."""
    libs = subprocess.run(["ldd", binary], check=False, capture_output=True, text=True).stdout
    stats = subprocess.run([binary, "--version"], check=False, capture_output=True, text=True,
                           env={"LD_DEBUG": "statistics"}).stderr
    relocs = [line.split(":")[-1].strip() for line in stats.splitlines()
              if "final number of relocations:" in line]
    names = [line.split()[0] for line in libs.splitlines() if "=>" in line]
    return (f"{len(names)} shared libraries ({', '.join(names)}), "
            f"{relocs[0] if relocs else '?'} symbol relocations at start")


def _p50(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]


class _Rounds:
    """Named cases, each a function returning {phase: ms}, run in a random order per round."""

    def __init__(self) -> None:
        self.cases: dict[str, object] = {}
        self.times: dict[str, dict[str, list[float]]] = {}

    def add(self, name: str, fn) -> None:
        self.cases[name] = fn
        self.times[name] = {}

    def run(self, rounds: int) -> None:
        for fn in self.cases.values():
            fn()  # warm up: page cache, the SDK's imports and connection
        for _ in range(rounds):
            for name in random.sample(list(self.cases), len(self.cases)):
                for phase, ms in self.cases[name]().items():
                    self.times[name].setdefault(phase, []).append(ms)

    def p50(self, name: str, phase: str) -> float:
        return _p50(self.times[name][phase])


def measure(abx: str, daemon, rounds: int, bwrap: list[str], template: str = "host") -> str:
    sys.path.insert(0, str(SDK_DIR))
    from agent_sandbox.sync import Sandbox

    env = daemon.env()
    fresh_env = {**env, "PYTHONPATH": str(SDK_DIR)}
    r = _Rounds()
    def version_only() -> dict[str, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = _ms([abx, "--version"], env)[0]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        return {"total": wall, "cpu": cpu}
    r.add("abx --version", version_only)
    r.add("abx version", lambda: {"total": _ms([abx, "version"], env)[0]})

    def cli_flow() -> dict[str, float]:
        create, sid = _ms([abx, "create", "--template", template], env, subprocess.PIPE)
        exec_, _ = _ms([abx, "exec", sid.strip(), "--", PY, "-c", "pass"], env)
        kill, _ = _ms([abx, "kill", sid.strip(), "--yes"], env)
        return {"create": create, "exec": exec_, "kill": kill, "total": create + exec_ + kill}
    r.add("abx create, exec, kill", cli_flow)
    r.add("abx run --rm", lambda: {"total": _ms([abx, "run", "--rm", template, "--", PY, "-c",
                                                 "pass"], env)[0]})

    def sdk_warm() -> dict[str, float]:
        t0 = time.perf_counter()
        sb = Sandbox.create(template=template, api_url=daemon.url, api_key=daemon.api_key)
        t1 = time.perf_counter()
        sb.commands.run("python3 -c pass")
        t2 = time.perf_counter()
        sb.kill()
        t3 = time.perf_counter()
        return {"create": (t1 - t0) * 1000, "exec": (t2 - t1) * 1000, "kill": (t3 - t2) * 1000,
                "total": (t3 - t0) * 1000}
    r.add("SDK, in one process", sdk_warm)

    def sdk_fresh() -> dict[str, float]:
        total, out = _ms([sys.executable, "-c", FRESH_SDK, template, daemon.url, daemon.api_key], fresh_env,
                         subprocess.PIPE)
        imp, create, exec_, kill = json.loads(out)
        return {"start": total - imp - create - exec_ - kill, "import": imp, "create": create,
                "exec": exec_, "kill": kill, "total": total}
    r.add("SDK, a fresh process", sdk_fresh)

    r.add("bwrap python3 -c pass", lambda: {"total": _ms(bwrap + [PY, "-c", "pass"])[0]})
    r.add("python3 -c pass", lambda: {"total": _ms([PY, "-c", "pass"])[0]})
    r.run(rounds)
    return _section(r, rounds, template) + f"- `abx` loads {loader_figures(abx)}.\n"


def _section(r: _Rounds, rounds: int, template: str) -> str:
    start = r.p50("abx --version", "total")
    connect = max(0.0, r.p50("abx version", "total") - start)
    bw = r.p50("bwrap python3 -c pass", "total")
    py = r.p50("python3 -c pass", "total")
    flow, run_rm = r.p50("abx create, exec, kill", "total"), r.p50("abx run --rm", "total")
    warm, fresh = r.p50("SDK, in one process", "total"), r.p50("SDK, a fresh process", "total")

    def cli(phase: str) -> str:
        return f"{max(0.0, r.p50('abx create, exec, kill', phase) - start - connect):.1f}"

    def sdk(name: str, phase: str) -> str:
        return f"{r.p50(name, phase):.1f}"
    rows = [
        ("process start", f"{start:.1f} ×3", "—",
         f"{sdk('SDK, a fresh process', 'start')} + import {sdk('SDK, a fresh process', 'import')}"),
        ("connect (+ one GET)", f"{connect:.1f} ×3", "0 (kept alive)", "in create"),
        ("create", cli("create"), sdk("SDK, in one process", "create"),
         sdk("SDK, a fresh process", "create")),
        ("exec `python3 -c pass`", cli("exec"), sdk("SDK, in one process", "exec"),
         sdk("SDK, a fresh process", "exec")),
        ("kill", cli("kill"), sdk("SDK, in one process", "kill"),
         sdk("SDK, a fresh process", "kill")),
        ("**total** (p50 of the whole)", f"**{flow:.1f}**", f"**{warm:.1f}**", f"**{fresh:.1f}**"),
        ("/ bwrap", f"**{flow / bw:.2f}×**", f"**{warm / bw:.2f}×**", f"{fresh / bw:.2f}×"),
    ]
    table = "".join(f"| {' | '.join(row)} |\n" for row in rows)
    return f"""{HEADER}

One-shot `python3 -c pass` in a `{template}` sandbox, p50 ms of {rounds} rounds, every case
interleaved with the others (`bench/run.py --only-phases`). The CLI's phases are differences
of p50s: process start is `abx --version`, connect is `abx version` (a new connection and one
GET) less that, and create, exec and kill are their commands less both, which every one of the
three CLI processes pays. The SDK's are stamped inside the process: warm (the shared client
already connected, as in an agent that makes many sandboxes) and a fresh `python3` that runs
one one-shot (its start, `import agent_sandbox.sync`, then the first create opens the
connection).

| phase | CLI: `abx create`, `exec`, `kill` | SDK, in one process | SDK, a fresh process |
|---|---|---|---|
{table}
| the same run's peers | p50 ms |
|---|---|
| `bwrap … python3 -c pass` | {bw:.1f} |
| `python3 -c pass` | {py:.1f} |
| `abx run --rm {template} -- python3 -c pass` | {run_rm:.1f} (**{run_rm / bw:.2f}×** bwrap) |

- `abx --version`: {start:.1f} ms from the bench's Python (fork, exec, wait), of which
  {r.p50("abx --version", "cpu"):.2f} ms CPU time (user + system, the process's own).
- load average while measuring: {" ".join(f"{x:.1f}" for x in os.getloadavg())} (other work on
  this shared machine: compare ratios, not absolute numbers).
- targets: SDK one-shot ≤ 1.0× bwrap, `abx run --rm` ≤ 1.2×, the three-command flow ≤ 2.0×,
  `abx --version` ≤ 2 ms.
"""
