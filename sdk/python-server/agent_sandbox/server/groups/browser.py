"""`browser`: one headless Chromium page driven by Playwright, imported only when first used.

Playwright's own browser download needs the internet, so it drives an installed Chromium
(Debian's /usr/bin/chromium, or $ABX_BROWSER_EXECUTABLE). Without Playwright or a browser
every endpoint answers 503 with the reason. Playwright's sync API must stay on the thread
that started it, so one worker thread owns the browser and runs each request in turn."""

from __future__ import annotations

import base64
import importlib
import os
import queue
import shutil
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from ..api import Call, row
from ..errors import HttpError, bad_input

EXECUTABLE_ENV = "ABX_BROWSER_EXECUTABLE"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_MS = 30_000
# Chromium's own sandbox needs user namespaces or setuid, which a sandbox's (or root's)
# Chromium does not get; the rest keeps a headless browser from dialing Google's services
# (updates, sync, safe browsing, QUIC probes) and from looking for a GPU it has not got.
LAUNCH_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-gpu", "--disable-quic"]


def executable() -> str | None:
    """The browser binary to drive, or None."""
    configured = os.environ.get(EXECUTABLE_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable_reason() -> str | None:
    """Why the browser group cannot work here, in one line; None when it can."""
    try:
        importlib.import_module("playwright.sync_api")
    except ImportError:
        return ("Playwright is not installed in this sandbox (pip install playwright; its "
                "browser download is not needed: a Chromium package is used)")
    if executable() is None:
        return (f"no Chromium found (install Debian's chromium, or set ${EXECUTABLE_ENV} to a "
                "browser binary)")
    return None


class Browser:
    """The worker thread owning Playwright, its browser and its one page. When the browser
    cannot start, every waiting and later request fails with a 503 naming why (a request
    would otherwise wait for ever on a thread that is gone)."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
        self.failure: str | None = None
        self.thread = threading.Thread(target=self._work, name="browser", daemon=True)
        self.thread.start()

    def run(self, job: Callable[[Any], Any]) -> Any:
        """`job(page)` on the worker thread; its result or its exception."""
        future: Future[Any] = Future()
        self.jobs.put((job, future))
        while True:
            try:
                return future.result(timeout=1.0)
            except FutureTimeout:
                if not self.thread.is_alive() and not future.done():
                    raise HttpError(503, self.failure or "the browser stopped") from None

    def stop(self) -> None:
        """Closes the browser and ends the worker (after the requests already queued)."""
        self.jobs.put(None)
        self.thread.join(timeout=30)

    def _work(self) -> None:
        try:
            self._serve()
        except BaseException as error:  # the launch failed: say why to whoever waits
            self.failure = "the browser did not start: " + first_line(error)
        while True:
            try:
                item = self.jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1].set_exception(HttpError(503, self.failure or "the browser stopped"))

    def _serve(self) -> None:
        sync_playwright = importlib.import_module("playwright.sync_api").sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable(), headless=True,
                                                 args=LAUNCH_ARGS)
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            while True:
                item = self.jobs.get()
                if item is None:
                    break
                job, future = item
                try:
                    future.set_result(job(page))
                except BaseException as error:
                    future.set_exception(error)
            browser.close()


def first_line(error: BaseException) -> str:
    """An exception's message as one line (Playwright's carry the browser's log after it)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _browser(call: Call) -> Browser:
    reason = unavailable_reason()
    if reason:
        raise HttpError(503, reason)
    with call.app.state_lock:
        found = call.app.state.get("browser")
        if found is None or not found.thread.is_alive():
            found = call.app.state["browser"] = Browser()
        return found


def navigate(call: Call) -> dict[str, Any]:
    url: str = call.args["url"]
    if not url.startswith(("http://", "https://", "file://", "about:", "data:")):
        raise bad_input("url", f"{url!r} is not an http(s), file, about or data URL")

    def go(page: Any) -> dict[str, Any]:
        response = page.goto(url, wait_until=call.args["wait_until"])
        return {"url": page.url, "title": page.title(),
                "status": response.status if response is not None else None}

    return _browser(call).run(go)  # type: ignore[no-any-return]


def screenshot(call: Call) -> dict[str, Any]:
    def shoot(page: Any) -> dict[str, Any]:
        png = page.screenshot(full_page=call.args["full_page"], type="png")
        return {"url": page.url, "format": "png", "data": base64.b64encode(png).decode()}

    return _browser(call).run(shoot)  # type: ignore[no-any-return]


def click(call: Call) -> dict[str, Any]:
    selector = _selector(call)
    _browser(call).run(lambda page: page.click(selector))
    return {"clicked": selector}


def type_text(call: Call) -> dict[str, Any]:
    selector = _selector(call)
    text: str = call.args["text"]
    _browser(call).run(lambda page: page.fill(selector, text))
    return {"typed": len(text), "selector": selector}


def evaluate(call: Call) -> dict[str, Any]:
    expression: str = call.args["expression"]
    if not expression.strip():
        raise bad_input("expression", "empty expression")
    return {"result": _browser(call).run(lambda page: page.evaluate(expression))}


def content(call: Call) -> dict[str, Any]:
    def read(page: Any) -> dict[str, Any]:
        return {"url": page.url, "title": page.title(), "html": page.content()}

    return _browser(call).run(read)  # type: ignore[no-any-return]


def _selector(call: Call) -> str:
    selector: str = call.args["selector"]
    if not selector.strip():
        raise bad_input("selector", "empty selector")
    return selector


_SELECTOR = {"selector": {"type": "string", "description": "a Playwright selector"}}
ROWS = [
    row("POST", "/browser/navigate", "browser", navigate, "Opens `url` in the page",
        {"url": {"type": "string"},
         "wait_until": {"enum": ["load", "domcontentloaded", "networkidle", "commit"],
                        "default": "load"}}, ("url",)),
    row("GET", "/browser/screenshot", "browser", screenshot,
        "The page as a base64 PNG", {"full_page": {"type": "boolean", "default": False}}),
    row("POST", "/browser/click", "browser", click, "Clicks the element matching `selector`",
        _SELECTOR, ("selector",)),
    row("POST", "/browser/type", "browser", type_text,
        "Fills the input matching `selector` with `text`",
        {**_SELECTOR, "text": {"type": "string"}}, ("selector", "text")),
    row("POST", "/browser/evaluate", "browser", evaluate,
        "Evaluates a JavaScript expression in the page; its JSON value",
        {"expression": {"type": "string"}}, ("expression",)),
    row("GET", "/browser/content", "browser", content, "The page's URL, title and HTML"),
]
