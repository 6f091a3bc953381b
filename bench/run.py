#!/usr/bin/env python3
"""`make bench`: Agent Sandbox against its peers, measured side by side in one run.

Every figure that matters is a ratio against a peer run interleaved in the same
rounds (bubblewrap with comparable namespaces, plain processes), so a noisy
host moves both sides alike. Results go to bench/RESULTS.md with the command.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from harness import private_state_dir, start_daemon, stop_daemon  # noqa: E402

import dashboard  # noqa: E402  (bench/dashboard.py: the dashboard's page load and size)
import durable  # noqa: E402  (bench/durable.py: command output through init, daemon footprint)
import events  # noqa: E402  (bench/events.py: the flight recorder's cost on exec and output)
import in_band  # noqa: E402  (bench/in_band.py: in-band commands against the fd path)
import net  # noqa: E402  (bench/net.py: the networking figures, in tests/net's test world)
import phases  # noqa: E402  (bench/phases.py: where a one-shot's time goes, CLI and SDK)
import sdk  # noqa: E402  (bench/sdk.py: the Python SDK's one-shot and cycles per second)
import snapshots  # noqa: E402  (bench/snapshots.py: pause, snapshots and fork)

BWRAP = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
         "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--ro-bind",
         "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all",
         "--die-with-parent", "--new-session", "--clearenv"]
PY = "/usr/bin/python3"
# The figures outside the networking section are loopback-only ones (as before sandboxes had
# networks), and a bench daemon never touches the host's own network.
LOOPBACK_ONLY = {"network": {"enabled": False}}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def timed(cmd: list[str], env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - t) * 1000


def connect_start(client: httpx.Client, sandbox_id: str, cmd: str) -> None:
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    r = client.post("/process.Process/Start", content=struct.pack(">BI", 0, len(msg)) + msg,
                    headers={"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983",
                             "Content-Type": "application/connect+json"})
    r.raise_for_status()


def one_shot(abx: str, daemon, rounds: int) -> dict[str, list[float]]:
    env = daemon.env()
    def abx_oneshot() -> float:
        t = time.perf_counter()
        sid = subprocess.run([abx, "create", "--template", "base"], check=True, env=env,
                             capture_output=True, text=True).stdout.strip()
        subprocess.run([abx, "exec", sid, "--", PY, "-c", "pass"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        subprocess.run([abx, "kill", sid, "--yes"], check=True, env=env, stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t) * 1000
    def abx_run() -> float:
        return timed([abx, "run", "base", "--", PY, "-c", "pass"], env=env)
    cases = {"abx create+exec+kill": abx_oneshot,
             "abx run": abx_run,
             "bwrap": lambda: timed(BWRAP + [PY, "-c", "pass"]),
             "plain python3": lambda: timed([PY, "-c", "pass"])}
    for fn in cases.values():
        fn()  # warm up
    out: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for name in random.sample(list(cases), len(cases)):
            out[name].append(cases[name]())
    return out


def daemon_side(daemon, rounds: int) -> dict[str, list[float]]:
    """create and kill one sandbox at a time; exec of `true` in one running sandbox."""
    create, exec_true, kill = [], [], []
    with daemon.api() as api:
        for _ in range(rounds):
            t = time.perf_counter()
            sid = api.post("/sandboxes", json={"templateID": "base", "secure": False}).json()["sandboxID"]
            create.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            api.delete(f"/sandboxes/{sid}")
            kill.append((time.perf_counter() - t) * 1000)
            time.sleep(0.05)  # let the warm pool refill, as between real requests
        sid = api.post("/sandboxes", json={"templateID": "base", "secure": False}).json()["sandboxID"]
        time.sleep(0.5)
        with httpx.Client(base_url=daemon.url, headers={"X-API-KEY": daemon.api_key},
                          timeout=60) as client:
            for _ in range(rounds):
                t = time.perf_counter()
                connect_start(client, sid, "true")
                exec_true.append((time.perf_counter() - t) * 1000)
        api.delete(f"/sandboxes/{sid}")
    return {"create": create, "exec true (bash -c true)": exec_true, "kill": kill}


def create_against_baseline(daemon, baseline, rounds: int,
                            template: str = "base") -> dict[str, list[float]]:
    """create p50 and `exec true` p50 of this build and of an older one (--baseline-abx),
    alternating each round, so a change on the create or exec path (auth, quotas, the
    sandbox's agent) is measured against the code before it."""
    sides = {"this build": daemon.api(), "baseline build": baseline.api()}
    times: dict[str, list[float]] = {}
    for label in sides:
        times[f"create ({label})"] = []
        times[f"exec true ({label})"] = []
    try:
        for _ in range(rounds):
            for label in random.sample(list(sides), len(sides)):  # neither always goes first
                api = sides[label]
                t = time.perf_counter()
                sandbox = api.post("/sandboxes", json={"templateID": template}).json()
                times[f"create ({label})"].append((time.perf_counter() - t) * 1000)
                times[f"exec true ({label})"].append(events.exec_true_ms(api, sandbox))
                api.delete(f"/sandboxes/{sandbox['sandboxID']}")
            time.sleep(0.05)  # let both warm pools refill
    finally:
        for api in sides.values():
            api.close()
    return times


def multipart_body(data: bytes) -> tuple[bytes, str]:
    """A POST /files body with one part named `file`, built once so that the timing is the
    daemon's, not the client's encoding."""
    boundary = "abx-bench-" + os.urandom(8).hex()
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"bench.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
    return (head.encode() + data + f"\r\n--{boundary}--\r\n".encode(),
            f"multipart/form-data; boundary={boundary}")


def file_throughput(daemons: dict[str, object], rounds: int, mib: int,
                    template: str) -> dict[str, list[float]]:
    """MiB/s of an upload (POST /files, multipart) and a download (GET /files) of `mib` MiB
    of random bytes through each daemon's files API, one sandbox per daemon, the daemons
    alternating in the same rounds (in a random order each round)."""
    data = os.urandom(mib << 20)
    body, content_type = multipart_body(data)
    path = {"path": "/tmp/bench.bin"}
    clients, sandboxes = {}, {}
    out: dict[str, list[float]] = {}
    try:
        for label, d in daemons.items():
            with d.api() as api:
                r = api.post("/sandboxes", json={"templateID": template, "timeout": 3600})
                r.raise_for_status()
            sandboxes[label] = (d, r.json()["sandboxID"])
            clients[label] = httpx.Client(
                base_url=d.url, timeout=300,
                headers={"E2b-Sandbox-Id": sandboxes[label][1], "E2b-Sandbox-Port": "49983",
                         "X-API-KEY": d.api_key})
            out[f"upload {mib} MiB ({label})"] = []
            out[f"download {mib} MiB ({label})"] = []
        for round_ in range(rounds + 1):  # the first round warms up and is not counted
            for label in random.sample(list(clients), len(clients)):
                client = clients[label]
                t = time.perf_counter()
                client.post("/files", params=path, content=body,
                            headers={"Content-Type": content_type}).raise_for_status()
                up = time.perf_counter() - t
                t = time.perf_counter()
                got = 0
                with client.stream("GET", "/files", params=path) as r:
                    r.raise_for_status()
                    for chunk in r.iter_raw():
                        got += len(chunk)
                down = time.perf_counter() - t
                if got != len(data):
                    raise RuntimeError(f"{label}: downloaded {got} bytes of {len(data)}")
                if round_ > 0:
                    out[f"upload {mib} MiB ({label})"].append(mib / up)
                    out[f"download {mib} MiB ({label})"].append(mib / down)
    finally:
        for client in clients.values():
            client.close()
        for d, sid in sandboxes.values():
            with d.api() as api:
                api.delete(f"/sandboxes/{sid}")
    return out


def throughput_table(rows: dict[str, list[float]]) -> str:
    head = "| what | p50 MiB/s | min MiB/s | n |\n|---|---|---|---|\n"
    return head + "".join(f"| {n} | {pct(v, 50):.0f} | {min(v):.0f} | {len(v)} |\n"
                          for n, v in rows.items())


def throughput_ratios(rows: dict[str, list[float]], mib: int) -> str:
    lines = []
    for direction in ("upload", "download"):
        ours = pct(rows[f"{direction} {mib} MiB (this build)"], 50)
        theirs = pct(rows[f"{direction} {mib} MiB (baseline build)"], 50)
        lines.append(f"- {direction}: this build / baseline = **{ours / theirs:.2f}×** "
                     "(target ≥ 0.8×: within 20 % of the baseline's MiB/s).\n")
    return "".join(lines)


THROUGHPUT_HEADER = "## Files API throughput"
BASELINE_HEADER = "## Against a baseline build"


def throughput_alone(args, daemon) -> str:
    """This build's files API throughput, when no baseline is given."""
    rows = file_throughput({"this build": daemon}, args.file_rounds, args.file_mib,
                           args.baseline_template)
    return f"""{THROUGHPUT_HEADER}

From template `{args.baseline_template}`, {args.file_mib} MiB of random bytes each way
(`--baseline-abx` measures an older build alongside).

{throughput_table(rows)}"""


def against_baseline(args, daemon) -> str:
    """The RESULTS.md section comparing create p50 and files API throughput with
    --baseline-abx ('' without it)."""
    if not args.baseline_abx:
        return ""
    state = private_state_dir("abx-bench-baseline-")
    baseline = start_daemon(state, binary=Path(args.baseline_abx))
    try:
        times = create_against_baseline(daemon, baseline, args.rounds * 3, args.baseline_template)
        rates = file_throughput({"this build": daemon, "baseline build": baseline},
                                args.file_rounds, args.file_mib, args.baseline_template)
    finally:
        stop_daemon(baseline)
        shutil.rmtree(state, ignore_errors=True)
    ratio = pct(times["create (this build)"], 50) / pct(times["create (baseline build)"], 50)
    exec_ratio = (pct(times["exec true (this build)"], 50)
                  / pct(times["exec true (baseline build)"], 50))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""{BASELINE_HEADER}

Measured {now} from template `{args.baseline_template}`, alternating each round with
`{args.baseline_abx}`.

{table(list(times.items()))}
- this build / baseline = **{ratio:.2f}×** for create, **{exec_ratio:.2f}×** for `exec true`
  (target ≤ 1.05×: both p50 unchanged).

Files API: {args.file_mib} MiB of random bytes uploaded (POST /files, multipart) and
downloaded (GET /files) through each daemon, alternating in the same rounds.

{throughput_table(rates)}
{throughput_ratios(rates, args.file_mib)}"""


def record_baseline_only(args) -> None:
    """--only-baseline: measure the comparison and put its section into the existing results."""
    state = private_state_dir("abx-bench-")
    daemon = start_daemon(state, binary=Path(args.abx))
    try:
        section = against_baseline(args, daemon)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    # In place of the comparison (or of the throughput a run without a baseline wrote
    # there); the sections after it stay.
    old = BASELINE_HEADER if BASELINE_HEADER in text else THROUGHPUT_HEADER
    out.write_text(splice(text, old, section))
    print(section)


def interpreter(daemon, rounds: int) -> dict[str, list[float]]:
    cold, warm = [], []
    headers = lambda sid: {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
                           "X-API-KEY": daemon.api_key}
    with daemon.api() as api:
        for _ in range(max(3, rounds // 5)):
            sid = api.post("/sandboxes", json={"templateID": "base", "secure": False}).json()["sandboxID"]
            t = time.perf_counter()
            httpx.post(daemon.url + "/execute", json={"code": "1+1"}, headers=headers(sid), timeout=60).raise_for_status()
            cold.append((time.perf_counter() - t) * 1000)
            with httpx.Client(base_url=daemon.url, headers=headers(sid), timeout=60) as c:
                for _ in range(rounds):
                    t = time.perf_counter()
                    c.post("/execute", json={"code": "1+1"}).raise_for_status()
                    warm.append((time.perf_counter() - t) * 1000)
            api.delete(f"/sandboxes/{sid}")
    native = [timed([PY, "-c", "pass"]) for _ in range(10)]
    return {"run_code cold (first in a new sandbox)": cold, "run_code warm (1+1)": warm,
            "python3 -c pass (native)": native}


POOLED_HEADER = "## Code interpreter from the warm pool (code-interpreter-v1)"
POOL_REFILL_WAIT = 4  # s: the pool refills one sandbox at a time, IPython import included


def interpreter_pooled(daemon, rounds: int) -> dict[str, list[float]]:
    """run_code in code-interpreter-v1 sandboxes handed out by the warm pool, whose
    default Python context (IPython) the pool started: the first call in a new
    sandbox, then warm calls. Rounds wait for the pool to refill, as a caller
    creating a sandbox every few seconds would see."""
    first, warm = [], []
    headers = lambda sid: {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
                           "X-API-KEY": daemon.api_key}
    body = {"templateID": "code-interpreter-v1", "secure": False}
    with daemon.api() as api:
        api.delete(f"/sandboxes/{api.post('/sandboxes', json=body).json()['sandboxID']}")  # the spec enters the pool
        for _ in range(max(5, rounds // 3)):
            time.sleep(POOL_REFILL_WAIT)
            sid = api.post("/sandboxes", json=body).json()["sandboxID"]
            with httpx.Client(base_url=daemon.url, headers=headers(sid), timeout=60) as c:
                t = time.perf_counter()
                c.post("/execute", json={"code": "1+1"}).raise_for_status()
                first.append((time.perf_counter() - t) * 1000)
                for _ in range(rounds):
                    t = time.perf_counter()
                    c.post("/execute", json={"code": "1+1"}).raise_for_status()
                    warm.append((time.perf_counter() - t) * 1000)
            api.delete(f"/sandboxes/{sid}")
    return {"code-interpreter-v1: first run_code(\"1+1\") in a new sandbox (from the pool)": first,
            "code-interpreter-v1: run_code(\"1+1\") warm": warm}


def idle_memory_with_kernels(daemon, count: int) -> dict[str, float]:
    """MiB per idle sandbox (MemTotal - MemAvailable delta over `count`, and the
    mean of their cgroups' memory), plain
    (base, nothing started) beside code-interpreter-v1 with its Python context
    running, as the warm pool hands it out. The pool is full before and after
    each measurement, so its own sandboxes cancel out."""
    results = {}
    headers = lambda sid: {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
                           "X-API-KEY": daemon.api_key}
    with daemon.api() as api:
        for label, template in (("base, plain", "base"),
                                ("code-interpreter-v1, Python context running", "code-interpreter-v1")):
            body = {"templateID": template, "secure": False, "timeout": 3600}
            api.delete(f"/sandboxes/{api.post('/sandboxes', json=body).json()['sandboxID']}")
            time.sleep(3 * POOL_REFILL_WAIT)
            subprocess.run(["sync"], check=False)
            before = meminfo_used_kib()
            ids = []
            try:
                for _ in range(count):
                    sid = api.post("/sandboxes", json=body).json()["sandboxID"]
                    ids.append(sid)
                    if template != "base":
                        httpx.post(daemon.url + "/execute", json={"code": "1+1"}, headers=headers(sid),
                                   timeout=60).raise_for_status()
                time.sleep(3 * POOL_REFILL_WAIT)
                host = (meminfo_used_kib() - before) / count / 1024
                samples = [api.get(f"/sandboxes/{sid}/metrics").json() for sid in ids]
                cgroup = sum(m[-1]["memUsed"] for m in samples) / count / 2**20
                results[label] = (host, cgroup)
            finally:
                for sid in ids:
                    api.delete(f"/sandboxes/{sid}")
    return results


def pooled_section(interp: dict[str, list[float]], memory: dict[str, tuple[float, float]],
                   count: int) -> str:
    return f"""{POOLED_HEADER}

{table(list(interp.items()))}
- targets: first run_code p50 ≤ 5 ms, warm p50 ≤ 2 ms. Each round waits {POOL_REFILL_WAIT} s for the pool
  to refill (it makes one sandbox at a time, starting IPython in it); a create that finds the
  pool empty gets a sandbox whose context starts on first use (~1 s with IPython).

| idle sandbox ({count} alive) | MiB each, MemTotal − MemAvailable delta | MiB each, its cgroup (memUsed) |
|---|---|---|
""" + "".join(f"| {k} | {h:.1f} | {c:.1f} |\n" for k, (h, c) in memory.items()) + """
- the host delta is noisy at this count on a shared host; the cgroup figure is the sandbox's own.
- the pool keeps 2 ready sandboxes per distinct code-interpreter-v1 spec (template + limits),
  so it costs about twice the second figure; `base` sandboxes start no interpreter in the pool.
"""


def record_pooled_only(args) -> None:
    """--only-pooled-interp: measure the warm pool's code-interpreter section and put
    it into the existing results, after the code interpreter's."""
    state, daemon = bench_daemon(args)
    try:
        section = pooled_section(interpreter_pooled(daemon, args.rounds),
                                 idle_memory_with_kernels(daemon, args.kernel_idle), args.kernel_idle)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    out = Path(args.out)
    text = out.read_text()
    if POOLED_HEADER in text:
        start = text.index(POOLED_HEADER)
        end = text.index("\n## ", start + 1)
        text = text[:start] + section + text[end:]
    else:
        at = text.index("\n## Memory per idle sandbox")
        text = text[:at] + "\n" + section + text[at:]
    out.write_text(text)
    print(section)


def meminfo_used_kib() -> int:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])


