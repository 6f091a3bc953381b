"""Ended sandboxes on the dashboard, in a real browser against a real daemon: one killed by a
named key is listed under Ended with why and by whom, its page shows its whole timeline (a
command's output included) read-only, with nothing left to act on; another team's session sees
none of it."""
from __future__ import annotations

import subprocess

import pytest
from dashboard_pages import (
    create_host_sandbox,
    kill_sandbox,
    log_in,
    make_key,
    screenshot,
)
from harness import ABX_BIN

pytestmark = pytest.mark.offline


def _shown(page) -> list[str]:
    return page.eval_on_selector_all("#events tbody tr",
                                     "rows => rows.filter(r => !r.hidden)"
                                     ".map(r => r.dataset.type + ' ' + r.dataset.event)")


def test_an_ended_sandbox_is_listed_with_who_killed_it_and_its_timeline_stays(
        page, dash_daemon, second_team_key):
    killer = make_key(dash_daemon, "default", f"janitor-{page.scheme}")
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    ran = subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c", "echo last-words; exit 4"],
                         env=dash_daemon.env(), capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 4, (ran.stdout, ran.stderr)
    kill_sandbox(dash_daemon, sandbox_id, killer)

    log_in(page, dash_daemon)
    page.click("#tab-ended")
    row = page.wait_for_selector(f"#ended-sandboxes tr[data-id='{sandbox_id}']", timeout=15000)
    why = row.query_selector("td.why").text_content()
    assert why.startswith("killed by key janitor-") and "(key-" in why, why
    page.fill("#ended-filter", f"janitor-{page.scheme}")
    assert page.eval_on_selector_all("#ended-sandboxes tbody tr", "rows => rows.map(r => r.dataset.id)") \
        == [sandbox_id]
    screenshot(page, "ended-sandboxes")

    # Its page: what it was, why it ended, its whole record; nothing to act on.
    page.click(f"#ended-sandboxes tr[data-id='{sandbox_id}'] a")
    page.wait_for_selector("#events tr[data-type='lifecycle'][data-event='ended']", timeout=15000)
    assert _shown(page) == ["lifecycle created", "commands started", "commands ended",
                            "lifecycle ended"]
    assert f"janitor-{page.scheme}" in page.text_content("#ended-why")
    assert f"janitor-{page.scheme}" in page.text_content("#events tr[data-event='ended'][data-type='lifecycle']")
    assert page.locator("#processes, #files, .terminal, #charts, button.danger, #upload").count() == 0
    page.click("#events tr[data-type='commands'][data-event='ended']")
    assert page.wait_for_selector("#output-head").text_content() == "last-words\n"
    assert "exit code 4" in page.text_content("#output-exit")
    page.select_option("#timeline-type", "lifecycle")
    assert _shown(page) == ["lifecycle created", "lifecycle ended"]
    screenshot(page, "ended-sandbox")

    # Another team: not in its list, and its page is not found.
    page.click("#logout")
    log_in(page, dash_daemon, second_team_key)
    page.goto(f"{dash_daemon.url}/dashboard#/ended")
    page.wait_for_selector("#ended-count:not(:empty)")
    assert page.locator(f"#ended-sandboxes tr[data-id='{sandbox_id}']").count() == 0
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#error:not([hidden])")
    assert "not found" in page.text_content("#error")
    assert page.locator("#events, #ended-why").count() == 0


def test_a_sandbox_page_open_when_it_is_killed_shows_its_record(page, dash_daemon):
    killer = make_key(dash_daemon, "default", f"closer-{page.scheme}")
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#events tr[data-event='created']", timeout=15000)
    kill_sandbox(dash_daemon, sandbox_id, killer)
    page.wait_for_selector("#ended:not([hidden])", timeout=15000)
    page.click("#show-record")
    page.wait_for_selector("#ended-why", timeout=15000)
    assert f"killed by key closer-{page.scheme}" in page.text_content("#ended-why")
    assert page.locator(".terminal, #processes, #files").count() == 0
