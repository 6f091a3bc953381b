"""The dashboard's figures for `make bench`: the sandboxes page's load with 1000 sandboxes,
in the Chromium the browser tests drive (Debian's), side by side with the same page showing
none (a member of another team, in the same rounds and browser); and what the dashboard adds
to the abx binary (its embedded assets' object file)."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from harness import private_state_dir, start_daemon, stop_daemon

HEADER = "## Dashboard"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


def assets_bytes(build: Path) -> int:
    """Text + data of the object holding the embedded assets (what they add to abx)."""
    obj = next(build.glob("CMakeFiles/abx_daemon.dir/generated/dashboard/assets.cc.o"))
    out = subprocess.run(["size", str(obj)], check=True, capture_output=True, text=True).stdout
    return int(out.splitlines()[1].split()[3])


def _create_many(daemon, count: int) -> list[str]:
    def one(_: int) -> str:
        r = httpx.post(daemon.url + "/sandboxes", headers={"X-API-KEY": daemon.api_key}, timeout=120,
                       # The smallest memory and a raised host cap: 1000 default (512 MiB, 1 GiB
                       # disk) sandboxes commit more than a small host's caps allow.
                       json={"templateID": "host", "timeout": 3600, "memoryMB": 64,
                             "metadata": {"bench": "dashboard"}})
        r.raise_for_status()
        return r.json()["sandboxID"]
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, range(count)))


def _member_key(daemon) -> str:
    r = httpx.post(daemon.url + "/abx/v1/keys", headers={"X-API-KEY": daemon.api_key}, timeout=10,
                   json={"team": "bench-empty", "name": "bench"})
    r.raise_for_status()
    return r.json()["key"]


def _logged_in(browser, daemon, key: str):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(daemon.url + "/dashboard")
    page.fill("#api-key", key)
    page.click("#login")
    page.wait_for_selector("#nav:not([hidden])")
    page.close()
    return context


def _load_ms(context, url: str, ready: str) -> float:
    """From navigation to `ready` in the page. The page checks on every frame: Playwright's
    wait_for_selector checks from the driver at 0, 20, 50, 100, 100, then every 500 ms, so it
    saw a table shown just after a check up to 500 ms late (the figures before 2026-12-07
    23:00 were measured that way)."""
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_function("sel => document.querySelector(sel) !== null", arg=ready,
                           polling="raf", timeout=60000)
    elapsed = (time.perf_counter() - started) * 1000
    page.close()
    return elapsed


def measure(args, pct, table, count: int = 1000) -> str:
    """The section for RESULTS.md; `pct` and `table` are run.py's."""
    from playwright.sync_api import sync_playwright

    state = private_state_dir("abx-bench-dash-")
    (state / "config.json").write_text(json.dumps({"hostCaps": {"memoryPercent": 1000,
                                                                "diskPercent": 1000},
                                                   "network": {"enabled": False}}))
    daemon = start_daemon(state, shared_templates=False,
                          extra_args=("--config", str(state / "config.json"), "--warm-pool", "0"),
                          binary=Path(args.abx))
    try:
        ids = _create_many(daemon, count)
        member = _member_key(daemon)
        # The table builds only the rows in view (sandboxes.js): loaded is every sandbox
        # counted into it (data-shown) and its first screen of rows built.
        full = f"#sandboxes[data-shown='{count}'] tbody tr[data-id]"
        cases = {f"sandboxes page, {count} sandboxes": (daemon.api_key, full),
                 "sandboxes page, none (same browser, same rounds)": (member, "#empty:not([hidden])")}
        times: dict[str, list[float]] = {name: [] for name in cases}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            contexts = {name: _logged_in(browser, daemon, key) for name, (key, _) in cases.items()}
            for name, (_, ready) in cases.items():
                _load_ms(contexts[name], daemon.url + "/dashboard", ready)  # warm up
            for _ in range(args.rounds):
                for name, (_, ready) in cases.items():
                    times[name].append(_load_ms(contexts[name], daemon.url + "/dashboard", ready))
            browser.close()
        for sid in ids:
            httpx.delete(f"{daemon.url}/sandboxes/{sid}", headers={"X-API-KEY": daemon.api_key}, timeout=60)
    finally:
        stop_daemon(daemon, teams=("bench-empty",))
        shutil.rmtree(state, ignore_errors=True)
    full_p50, empty_p50 = (pct(v, 50) for v in times.values())
    size = assets_bytes(Path(args.abx).parent)
    return f"""{HEADER}

Debian's Chromium (headless, through Playwright), a logged-in session: from navigation to
the table holding every sandbox (the event stream's snapshot rendered: the count of all of
them, and the rows in view built; the others are built as they are scrolled to).

{table(list(times.items()))}
- {count} sandboxes: p50 **{full_p50:.0f} ms** (target < 300 ms); / the empty page =
  {full_p50 / empty_p50:.2f}×.
- the dashboard's assets in `abx`: **{size / 1048576:.2f} MiB** (target ≤ 2 MiB; its own
  code plus xterm.js, as embedded by src/dashboard/assets.cmake).
"""
