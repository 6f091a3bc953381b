"""The dashboard's other pages in a real browser against a real daemon: templates (size,
layers, a rebuild's log, remove), keys and usage (admins only), settings and health, a
sandbox's charts and events, drag-and-drop upload and viewing a file as text; and that
what a sandbox or caller controls lands as text, never markup."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile

import httpx
import pytest
from dashboard_pages import create_host_sandbox, kill_sandbox, log_in, make_key, screenshot

pytestmark = pytest.mark.offline


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _tiny_image() -> bytes:
    """An OCI layout tar of one layer holding /app: an import needs nothing from the net."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as layer_tar:
        _add(layer_tar, "app/hello.txt", b"hello\n")
    layer = blob(raw.getvalue(), "application/vnd.oci.image.layer.v1.tar")
    config = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                              "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode(),
                  "application/vnd.oci.image.config.v1+json")
    manifest = blob(json.dumps({"schemaVersion": 2, "config": config, "layers": [layer]}).encode(),
                    "application/vnd.oci.image.manifest.v1+json")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        _add(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add(tar, "index.json", json.dumps({"schemaVersion": 2, "manifests": [manifest]}).encode())
        for digest, data in blobs.items():
            _add(tar, f"blobs/sha256/{digest}", data)
    return out.getvalue()


def _import_template(daemon, name: str, key: str) -> None:
    r = httpx.post(f"{daemon.url}/abx/v1/templates/{name}/import", content=_tiny_image(),
                   headers={"X-API-KEY": key, "Content-Type": "application/x-tar"}, timeout=120)
    assert r.status_code == 200 and '"done"' in r.text, r.text


def test_templates_list_rebuild_log_and_remove(page, dash_daemon):
    name = f"tiny-{page.scheme}"
    _import_template(dash_daemon, name, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.click("nav a[data-page='templates']")
    row = page.wait_for_selector(f"#templates tr[data-name='{name}']")
    cells = [c.text_content() for c in row.query_selector_all("td")]
    assert cells[2] == "built" and cells[4] == "1", cells  # one layer
    assert cells[3].endswith("B") and cells[5] == "default", cells
    assert page.locator("#templates tr[data-name='host']").count() == 1
    screenshot(page, "templates")

    # An imported image has no spec to build from: the build's own answer shows, as text.
    row.query_selector("[data-action='rebuild']").click()
    page.wait_for_selector("#build-log:has-text('error:')", timeout=30000)
    assert page.locator("#error:not([hidden])").count() == 1

    remove = f"#templates tr[data-name='{name}'] [data-action='remove']"
    page.click(remove)
    assert page.text_content(remove) == "Really remove?"  # the first click removes nothing
    assert httpx.get(f"{dash_daemon.url}/abx/v1/templates/{name}", timeout=10,
                     headers={"X-API-KEY": dash_daemon.api_key}).status_code == 200
    page.click(remove)
    page.wait_for_selector(f"#templates tr[data-name='{name}']", state="detached", timeout=15000)
    assert httpx.get(f"{dash_daemon.url}/abx/v1/templates/{name}", timeout=10,
                     headers={"X-API-KEY": dash_daemon.api_key}).status_code == 404


def test_a_member_cannot_remove_a_built_in_template(page, dash_daemon, second_team_key):
    log_in(page, dash_daemon, second_team_key)
    page.goto(f"{dash_daemon.url}/dashboard#/templates")
    row = page.wait_for_selector("#templates tr[data-name='host']")
    row.query_selector("[data-action='remove']").click()
    row.query_selector("[data-action='remove']").click()
    error = page.wait_for_selector("#error:not([hidden])")
    assert "only an admin" in error.text_content()
    page.wait_for_selector("#templates tr[data-name='host']")


def test_an_admin_creates_and_revokes_a_key_and_sees_usage(page, dash_daemon):
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)  # some use to show
    log_in(page, dash_daemon)
    page.click("nav a[data-page='keys']")
    page.wait_for_selector("#keys tbody tr")
    page.fill("#key-team", f"third-{page.scheme}")
    page.fill("#key-name", "<b>from-dash</b>")
    page.click("#create-key")
    shown = page.wait_for_selector("#new-key:not([hidden]) code")
    key = shown.text_content()
    assert key.startswith("e2b_")
    assert httpx.get(dash_daemon.url + "/sandboxes", headers={"X-API-KEY": key}, timeout=10).status_code == 200
    row = page.wait_for_selector(f"#keys tr:has-text('third-{page.scheme}')")
    assert "<b>from-dash</b>" in row.text_content()  # a name is text, not markup
    assert page.locator("#keys b").count() == 0
    page.wait_for_selector("#usage-table tr[data-team='default']")
    screenshot(page, "keys")
    row.query_selector("[data-action='revoke']").click()
    page.wait_for_selector(f"#keys tr:has-text('third-{page.scheme}')", state="detached")
    assert httpx.get(dash_daemon.url + "/sandboxes", headers={"X-API-KEY": key}, timeout=10).status_code == 401
    kill_sandbox(dash_daemon, sandbox_id)


def test_a_member_has_no_keys_page(page, dash_daemon, second_team_key):
    log_in(page, dash_daemon, second_team_key)
    assert page.locator("nav a[data-page='keys']").is_hidden()
    page.goto(f"{dash_daemon.url}/dashboard#/keys")
    error = page.wait_for_selector("#error:not([hidden])")
    assert "admin" in error.text_content()
    assert page.locator("#keys tbody tr").count() == 0


def test_settings_show_version_health_and_limits(page, dash_daemon):
    version = httpx.get(dash_daemon.url + "/abx/v1/version", headers={"X-API-KEY": dash_daemon.api_key},
                        timeout=10).json()
    log_in(page, dash_daemon)
    page.click("nav a[data-page='settings']")
    page.wait_for_selector("#health:has-text('healthy')")
    assert version["version"] in page.text_content("#settings")
    assert "Sandboxes at once" in page.text_content("#settings")
    screenshot(page, "settings")


def test_an_admin_sees_every_team_with_its_owner(page, dash_daemon, second_team_key):
    theirs = create_host_sandbox(dash_daemon, second_team_key, {"note": "<img src=x>"})
    mine = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    row = page.wait_for_selector(f"#sandboxes tr[data-id='{theirs}']")
    assert "second" in row.text_content()
    assert "<img src=x>" in row.text_content()  # metadata is text
    assert page.locator("#sandboxes img").count() == 0
    assert row.query_selector("[data-action='kill']") is None  # the API acts on its own team only
    assert page.locator(f"#sandboxes tr[data-id='{mine}'] [data-action='kill']").count() == 1
    page.fill("#filter", "second")
    assert page.locator("#sandboxes tbody tr").count() == 1
    for sid, key in ((theirs, second_team_key), (mine, dash_daemon.api_key)):
        kill_sandbox(dash_daemon, sid, key)


def test_a_sandbox_shows_live_charts_and_events(page, dash_daemon):
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#chart-memory:not([data-points='0'])")
    assert "MiB" in page.text_content("#chart-memory .chart-now")
    # Network: the rate since the sample before, and the totals received and sent.
    network = page.text_content("#chart-network .chart-now")
    assert "/s" in network and " in " in network and " out " in network, network
    # The event stream adds samples: a second point comes without a reload.
    page.wait_for_selector("#chart-cpu:not([data-points='0']):not([data-points='1'])", timeout=30000)
    assert "created" in page.text_content("#logs")
    # A change made elsewhere shows in its events, and its end as a banner.
    r = httpx.post(f"{dash_daemon.url}/sandboxes/{sandbox_id}/timeout", json={"timeout": 900},
                   headers={"X-API-KEY": dash_daemon.api_key}, timeout=10)
    assert r.status_code == 204, r.text
    page.wait_for_selector("#logs:has-text('timeout set')", timeout=15000)
    screenshot(page, "sandbox-charts")
    kill_sandbox(dash_daemon, sandbox_id)
    page.wait_for_selector("#ended:not([hidden])", timeout=15000)


def test_drop_a_file_to_upload_it_and_view_it_as_text(page, dash_daemon):
    sandbox_id = create_host_sandbox(dash_daemon, dash_daemon.api_key)
    log_in(page, dash_daemon)
    page.goto(f"{dash_daemon.url}/dashboard#/sandbox/{sandbox_id}")
    page.wait_for_selector("#files")
    page.fill("#dir", "/tmp")
    page.press("#dir", "Enter")
    page.wait_for_selector("#files tbody tr")
    text = "<script>document.title='owned'</script><img src=x>\nline two\n"
    transfer = page.evaluate_handle("""(text) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([text], 'dropped.html', {type: 'text/html'}));
        return transfer; }""", text)
    page.dispatch_event("section:has(#files)", "dragover", {"dataTransfer": transfer})
    page.dispatch_event("section:has(#files)", "drop", {"dataTransfer": transfer})
    row = page.wait_for_selector("#files tr[data-name='dropped.html']", timeout=15000)
    row.query_selector("[data-action='view']").click()
    viewer = page.wait_for_selector("#file-text")
    assert viewer.text_content() == text
    assert page.locator("#viewer script, #viewer img").count() == 0
    assert page.title() != "owned"
    kill_sandbox(dash_daemon, sandbox_id)
