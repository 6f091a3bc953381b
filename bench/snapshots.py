"""Issue 15's figures over the HTTP API, one sandbox at a time: pause (freeze) and resume,
snapshot of an idle `base` sandbox, a create from that snapshot and a fork, each beside a
create from the template (the warm pool) and bwrap's `true` measured in the same rounds;
the filesystem-only pause and its cold-boot resume; and the memory a filesystem-only pause
frees."""
from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable

HEADER = "## Pause, snapshots and fork"


def _ms(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def _ok(response):
    response.raise_for_status()
    return response


def _rss_kib(api, sandbox_id: str) -> int:
    sample = api.get(f"/sandboxes/{sandbox_id}/metrics").json()
    sample = sample[-1] if isinstance(sample, list) else sample
    return int(sample.get("memUsed", 0)) // 1024


def measure(daemon, rounds: int, bwrap_true: list[str], pct, table) -> str:
    with daemon.api() as api:
        def create(template: str) -> str:
            return _ok(api.post("/sandboxes", json={"templateID": template, "timeout": 300,
                                                    "secure": False})).json()["sandboxID"]

        source = create("base")
        time.sleep(0.5)
        snapshot_times: list[float] = []
        snapshot_id = ""

        def snapshot() -> None:
            nonlocal snapshot_id
            snapshot_id = _ok(api.post(f"/sandboxes/{source}/snapshots", json={})).json()["snapshotID"]

        made: list[str] = []
        cases: dict[str, Callable[[], None]] = {
            "create from the template (warm pool)": lambda: made.append(create("base")),
            "create from a snapshot of an idle base sandbox": lambda: made.append(create(snapshot_id)),
            "fork (count 1) of an idle base sandbox": lambda: made.extend(
                f["sandbox"]["sandboxID"] for f in
                _ok(api.post(f"/sandboxes/{source}/fork", json={"count": 1})).json()),
            "bwrap true": lambda: subprocess.run(bwrap_true, check=True),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        pause, resume = [], []
        try:
            for _ in range(rounds):
                if snapshot_id:
                    api.delete(f"/templates/{snapshot_id}")
                snapshot_times.append(_ms(snapshot))
                for name in random.sample(list(cases), len(cases)):
                    times[name].append(_ms(cases[name]))
                for sid in made:
                    api.delete(f"/sandboxes/{sid}")
                made.clear()
                pause.append(_ms(lambda: _ok(api.post(f"/sandboxes/{source}/pause"))))
                resume.append(_ms(lambda: _ok(api.post(f"/sandboxes/{source}/connect",
                                                       json={"timeout": 300}))))
                time.sleep(0.05)  # let the warm pool refill, as between real requests
            fs_pause, fs_resume, freed = [], [], []
            for _ in range(max(3, rounds // 3)):
                sid = create("base")
                time.sleep(0.3)
                before = _rss_kib(api, sid)
                fs_pause.append(_ms(lambda: _ok(api.post(f"/sandboxes/{sid}/pause",
                                                         json={"memory": False}))))
                freed.append(before)
                fs_resume.append(_ms(lambda: _ok(api.post(f"/sandboxes/{sid}/connect",
                                                          json={"timeout": 300}))))
                api.delete(f"/sandboxes/{sid}")
        finally:
            for sid in made:
                api.delete(f"/sandboxes/{sid}")
            if snapshot_id:
                api.delete(f"/templates/{snapshot_id}")
            api.delete(f"/sandboxes/{source}")
    rows = [("pause (cgroup freezer)", pause), ("resume (thaw)", resume),
            ("snapshot of an idle base sandbox", snapshot_times),
            *times.items(),
            ("filesystem-only pause", fs_pause), ("its resume (cold boot on the files)", fs_resume)]
    from_snapshot = pct(times["create from a snapshot of an idle base sandbox"], 50)
    warm = pct(times["create from the template (warm pool)"], 50)
    fork = pct(times["fork (count 1) of an idle base sandbox"], 50)
    bwrap = pct(times["bwrap true"], 50)
    return f"""{HEADER}

{table(rows)}
- create from a snapshot: p50 **{from_snapshot:.1f} ms** (goal ≤ 50 ms), {from_snapshot / warm:.2f}×
  a create from the warm pool and {from_snapshot / bwrap:.2f}× bwrap `true`; a fork (snapshot and
  create in one call) {fork:.1f} ms. Creates from a snapshot do not come from the warm pool:
  each boots a new init on the snapshot's layer.
- A filesystem-only pause frees the sandbox's whole memory: its cgroup's use before the pause
  was {pct(freed, 50):.0f} KiB (p50), and nothing of it is held while paused (no init, no cgroup).
- Memory snapshots (CRIU) are not done yet, so there is no checkpoint/restore figure.
"""