def idle_memory(daemon, count: int) -> dict[str, float]:
    """System memory (MemTotal - MemAvailable) per idle sandbox, ours vs bwrap."""
    results = {}
    subprocess.run(["sync"])
    time.sleep(1)
    base = meminfo_used_kib()
    ids = []
    with daemon.api() as api:
        try:
            for _ in range(count):
                # Small limits: the host caps count limits, and these sit idle.
                r = api.post("/sandboxes", json={"templateID": "base", "secure": False,
                                                 "timeout": 3600, "memoryMB": 64,
                                                 "diskSizeMB": 16})
                ids.append(r.json()["sandboxID"])
            time.sleep(2)
            results["abx"] = (meminfo_used_kib() - base) / count / 1024
        finally:
            for sid in ids:
                api.delete(f"/sandboxes/{sid}")
    time.sleep(2)
    base = meminfo_used_kib()
    procs = [subprocess.Popen(BWRAP + ["/usr/bin/sleep", "infinity"]) for _ in range(count)]
    try:
        time.sleep(2)
        results["bwrap"] = (meminfo_used_kib() - base) / count / 1024
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    return results


def cold_creates(abx: str, rounds: int) -> dict[str, list[float]]:
    """Create without the warm pool, from templates of very different sizes:
    the template is stacked as read-only layers, never copied, so the time
    must not grow with its size."""
    state = private_state_dir("abx-bench-cold-")
    (state / "config.json").write_text(json.dumps(LOOPBACK_ONLY))
    daemon = start_daemon(state, extra_args=("--warm-pool", "0", "--config", str(state / "config.json")))
    out: dict[str, list[float]] = {}
    try:
        with daemon.api() as api:
            names = {name: api.get(f"/abx/v1/templates/{name}").json()["sizeBytes"] >> 20
                     for name in ("base", "code-interpreter-v1")}
            for name, size in names.items():
                key = f"create from {name} ({size} MiB), no warm pool"
                out[key] = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    sid = api.post("/sandboxes", json={"templateID": name, "secure": False}).json()["sandboxID"]
                    out[key].append((time.perf_counter() - t) * 1000)
                    api.delete(f"/sandboxes/{sid}")
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    return out


