"""What a page load asks of the daemon: the page names its files by this build's version and
the browser keeps them (a page loaded again fetches none), its data comes in one answer asked
for while the scripts load, and the event feed does not send that data a second time."""
from __future__ import annotations

import re

import httpx
import pytest
from dashboard_pages import create_host_sandbox, kill_sandbox, log_in

pytestmark = pytest.mark.offline

# Each asset the page fetched: [path, bytes that came over the network (0: the browser's cache)].
FETCHED = """() => performance.getEntriesByType('resource')
  .map((r) => [new URL(r.name).pathname, r.transferSize])"""


def _cookie_jar(page) -> dict[str, str]:
    [cookie] = page.context.cookies()
    return {cookie["name"]: cookie["value"]}


def _first_event(url: str, jar: dict[str, str], have: str | None, seconds: float = 5.0) -> str:
    """The name of the first event the feed sends (its metrics come within 2 s)."""
    params = {"have": have} if have else {}
    with httpx.stream("GET", url + "/dashboard/events", cookies=jar, params=params,
                      timeout=httpx.Timeout(seconds)) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("event: "):
                return line.removeprefix("event: ")
    return ""


def test_a_page_loaded_again_fetches_no_file_and_one_answer_of_data(page, dash_daemon):
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    try:
        log_in(page, dash_daemon)
        again = page.context.new_page()
        again.goto(dash_daemon.url + "/dashboard")
        again.wait_for_selector(f"#sandboxes tr[data-id='{sandbox_id}']")
        fetched = again.evaluate(FETCHED)
        files = [(path, size) for path, size in fetched if path.startswith("/dashboard/assets/")]
        assert len(files) >= 15, fetched  # the stylesheets and every module
        assert all(size == 0 for _, size in files), files  # each from the browser's cache
        # The preloaded answer is the one app.js used: asked for once.
        assert [path for path, _ in fetched].count("/dashboard/bootstrap") == 1, fetched
        again.close()
    finally:
        kill_sandbox(dash_daemon, sandbox_id)


def test_the_pages_files_are_kept_by_version_and_others_are_not(dash_daemon):
    page = httpx.get(dash_daemon.url + "/dashboard", timeout=10)
    assert page.headers["cache-control"] == "no-cache"  # the page names the version
    [version] = set(re.findall(r"/dashboard/assets/([0-9a-f]{16})/", page.text))
    kept = httpx.get(f"{dash_daemon.url}/dashboard/assets/{version}/app.js", timeout=10)
    assert kept.status_code == 200
    assert "immutable" in kept.headers["cache-control"]
    assert "script-src 'self'" in kept.headers["content-security-policy"]
    for path in ("/dashboard/assets/0000000000000000/app.js", "/dashboard/assets/app.js"):
        r = httpx.get(dash_daemon.url + path, timeout=10)
        assert r.status_code == 200, path
        assert r.headers["cache-control"] == "no-cache", path
        assert r.text == kept.text
    missing = httpx.get(f"{dash_daemon.url}/dashboard/assets/{version}/index.html", timeout=10)
    assert missing.status_code == 404


def test_the_feed_leaves_out_only_the_snapshot_the_page_still_holds(page, dash_daemon):
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    made = None
    try:
        log_in(page, dash_daemon)
        jar = _cookie_jar(page)
        boot = httpx.get(dash_daemon.url + "/dashboard/bootstrap", cookies=jar, timeout=10)
        assert boot.status_code == 200
        body = boot.json()
        assert body["session"]["team"] == "default" and body["session"]["csrf"]
        assert sandbox_id in [row["sandboxID"] for row in body["sandboxes"]]
        assert _first_event(dash_daemon.url, jar, body["digest"]) == "metrics"
        assert _first_event(dash_daemon.url, jar, "0" * 16) == "snapshot"
        assert _first_event(dash_daemon.url, jar, None) == "snapshot"
        made = create_host_sandbox(dash_daemon, dash_daemon.api_key)  # the held one is old now
        assert _first_event(dash_daemon.url, jar, body["digest"]) == "snapshot"
        # Without a session there is nothing to give.
        assert httpx.get(dash_daemon.url + "/dashboard/bootstrap", timeout=10).status_code == 401
    finally:
        for sid in (sandbox_id, made):
            if sid:
                kill_sandbox(dash_daemon, sid)
