"""The sandboxes page with 1000 sandboxes, in a real browser against a real daemon: the table
builds only the rows in view, yet every sandbox is reachable (scrolling through the page shows
each one; the filter finds the oldest), and the actions of a row reached that way work."""
from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from dashboard_pages import log_in, wait_until
from harness import private_state_dir, start_daemon, stop_daemon

pytestmark = pytest.mark.offline

COUNT = 1000

# Scrolls from top to bottom half a window at a time, and collects the id of every row built.
COLLECT = """async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const seen = new Set();
  for (let y = 0; ; y += Math.floor(window.innerHeight / 2)) {
    window.scrollTo(0, y);
    await frame();
    for (const tr of document.querySelectorAll('#sandboxes tbody tr[data-id]')) seen.add(tr.dataset.id);
    if (window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1) break;
  }
  return [...seen];
}"""


@pytest.fixture(scope="module")
def crowded():
    """A daemon of its own with COUNT sandboxes (the smallest memory, and host caps raised:
    1000 default sandboxes commit more than a small host allows)."""
    state = private_state_dir()
    (state / "config.json").write_text(json.dumps({
        "hostCaps": {"memoryPercent": 1000, "diskPercent": 1000}, "network": {"enabled": False}}))
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--config", str(state / "config.json"), "--warm-pool", "0"))

    def one(_: int) -> str:
        r = httpx.post(d.url + "/sandboxes", headers={"X-API-KEY": d.api_key}, timeout=120,
                       json={"templateID": "host", "timeout": 3600, "memoryMB": 64})
        assert r.status_code == 201, r.text
        return r.json()["sandboxID"]
    try:
        with ThreadPoolExecutor(4) as pool:
            ids = list(pool.map(one, range(COUNT)))
        yield d, ids
    finally:
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)


def _end_at(d, sandbox_id: str) -> str:
    r = httpx.get(f"{d.url}/sandboxes/{sandbox_id}", headers={"X-API-KEY": d.api_key}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["endAt"]


def test_every_one_of_1000_sandboxes_is_reachable_and_its_actions_work(crowded, browser):
    d, ids = crowded
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        log_in(page, d)
        page.wait_for_selector(f"#sandboxes[data-shown='{COUNT}'] tbody tr[data-id]", timeout=60000)
        assert page.text_content("#sandbox-count") == f"{COUNT} running"
        built = page.locator("#sandboxes tbody tr[data-id]").count()
        assert 0 < built < COUNT, built  # only what is in view (and a few more)

        # Scrolling through the page shows every one of them, the oldest last.
        assert sorted(page.evaluate(COLLECT)) == sorted(ids)
        last = page.eval_on_selector_all("#sandboxes tbody tr[data-id]", "rows => rows.at(-1).dataset.id")
        page.wait_for_selector(f"#sandboxes tr[data-id='{last}']")

        # The row reached at the bottom: +5 min moves its end.
        before = _end_at(d, last)
        page.click(f"#sandboxes tr[data-id='{last}'] button[data-action='extend']")
        assert wait_until(lambda: _end_at(d, last) != before, 15)

        # The filter finds one anywhere in the list; its Kill ends it.
        victim = ids[len(ids) // 2]
        page.evaluate("window.scrollTo(0, 0)")
        page.fill("#filter", victim)
        page.wait_for_selector(f"#sandboxes[data-shown='1'] tr[data-id='{victim}']")
        page.click(f"#sandboxes tr[data-id='{victim}'] button[data-action='kill']")
        page.wait_for_selector("#sandboxes[data-shown='0']", timeout=15000)
        gone = httpx.get(f"{d.url}/sandboxes/{victim}", headers={"X-API-KEY": d.api_key}, timeout=30)
        assert gone.status_code == 404
        page.fill("#filter", "")
        page.wait_for_selector(f"#sandboxes[data-shown='{COUNT - 1}']")
    finally:
        context.close()