def disk_per_idle_sandbox(abx: str, daemon) -> dict[str, float]:
    """KiB of disk an idle sandbox from base holds: its writable layer (what
    `df /` inside reports: the size-limited tmpfs upper) and its host state dir."""
    env = daemon.env()
    sid = subprocess.run([abx, "create", "--template", "base"], check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    try:
        used = subprocess.run([abx, "exec", sid, "--", "df", "-B1", "--output=used", "/"], check=True,
                              env=env, capture_output=True, text=True).stdout.split()[-1]
        state = daemon.data_dir / "sandboxes" / sid
        host = sum(p.lstat().st_blocks * 512 for p in state.rglob("*")) + state.lstat().st_blocks * 512
    finally:
        subprocess.run([abx, "kill", sid, "--yes"], env=env, stdout=subprocess.DEVNULL)
    return {"writable layer (df / inside)": int(used) / 1024, "host state dir": host / 1024}


def base_builds(abx: str, cold: bool) -> dict[str, float]:
    """Seconds to build `base`: from nothing (mmdebstrap downloads and installs
    every package), from the cached mmdebstrap tar (a fresh templates dir
    extracts it), and again once its layer exists (nothing to do)."""
    state = private_state_dir("abx-bench-build-")
    cache = state / "cache"
    env_before = os.environ.get("ABX_CACHE_DIR")
    if cold:
        os.environ["ABX_CACHE_DIR"] = str(cache)
    daemon = start_daemon(state / "state", shared_templates=False)
    out = {}
    try:
        def build(label: str) -> None:
            t = time.perf_counter()
            subprocess.run([abx, "template", "build", "base"], check=True, env=daemon.env(),
                           capture_output=True, timeout=3600)
            out[label] = time.perf_counter() - t
        build("cold (mmdebstrap, empty cache)" if cold else "from the cached mmdebstrap tar")
        build("layer already built")
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
        if env_before is None:
            os.environ.pop("ABX_CACHE_DIR", None)
        else:
            os.environ["ABX_CACHE_DIR"] = env_before
    if cold:  # the tar is cached now (in the shared cache): time the middle case too
        out.update({k: v for k, v in base_builds(abx, False).items() if "tar" in k})
    return out


def table(rows: list[tuple]) -> str:
    head = "| what | p50 ms | p99 ms | n |\n|---|---|---|---|\n"
    return head + "".join(f"| {n} | {pct(v, 50):.1f} | {pct(v, 99):.1f} | {len(v)} |\n" for n, v in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--abx", default=str(REPO / "build" / "abx"))
    ap.add_argument("--out", default=str(REPO / "bench" / "RESULTS.md"))
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--idle", type=int, default=1000, help="sandboxes alive for the memory figure")
    ap.add_argument("--cold-build", action="store_true",
                    help="also time a base build from an empty mmdebstrap cache (minutes)")
    ap.add_argument("--baseline-abx", help="an older abx binary whose create p50 is measured "
                    "alternately with this build's (e.g. before a change on the create path)")
    ap.add_argument("--baseline-template", default="base",
                    help="the template both daemons create from (host needs no build)")
    ap.add_argument("--only-baseline", action="store_true",
                    help="measure just the comparison with --baseline-abx (create p50, files "
                    "API throughput) and put it into --out")
    ap.add_argument("--file-mib", type=int, default=64,
                    help="MiB uploaded and downloaded for the files API throughput")
    ap.add_argument("--file-rounds", type=int, default=10,
                    help="uploads and downloads timed per daemon for the throughput")
    ap.add_argument("--kernel-idle", type=int, default=10,
                    help="sandboxes alive for the memory figure with a running Python context")
    ap.add_argument("--only-pooled-interp", action="store_true",
                    help="measure only the warm pool's code-interpreter section into --out")
    ap.add_argument("--only-net", action="store_true",
                    help="measure just the networking section (in tests/net's test world; "
                    "needs root) and put it into --out")
    ap.add_argument("--no-net", action="store_true", help="leave the networking section out")
    ap.add_argument("--only-phases", action="store_true",
                    help="measure just where a one-shot's time goes (CLI and SDK phases beside "
                    "bwrap) and put it into --out")
    ap.add_argument("--phases-template", default="host",
                    help="the template of --only-phases' sandboxes (host needs no build)")
    ap.add_argument("--only-sdk", action="store_true",
                    help="measure just the Python SDK's section and put it into --out")
    ap.add_argument("--only-snapshots", action="store_true",
                    help="measure just the pause, snapshot and fork section and put it into --out")
    ap.add_argument("--only-dashboard", action="store_true",
                    help="measure just the dashboard's section (page load with 1000 sandboxes in "
                    "Debian's chromium, its size in abx) and put it into --out")
    ap.add_argument("--only-memory", action="store_true",
                    help="measure just the idle-sandbox memory figure (beside --baseline-abx's "
                    "when given) and put it into --out")
    ap.add_argument("--only-durable", action="store_true",
                    help="measure just the command output and daemon footprint section and put "
                    "it into --out")
    ap.add_argument("--only-in-band", action="store_true",
                    help="measure just in-band commands against the fd path (create, exec "
                    "true, background output; two daemons of this build) and put it into --out")
    ap.add_argument("--only-events", action="store_true",
                    help="measure just the flight recorder's cost (exec and command output, "
                    "recording vs events.enabled false) and put it into --out")
    ap.add_argument("--events-mib", type=int, default=256,
                    help="MiB of `yes` output per round of the flight recorder's cost")
    ap.add_argument("--output-mib", type=int, default=1024,
                    help="MiB of `yes` output read through the sandbox per round")
    ap.add_argument("--footprint-cycles", type=int, default=200,
                    help="create/exec/kill cycles before the daemon's busy footprint")
    ap.add_argument("--net-rounds", type=int, default=5,
                    help="rounds of the networking transfers (iperf3, HTTPS)")
    ap.add_argument("--net-seconds", type=int, default=3, help="seconds of each iperf3 run")
    ap.add_argument("--net-mib", type=int, default=128, help="MiB of each HTTPS transfer")
    ap.add_argument("--net-idle", type=int, default=0,
                    help="idle sandboxes for the networking memory figure (default: --idle)")
    args = ap.parse_args()
    if not shutil.which("bwrap"):
        sys.exit("bench: bubblewrap is missing; run `make deps` first")
    os.environ["ABX_BIN"] = args.abx
    with net.ip_forward_kept():
        run(args)


def record_net_only(args) -> None:
    """--only-net: measure the networking section and put it into the existing results."""
    section = net.measure(args)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(net.splice_section(text, section, (BASELINE_HEADER, THROUGHPUT_HEADER)))
    print(section)


def bench_daemon(args, binary: str | None = None):
    """A daemon of the bench's own (of `binary`, else --abx): loopback-only sandboxes, memory
    limits overcommitted."""
    state = private_state_dir("abx-bench-")
    # A thousand idle sandboxes commit more memory limits than the host has.
    (state / "config.json").write_text(json.dumps({"hostCaps": {"memoryPercent": 1000},
                                                   **LOOPBACK_ONLY}))
    return state, start_daemon(state, extra_args=("--config", str(state / "config.json")),
                               binary=Path(binary or args.abx))


def record_sdk_only(args) -> None:
    """--only-sdk: measure the SDK's section and put it into the existing results."""
    state, daemon = bench_daemon(args)
    try:
        section = sdk.measure(daemon, args.rounds, BWRAP + [PY, "-c", "pass"])
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    out = Path(args.out)
    out.write_text(net.splice_section(out.read_text(), section, ("## Code interpreter",),
                                      header=sdk.SDK_HEADER))
    print(section)


def record_phases_only(args) -> None:
    """--only-phases: measure where a one-shot's time goes and put it into the existing results."""
    state, daemon = bench_daemon(args)
    try:
        section = phases.measure(args.abx, daemon, args.rounds, BWRAP, args.phases_template)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section += (f"- measured {now} at {commit} on {platform.node()} ({os.cpu_count()} cores), "
                f"`bench/run.py --only-phases --rounds {args.rounds}`.\n")
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, phases.HEADER, section))
    print(section)


