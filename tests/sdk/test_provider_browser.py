"""The server's browser group end to end: agent-sandbox-server in a `host` sandbox (which
sees the host's /usr, so Debian's chromium is there) with the test venv's Playwright copied
in, driven through ProviderSandbox and the daemon's port proxy. The page is served inside
the sandbox, which has no network beyond its loopback: nothing reaches the internet."""
from __future__ import annotations

import asyncio
import struct
import subprocess
import zlib
from pathlib import Path

import greenlet
import pytest
import websockets
from agent_sandbox import ProviderSandbox, SandboxException
from agent_sandbox import sync as agent_sync
from helpers import abx

pytestmark = pytest.mark.offline

ROOT = Path(__file__).resolve().parents[2]
PKG = "/home/user/pkg"
CHROMIUM = Path("/usr/lib/chromium/chromium")  # Debian's binary behind /usr/bin/chromium
try:
    import playwright
except ImportError:
    playwright = None

PAGE = """<!doctype html><title>start</title>
<body style="margin:0;background:#2060c0">
<input id=q><button id=go onclick="document.title='hi ' + document.querySelector('#q').value;
 document.querySelector('#out').textContent = document.title">go</button>
<p id=out></p><div style="height:2400px;background:#f0a030">tall</div></body>"""


def _png_facts(data: bytes) -> tuple[int, int, int]:
    """Width, height and how many distinct bytes the decoded scanlines hold."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:16]
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


def _install(daemon, sandbox_id: str, packages: list[Path]) -> None:
    """Copies the package directories into PKG as a tar through `abx exec -i` (the files
    API carries no modes, and Playwright's Node driver must stay executable)."""
    tar = ["tar", "c", "--exclude=__pycache__"]
    for package in packages:
        tar += ["-C", str(package.parent), package.name]
    archive = subprocess.run(tar, check=True, capture_output=True, timeout=120).stdout
    r = abx(daemon, "exec", "-i", sandbox_id, "--", "sh", "-c",
            f"mkdir -p {PKG} && tar x -C {PKG}", input=archive, timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def browsing(daemon):
    """A host sandbox serving the page on 8080 and agent-sandbox-server (with Playwright)
    on 9000: its id."""
    if playwright is None or not CHROMIUM.is_file():
        pytest.skip("needs Debian's chromium and the playwright package (make deps)")
    with daemon.api() as api:
        # Playwright's Node driver (160 MiB, on the sandbox's RAM disk) and Chromium need
        # more than the default 512 MiB.
        r = api.post("/sandboxes", json={"templateID": "host", "memoryMB": 2048,
                                         "timeout": 600})
        assert r.status_code == 201, r.text
    sandbox_id = r.json()["sandboxID"]
    try:
        _install(daemon, sandbox_id, [ROOT / "sdk/python-server/agent_sandbox",
                                      Path(websockets.__file__).parent,
                                      Path(playwright.__file__).parent,
                                      Path(greenlet.__file__).parent])
        asyncio.run(_start(daemon, sandbox_id))
        yield sandbox_id
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


async def _start(daemon, sandbox_id: str) -> None:
    sandbox = await ProviderSandbox.connect(sandbox_id, api_url=daemon.url,
                                            api_key=daemon.api_key)
    await sandbox.files.write("/home/user/site/index.html", PAGE)
    await sandbox.commands.run(
        "exec /usr/bin/python3 -m http.server 8080 --bind 127.0.0.1 --directory "
        "/home/user/site >/home/user/site.log 2>&1", background=True, timeout=0)
    await sandbox.commands.run(
        "exec /usr/bin/python3 -m agent_sandbox.server --groups browser "
        ">/home/user/server.log 2>&1", background=True, timeout=0,
        # The binary itself: Debian's /usr/bin/chromium wrapper sources /etc/chromium.d,
        # which the host template's /etc (an allowlist of host files) does not hold.
        envs={"PYTHONPATH": PKG, "ABX_BROWSER_EXECUTABLE": str(CHROMIUM)})
    try:
        await sandbox.server.wait_ready(60)
    except SandboxException:
        log = await sandbox.commands.run("cat /home/user/server.log", check=False)
        pytest.fail(f"the server did not come up:\n{log.stdout}{log.stderr}")


async def test_navigate_type_click_and_screenshot(browsing, conn):
    browser = (await ProviderSandbox.connect(browsing, **conn)).server.browser
    opened = await browser.navigate("http://127.0.0.1:8080/")
    assert opened == {"url": "http://127.0.0.1:8080/", "title": "start", "status": 200}
    await browser.type("#q", "there")
    await browser.click("#go")
    assert await browser.evaluate("document.querySelector('#out').textContent") == "hi there"
    assert (await browser.content())["title"] == "hi there"

    width, height, distinct = _png_facts(await browser.screenshot())
    assert (width, height) == (1280, 720)  # Playwright's default viewport
    assert distinct > 2  # drawn, not one flat colour
    width, height, _ = _png_facts(await browser.screenshot(full_page=True))
    assert width == 1280 and height > 2400


def test_sync_twin_and_a_data_url(browsing, daemon):
    sandbox = agent_sync.ProviderSandbox.connect(browsing, api_url=daemon.url,
                                                 api_key=daemon.api_key)
    page = "data:text/html,<title>inline</title><b>bold</b>"
    assert sandbox.server.browser.navigate(page)["title"] == "inline"
    assert sandbox.server.browser.evaluate("1 + 2") == 3
    assert sandbox.server.browser.screenshot().startswith(b"\x89PNG")


async def test_the_sandbox_has_no_way_out(browsing, conn):
    """The browser inside reaches the sandbox's loopback and nothing else."""
    browser = (await ProviderSandbox.connect(browsing, **conn)).server.browser
    with pytest.raises(SandboxException, match="ERR_"):
        await browser.navigate("http://192.0.2.1/")  # TEST-NET-1: never routed anyway
