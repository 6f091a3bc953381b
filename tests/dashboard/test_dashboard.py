"""The web dashboard in a real browser against a real daemon: log in, watch a
sandbox appear and leave without a reload, drive it, and the session's limits
(wrong key, another team, cookie flags, CSRF)."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from dashboard_pages import create_host_sandbox as _create_host_sandbox
from dashboard_pages import log_in, screenshot, wait_until

pytestmark = pytest.mark.offline


def _processes(daemon, sandbox_id: str) -> list:
    r = httpx.post(daemon.url + "/process.Process/List", json={}, timeout=10,
                   headers={"X-API-KEY": daemon.api_key, "E2b-Sandbox-Id": sandbox_id})
    assert r.status_code == 200, r.text
    return r.json().get("processes", [])


def test_login_create_watch_and_kill_without_a_reload(page, dash_daemon):
    page.goto(dash_daemon.url + "/dashboard")
    page.wait_for_selector("#api-key")
    screenshot(page, "login")
    log_in(page, dash_daemon)
    page.wait_for_selector("#empty:not([hidden])")
    screenshot(page, "sandboxes-empty")

    page.fill("#new-template", "host")
    page.fill("#new-metadata", f"owner=playwright, scheme={page.scheme}")
    page.click("#create")
    row = page.wait_for_selector(f"#sandboxes tr:has-text('scheme={page.scheme}')", timeout=15000)
    sandbox_id = row.get_attribute("data-id")
    # One made elsewhere (the API) shows up too, pushed by the event stream.
    other = _create_host_sandbox(dash_daemon, dash_daemon.api_key, {"made": "by-api"})
    page.wait_for_selector(f"#sandboxes tr[data-id='{other}']", timeout=15000)
    page.wait_for_selector("#sandboxes td.num:has-text('%')", timeout=10000)  # a metrics tick
    # Ticks update a row's cells in place: a focused button keeps its focus (a table
    # rebuilt every 2 s would take it, and any text selection, away). The row's "Ends"
    # cell counts down, so its text changing says a tick was rendered.
    page.focus(f"#sandboxes tr[data-id='{other}'] [data-action='extend']")
    rendered = page.evaluate("""(id) => new Promise((done) => {
        const ends = () => document.querySelector(`#sandboxes tr[data-id='${id}'] td:nth-child(6)`);
        const before = ends().textContent;
        const poll = setInterval(() => {
            if (ends().textContent !== before) { clearInterval(poll); done(true); }
        }, 50);
        setTimeout(() => { clearInterval(poll); done(false); }, 15000);
    })""", other)
    assert rendered, "no metrics tick was rendered"
    focused = page.evaluate("document.activeElement.dataset.action")
    assert focused == "extend", focused
    page.fill("#filter", "by-api")
    assert page.locator("#sandboxes tbody tr").count() == 1
    page.fill("#filter", "")
    screenshot(page, "sandboxes")

    page.click(f"a[href='#/sandbox/{sandbox_id}']")
    page.wait_for_selector("#files")
    page.wait_for_selector("#logs")
    screenshot(page, "sandbox")
    page.click("a[href='#/']")

    for sid in (sandbox_id, other):
        page.click(f"#sandboxes tr[data-id='{sid}'] [data-action='kill']")
        page.wait_for_selector(f"#sandboxes tr[data-id='{sid}']", state="detached", timeout=15000)


def test_upload_list_download_and_delete_a_file(page, dash_daemon, tmp_path):
    sandbox_id = _create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#files")
    page.fill("#dir", "/tmp")
    page.press("#dir", "Enter")
    local = tmp_path / f"hello-{page.scheme}.txt"
    local.write_text("hi from the dashboard\n")
    page.set_input_files("#upload", str(local))
    row = page.wait_for_selector(f"#files tr[data-name='{local.name}']", timeout=15000)
    with page.expect_download() as download:
        row.query_selector("button:has-text('Download')").click()
    assert Path(download.value.path()).read_text() == "hi from the dashboard\n"
    row.query_selector("button:has-text('Delete')").click()
    page.wait_for_selector(f"#files tr[data-name='{local.name}']", state="detached")
    httpx.delete(f"{dash_daemon.url}/sandboxes/{sandbox_id}",
                 headers={"X-API-KEY": dash_daemon.api_key}, timeout=60)


def test_the_terminal_runs_what_is_typed(page, dash_daemon):
    sandbox_id = _create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#terminal[data-pid]", timeout=15000)
    page.click("#terminal")
    page.keyboard.type("echo hi-$((6*7))\n")
    # The shell's answer, not the echo of what was typed: 42 is only in the output.
    # (Selectors, not wait_for_function: the page's CSP forbids the eval that polls it.)
    page.wait_for_selector("#terminal .xterm-rows:has-text('hi-42')", timeout=15000)
    screenshot(page, "terminal")
    # Leaving the page ends the shell: the page sends it SIGKILL, and the shell is gone.
    assert [p["config"]["cmd"] for p in _processes(dash_daemon, sandbox_id)] == ["/bin/bash"]
    with page.expect_request("**/process.Process/SendSignal") as kill:
        page.click("a[href='#/']")
    assert '"SIGNAL_SIGKILL"' in kill.value.post_data
    assert wait_until(lambda: not _processes(dash_daemon, sandbox_id), seconds=30), \
        _processes(dash_daemon, sandbox_id)
    httpx.delete(f"{dash_daemon.url}/sandboxes/{sandbox_id}",
                 headers={"X-API-KEY": dash_daemon.api_key}, timeout=60)


def test_a_wrong_key_is_refused_with_one_line(page, dash_daemon):
    page.goto(dash_daemon.url + "/dashboard")
    page.fill("#api-key", "e2b_" + "0" * 40)
    page.click("#login")
    error = page.wait_for_selector("#error:not([hidden])")
    assert "not valid" in error.text_content()
    assert page.locator("#nav").is_hidden()
    assert not page.context.cookies()


def test_another_teams_sandboxes_are_invisible(page, dash_daemon, second_team_key):
    # The daemon's own key is an admin's (who sees every team): this is a member of "second".
    theirs = _create_host_sandbox(dash_daemon, dash_daemon.api_key, {"team": "default"})
    mine = _create_host_sandbox(dash_daemon, second_team_key, {"team": "second"})
    log_in(page, dash_daemon, second_team_key)
    page.wait_for_selector(f"#sandboxes tr[data-id='{mine}']")
    assert page.locator(f"#sandboxes tr[data-id='{theirs}']").count() == 0
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{theirs}")
    page.wait_for_selector("#error:not([hidden])")
    for sid, key in ((theirs, dash_daemon.api_key), (mine, second_team_key)):
        httpx.delete(f"{dash_daemon.url}/sandboxes/{sid}", headers={"X-API-KEY": key}, timeout=60)


def test_the_cookie_is_httponly_samesite_strict_and_gone_after_logout(page, dash_daemon):
    log_in(page, dash_daemon)
    [cookie] = page.context.cookies()
    assert cookie["name"] == "abx_session"
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert dash_daemon.api_key not in cookie["value"]
    assert page.evaluate("document.cookie") == ""  # no script can read it
    page.click("#logout")
    page.wait_for_selector("#api-key")
    assert not page.context.cookies()
    # The session is over on the daemon too, not just forgotten by the browser.
    r = httpx.get(dash_daemon.url + "/dashboard/session",
                  cookies={"abx_session": cookie["value"]}, timeout=10)
    assert r.status_code == 401


def test_an_ended_session_brings_the_login_page_back(page, dash_daemon):
    log_in(page, dash_daemon)
    [cookie] = page.context.cookies()
    jar = {"abx_session": cookie["value"]}
    csrf = httpx.get(dash_daemon.url + "/dashboard/session", cookies=jar, timeout=10).json()["csrf"]
    r = httpx.post(dash_daemon.url + "/dashboard/logout", cookies=jar, headers={"X-ABX-CSRF": csrf},
                   timeout=10)  # as another tab would
    assert r.status_code == 204
    page.fill("#new-template", "host")
    page.click("#create")
    page.wait_for_selector("#api-key")
    assert "session has ended" in page.text_content("#error")


def test_a_state_changing_request_without_the_csrf_header_is_refused(page, dash_daemon):
    log_in(page, dash_daemon)
    refused = page.evaluate("""async () => {
        const r = await fetch('/sandboxes', {method: 'POST',
            headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({templateID: 'host'})});
        return [r.status, (await r.json()).message]; }""")
    assert refused[0] == 401
    assert "X-ABX-CSRF" in refused[1]
    # A sandbox's envd: the same rule through E2B's routing headers.
    sandbox_id = _create_host_sandbox(dash_daemon, dash_daemon.api_key)
    [cookie] = page.context.cookies()
    jar = {"abx_session": cookie["value"]}
    csrf = httpx.get(dash_daemon.url + "/dashboard/session", cookies=jar, timeout=10).json()["csrf"]
    # (Refused ones go without a body: a refusal does not read it, the server then
    # closes the connection, and a client still sending may see a reset.)
    for token, want in (("", 401), ("0" * 64, 401), (csrf, 200)):
        r = httpx.post(dash_daemon.url + "/process.Process/List", timeout=10, cookies=jar,
                       content=b"{}" if want == 200 else b"",
                       headers={"E2b-Sandbox-Id": sandbox_id, "X-ABX-CSRF": token,
                                "Content-Type": "application/json"})
        assert r.status_code == want, (token, r.text)
    httpx.delete(f"{dash_daemon.url}/sandboxes/{sandbox_id}",
                 headers={"X-API-KEY": dash_daemon.api_key}, timeout=60)
    # Reading is fine with the cookie alone (the event stream cannot send headers).
    assert page.evaluate("async () => (await fetch('/sandboxes')).status") == 200
    # Logging in takes JSON only: a cross-site form cannot post it.
    r = httpx.post(dash_daemon.url + "/dashboard/login", content=b"",
                   headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
    assert r.status_code == 415