def record_snapshots_only(args) -> None:
    """--only-snapshots: measure pause, snapshots and fork into the existing results."""
    state, daemon = bench_daemon(args)
    try:
        section = snapshots.measure(daemon, args.rounds, BWRAP + ["/usr/bin/true"], pct, table)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, snapshots.HEADER, section))
    print(section)


def measure_durable(args, daemon) -> str:
    return durable.measure(args.abx, daemon, max(3, args.rounds // 6), args.output_mib,
                           args.footprint_cycles, BWRAP, pct)


def record_durable_only(args) -> None:
    """--only-durable: measure command output and the daemon's footprint into the results."""
    state, daemon = bench_daemon(args)
    try:
        section = measure_durable(args, daemon)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, durable.HEADER, section))
    print(section)


def record_in_band_only(args) -> None:
    """--only-in-band: in-band commands against the fd path, into the results."""
    section = in_band.measure(args.rounds, args.output_mib, args.baseline_template, pct, table)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, in_band.HEADER, section))
    print(section)


MEMORY_HEADER = "## Memory per idle sandbox"


def memory_section(args, memory: dict[str, float]) -> str:
    return f"""{MEMORY_HEADER} ({args.idle} alive, MemTotal − MemAvailable delta)

| runtime | MiB per idle sandbox |
|---|---|
""" + "".join(f"| {k} | {v:.2f} |\n" for k, v in memory.items()) + """
- target ≤ 1 MiB; with the agent in every sandbox (issue 32) ≤ 0.6 MiB.
"""


