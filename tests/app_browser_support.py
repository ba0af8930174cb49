"""Helpers for the app's browser tests: a `panel serve app` subprocess and a headless Chromium.

Debian's chromium is driven by Playwright's sync API (Playwright cannot download its own
browsers here). Everything waits for conditions, never for fixed times.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppServer:
    """`panel serve app` on a free port, from the repository root, as the README runs it; `app` serves
    another app directory (its URL path is the directory's name), `python_args` go before `-m panel`
    (e.g. a profiler's), `env` adds to the environment (PANEL_LOG_LEVEL=INFO logs each session's
    creation and destruction), `root` serves another checkout (a benchmark's baseline)."""

    def __init__(self, extra_args=(), app: str = "app", python_args=(), env=None, root: Path = ROOT):
        self.port = free_port()
        self.url = f"http://localhost:{self.port}/{Path(app).name}"
        self.log = ARTIFACTS / f"server-{self.port}.log"
        ARTIFACTS.mkdir(exist_ok=True)
        self._log = open(self.log, "w")
        self.proc = subprocess.Popen(
            [sys.executable, *python_args, "-m", "panel", "serve", app, "--port", str(self.port),
             "--address", "127.0.0.1", "--allow-websocket-origin", f"localhost:{self.port}",
             "--allow-websocket-origin", f"127.0.0.1:{self.port}",
             "--unused-session-lifetime", "5000", "--check-unused-sessions", "1000", *extra_args],
            cwd=root, stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "BOKEH_LOG_LEVEL": "info", "BOKEH_VALIDATE_DOC": "true",
                 "BOKEH_PERFORM_ERROR_DIAGNOSTICS": "true", **(env or {})})

    def wait(self, timeout: float = 90.0) -> AppServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"panel serve exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"panel serve did not answer within {timeout} s")

    def server_errors(self) -> list[str]:
        """Tracebacks in the server log, less two races of a page that closes mid-frame, both harmless
        to the other sessions: Bokeh's, when the page's last message arrives after its session was
        discarded (bokeh/server/connection.py: assert self._session; the app itself logs it as one line
        since app/views/page.py, LateMessageFilter). (A closed page's unsent frame is kept out of the log
        by the app itself: app/views/frame_loop.py, quiet_closed_sockets.)"""
        text = self.log.read_text(errors="replace")
        blocks = re.split(r"\n(?=\d{4}-\d\d-\d\d )", text)
        benign = ("assert self._session is not None",)
        return [b[:300] for b in blocks if re.search(r"Traceback|ERROR|Exception", b)
                and not any(s in b for s in benign)]

    def stop(self):
        end_process(self.proc)
        self._log.close()


def end_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL past the grace (a Panel process with sessions can ignore SIGTERM)."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()


def metric(page, name: str, run: str = "a") -> str:
    return page.locator(f"[data-metric='{name}-{run}']").first.inner_text()


def metric_number(page, name: str, run: str = "a") -> float:
    text = metric(page, name, run).replace(",", "").split("/")[0].strip()
    try:
        return float(text)
    except ValueError:
        return float("nan")


def wait_for(fn, what: str, timeout: float = 60.0):
    """fn()'s first true value, polled every 0.1 s; AssertionError naming `what` past the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited for {what}")


def wait_for_step(page, at_least: int, run: str = "a", timeout: float = 60.0) -> int:
    """Wait until the run has done `at_least` steps (read from its metrics panel)."""
    deadline = time.monotonic() + timeout
    t = -1
    while time.monotonic() < deadline:
        t = metric_number(page, "t", run)
        if t == t and t >= at_least:
            return int(t)
        page.wait_for_timeout(100)
    raise TimeoutError(f"run {run} reached step {t}, not {at_least}, within {timeout} s")


FIND_MODEL = """() => {
    // the newest model of that name: replaced figures may linger in BokehJS's registry a moment
    window.__lab_model = (name) => {
        let found = null;
        for (const doc of window.Bokeh.documents)
            for (const m of doc.all_models) if (m.name === name) found = m;
        return found;
    };
}"""


def _install(page):
    page.evaluate(FIND_MODEL)


def bokeh_model_count(page, name: str) -> int:
    _install(page)
    return page.evaluate("""(name) => { let n = 0; for (const doc of window.Bokeh.documents)
        for (const m of doc.all_models) if (m.name === name) n++; return n; }""", name)


def bokeh_data(page, name: str, column: str):
    """A column of a named ColumnDataSource as the browser holds it."""
    _install(page)
    return page.evaluate(
        """([name, column]) => {
            const m = window.__lab_model(name);
            if (m) return Array.from(m.data.get ? m.data.get(column) : m.data[column]);
            return null;
        }""", [name, column])


def bokeh_title(page, name: str):
    """The title text of a named Bokeh figure (titles are drawn on the canvas, not in the DOM)."""
    _install(page)
    return page.evaluate(
        """(name) => {
            const m = window.__lab_model(name);
            return m && m.title ? m.title.text : null;
        }""", name)


def wait_title(page, name: str, pattern: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    title = None
    while time.monotonic() < deadline:
        title = bokeh_title(page, name)
        if title and re.search(pattern, title):
            return title
        page.wait_for_timeout(100)
    raise TimeoutError(f"figure {name} has title {title!r}, waited for /{pattern}/")


# the text of an element, shadow roots included (Panel and Bokeh render inside them)
DEEP_TEXT = """el => {
    // Panel and Bokeh render inside shadow roots, which innerText does not enter
    const walk = n => {
        let s = n.shadowRoot ? walk(n.shadowRoot) : "";
        for (const c of n.childNodes) {
            if (c.nodeType === 3) s += c.textContent;
            // what is drawn on the screen: a formula's TeX kept for screen readers (.sr-only) is not
            else if (c.nodeType === 1 && !["STYLE", "SCRIPT", "LINK"].includes(c.tagName)
                     && !c.classList.contains("sr-only")) s += walk(c);
        }
        return s;
    };
    return walk(el).trim();
}"""


def new_page(browser, width: int = 1280, height: int = 800, console: bool = False, **options):
    """A page whose script errors are kept in `page.errors` (with `console`, console errors and failed requests
    too), waiting at most 60 s for any element."""
    pg = browser.new_page(viewport={"width": width, "height": height}, **options)
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    if console:
        pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
        pg.on("requestfailed", lambda r: pg.errors.append(f"{r.failure}: {r.url[:200]}"))
    pg.set_default_timeout(60_000)
    return pg


def serious(results) -> list[str]:
    """axe-core's serious and critical violations, one line each."""
    return [f"{v['id']} ({v['impact']}): {v['nodes'][0]['html'][:160]} — {len(v['nodes'])} nodes"
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
