"""A sandbox's timeline on its dashboard page, in a real browser against a real daemon: its
flight record in order, filtered by type and by text, a command's output shown as text (it is
hostile: markup in it must stay text), a new command appearing live, and the files it changed."""
from __future__ import annotations

import subprocess

import pytest
from dashboard_pages import create_host_sandbox, kill_sandbox, log_in, screenshot
from harness import ABX_BIN

pytestmark = pytest.mark.offline

HOSTILE = "<img src=x onerror=alert(1)>"


def _exec(daemon, sandbox_id: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c", script],
                          env=daemon.env(), capture_output=True, text=True, timeout=60, check=False)


def _shown(page) -> list[str]:
    """Type and event of each visible timeline row, top to bottom, but the start of the shell
    the page's own terminal opens (when it comes depends on the browser)."""
    return page.eval_on_selector_all(
        "#events tbody tr",
        "rows => rows.filter(r => !r.hidden && !r.textContent.includes('(terminal)'))"
        ".map(r => r.dataset.type + ' ' + r.dataset.event)")


def test_the_timeline_shows_the_record_filters_it_and_shows_output_as_text(page, dash_daemon):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    ran = _exec(dash_daemon, sandbox_id,
                f"echo 'made' > /home/user/made.txt; echo '{HOSTILE}'; exit 3")
    assert ran.returncode == 3 and HOSTILE in ran.stdout, (ran.returncode, ran.stdout, ran.stderr)

    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#events tr[data-type='commands'][data-event='ended']", timeout=15000)
    assert _shown(page) == ["lifecycle created", "commands started", "commands ended"]
    started = page.text_content("#events tr[data-event='started'] td.detail")
    assert "sh -c" in started and HOSTILE in started, started  # argv, as text

    # The type filter hides the other types; the search box keeps what matches.
    page.select_option("#timeline-type", "lifecycle")
    assert _shown(page) == ["lifecycle created"]
    page.select_option("#timeline-type", "commands")
    assert _shown(page) == ["commands started", "commands ended"]
    page.select_option("#timeline-type", "")
    page.fill("#timeline-search", "onerror")
    assert _shown(page) == ["commands started", "commands ended"]
    page.fill("#timeline-search", "no such text anywhere")
    assert _shown(page) == []
    page.fill("#timeline-search", "")

    # Its end: the exit code, and the output exactly as written, no element made of it.
    page.click("#events tr[data-type='commands'][data-event='ended']")
    head = page.wait_for_selector("#output-head")
    assert head.text_content() == HOSTILE + "\n"
    assert "exit code 3" in page.text_content("#output-exit")
    assert page.locator("#output-tail").count() == 0  # short output: the head is all of it
    assert "null" not in page.text_content("#command-output")
    assert page.locator("#timeline img, #timeline script").count() == 0
    assert dialogs == []

    # The file it wrote, against the template: in a file tree, under its directory by its
    # name alone; a click on the directory folds it.
    leaf = page.wait_for_selector("#diff .leaf[data-path='/home/user/made.txt'][data-change='added']")
    assert "made.txt" in leaf.text_content() and "/home/user/made.txt" not in leaf.text_content()
    folder = page.locator("#diff details:has(.leaf[data-path='/home/user/made.txt'])").last
    assert folder.locator("> summary").text_content().endswith("user/")
    folder.locator("> summary").click()
    assert not leaf.is_visible()
    folder.locator("> summary").click()
    assert leaf.is_visible()
    screenshot(page, "sandbox-timeline")

    # A command run while the page is open appears without a reload; a long output shows
    # its first and its last KiB.
    assert _exec(dash_daemon, sandbox_id, "echo second-run; seq 1 20000").returncode == 0
    page.wait_for_selector("#events tr[data-event='started']:has-text('second-run')", timeout=15000)
    page.wait_for_selector("#events tr[data-event='ended'] >> nth=1", timeout=15000)
    page.click("#events tr[data-event='started']:has-text('second-run')")  # its end, from its start
    page.wait_for_selector("#output-head:has-text('second-run')")
    assert page.text_content("#output-head").startswith("second-run\n1\n2\n")
    assert page.text_content("#output-tail").endswith("19999\n20000\n")

    # Its end closes the record: the stream ends with the `ended` event.
    kill_sandbox(dash_daemon, sandbox_id)
    page.wait_for_selector("#events tr[data-type='lifecycle'][data-event='ended']", timeout=15000)
    page.select_option("#timeline-type", "lifecycle")
    assert _shown(page) == ["lifecycle created", "lifecycle ended"]
    assert dialogs == []