def record_memory_only(args) -> None:
    """--only-memory: the idle-sandbox memory figure, beside --baseline-abx's when given."""
    memory = {}
    for name, binary in (("abx", args.abx), ("abx (baseline build)", args.baseline_abx)):
        if not binary:
            continue
        state, daemon = bench_daemon(args, binary)
        try:
            measured = idle_memory(daemon, args.idle)
        finally:
            stop_daemon(daemon)
            shutil.rmtree(state, ignore_errors=True)
        memory[name] = measured["abx"]
        memory["bwrap"] = measured["bwrap"]
    memory["bwrap"] = memory.pop("bwrap")  # last
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = memory_section(args, memory) + (
        f"- measured {now} at {commit} (`bench/run.py --only-memory --idle {args.idle}"
        + (" --baseline-abx BASELINE" if args.baseline_abx else "") + "`).\n")
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, MEMORY_HEADER, section))
    print(section)


def record_dashboard_only(args) -> None:
    """--only-dashboard: measure the dashboard's section and put it into the existing results."""
    section = dashboard.measure(args, pct, table)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, dashboard.HEADER, section))
    print(section)


def record_events_only(args) -> None:
    """--only-events: measure the flight recorder's cost into the existing results."""
    section = measure_events(args)
    out = Path(args.out)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    out.write_text(splice(text, events.HEADER, section))
    print(section)


def measure_events(args) -> str:
    return events.measure(args.abx, max(3, args.rounds // 3), args.events_mib, pct)


def splice(text: str, header: str, section: str) -> str:
    """`text` with the section under `header` replaced by `section` (or it appended)."""
    if header not in text:
        return text.rstrip("\n") + "\n\n" + section
    start = text.index(header)
    end = text.find("\n## ", start + 1)
    return text[:start] + section.rstrip("\n") + "\n" + (text[end:] if end != -1 else "")


def run(args) -> None:
    if args.only_memory:
        return record_memory_only(args)
    if args.only_durable:
        return record_durable_only(args)
    if args.only_events:
        return record_events_only(args)
    if args.only_in_band:
        return record_in_band_only(args)
    if args.only_dashboard:
        return record_dashboard_only(args)
    if args.only_snapshots:
        return record_snapshots_only(args)
    if args.only_net:
        return record_net_only(args)
    if args.only_sdk:
        return record_sdk_only(args)
    if args.only_phases:
        return record_phases_only(args)
    if args.only_pooled_interp:
        return record_pooled_only(args)
    if args.only_baseline:
        if not args.baseline_abx:
            sys.exit("bench: --only-baseline needs --baseline-abx PATH")
        return record_baseline_only(args)
    state, daemon = bench_daemon(args)
    try:
        oneshot = one_shot(args.abx, daemon, args.rounds)
        side = daemon_side(daemon, args.rounds * 3)
        sdk_section = sdk.measure(daemon, args.rounds, BWRAP + [PY, "-c", "pass"])
        snapshot_section = snapshots.measure(daemon, args.rounds, BWRAP + ["/usr/bin/true"],
                                             pct, table)
        versus = against_baseline(args, daemon) or throughput_alone(args, daemon)
        interp = interpreter(daemon, args.rounds)
        pooled = pooled_section(interpreter_pooled(daemon, args.rounds),
                                idle_memory_with_kernels(daemon, args.kernel_idle), args.kernel_idle)
        memory = idle_memory(daemon, args.idle)
        disk = disk_per_idle_sandbox(args.abx, daemon)
        durable_section = measure_durable(args, daemon)
    finally:
        stop_daemon(daemon)
        shutil.rmtree(state, ignore_errors=True)
    creates = cold_creates(args.abx, args.rounds)
    builds = base_builds(args.abx, args.cold_build)
    networking = "" if args.no_net else net.measure(args)
    dashboard_section = dashboard.measure(args, pct, table)
    events_section = measure_events(args)
    create_ratio = pct(list(creates.values())[1], 50) / pct(list(creates.values())[0], 50)

    ratio_bwrap = pct(oneshot["abx create+exec+kill"], 50) / pct(oneshot["bwrap"], 50)
    ratio_plain = pct(oneshot["abx create+exec+kill"], 50) / pct(oneshot["plain python3"], 50)
    ratio_run = pct(oneshot["abx run"], 50) / pct(oneshot["bwrap"], 50)
    cold_ratio = pct(interp["run_code cold (first in a new sandbox)"], 50) / pct(interp["python3 -c pass (native)"], 50)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"""# Benchmark results

Produced by `make bench` (`{' '.join(['bench/run.py', '--rounds', str(args.rounds), '--idle', str(args.idle)] + (['--cold-build'] if args.cold_build else []))}`)
on {now}, {platform.node()} ({os.cpu_count()} cores, kernel {platform.release()}). Peers run interleaved in
the same rounds; compare ratios, not absolute numbers (this VM pays ~2 ms per exec).
Every section but Networking is measured with loopback-only sandboxes (`network.enabled: false`).

## One-shot: create → exec `python3 -c pass` → kill, through the `abx` CLI

{table(list(oneshot.items()))}
- abx / bwrap = **{ratio_bwrap:.2f}×** (target ≤ 0.9×; the three-command flow ≤ 2.0×); abx /
  plain python3 = {ratio_plain:.2f}×. The abx figure includes three CLI processes (create, exec,
  kill) and their HTTP round trips.
- `abx run base -- python3 -c pass` / bwrap = **{ratio_run:.2f}×** (target ≤ 1.2×): one CLI
  process, the same three round trips.

## Daemon-side latency (HTTP API, one sandbox at a time)

{table(list(side.items()))}
- targets: create p50 ≤ 5 ms, exec p50 ≤ 3 ms.

{sdk_section}
## Code interpreter

{table(list(interp.items()))}
- cold run_code / native python3 start = **{cold_ratio:.2f}×** (target ≤ 2×); warm target p50 ≤ 3 ms.

{pooled}
""" + memory_section(args, memory) + f"""
## Templates

{table(list(creates.items()))}
- create from code-interpreter-v1 / create from base = **{create_ratio:.2f}×** (target ≈ 1×: the
  template's layers are stacked read-only, never copied).

| disk per idle sandbox (from base) | KiB |
|---|---|
""" + "".join(f"| {k} | {v:.0f} |\n" for k, v in disk.items()) + """
| `abx template build base` | seconds |
|---|---|
""" + "".join(f"| {k} | {v:.1f} |\n" for k, v in builds.items())
    if networking:
        text += "\n" + networking
    text += "\n" + snapshot_section
    text += "\n" + dashboard_section
    text += "\n" + durable_section
    text += "\n" + events_section
    if versus:
        text += "\n" + versus
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
