"""A page's life on the server, in a real browser: the Lessons and Paper figures sections are built when
first opened and are the same as ever; a lesson link opens its lesson; closed pages end their sessions,
and closing one mid-frame leaves no traceback in the server's log (issue 16).

Screenshots go to test-artifacts/ (git-ignored) for a person to look at.
"""
from __future__ import annotations

import re
import time

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM, AppServer, wait_for_step

from lessons import load_lessons
from samplers.reproduce import REPRODUCTIONS

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

LESSONS = load_lessons()
HEAVY_PLAY = "?pot=banana&s=sghmc&n=20000&speed=40&play=1"


def new_page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.set_default_timeout(60_000)
    return page


def tab(page, title: str):
    page.get_by_text(title, exact=True).first.click()


def heading(page) -> str:
    return page.locator(".present-title").first.inner_text()


def wait_url(page, pattern: str):
    page.wait_for_function(f"() => /{pattern}/.test(decodeURIComponent(window.location.search))")


def test_lessons_and_figures_are_built_when_first_opened_and_read_as_before(browser, server):
    page = new_page(browser)
    page.goto(server.url, timeout=120_000)
    page.locator("[data-metric='t-a']").first.wait_for()
    assert page.locator(".lessons").count() == 0 and page.locator(".figures").count() == 0
    tab(page, "Lessons")
    page.locator(".lesson-body mjx-container").first.wait_for()         # the first lesson, its math typeset
    wait_url(page, f"tab=lessons.*lesson={LESSONS[0].slug}")
    page.locator(".lesson-list label").filter(has_text=LESSONS[1].title).first.click()
    wait_url(page, f"lesson={LESSONS[1].slug}")
    page.locator(".lesson-body").filter(has_text=re.compile(re.escape(LESSONS[1].title.split(":")[0]))).first.wait_for()
    page.locator(".present-toggle button").first.click()
    page.locator(".present-title").first.wait_for()
    assert heading(page) == LESSONS[1].title
    page.screenshot(path=str(ARTIFACTS / "lazy-lessons-present.png"))
    page.locator(".present-toggle button").first.click()
    tab(page, "Paper figures")
    page.locator(".figure-title").first.wait_for()
    assert page.locator(".figure-title").all_inner_texts() == [r.title for r in REPRODUCTIONS.values()]
    wait_url(page, "tab=figures")
    page.screenshot(path=str(ARTIFACTS / "lazy-figures.png"))
    tab(page, "Lessons")                                                 # built once: as it was left
    page.locator(".lesson-body").filter(has_text=re.compile(re.escape(LESSONS[1].title.split(":")[0]))).first.wait_for()
    tab(page, "Lab")
    page.locator("[data-metric='t-a']").first.wait_for(state="visible")
    page.wait_for_function("() => !window.location.search.includes('tab=')")
    assert not page.errors, page.errors
    page.close()


def test_a_lesson_link_opens_its_lesson_and_builds_the_lab_only_when_it_is_opened(browser, server):
    lesson = LESSONS[2]
    page = new_page(browser)
    page.goto(server.url + f"?tab=lessons&lesson={lesson.slug}&present=1&play=1", timeout=120_000)
    page.locator(".lesson-body mjx-container").first.wait_for()
    assert heading(page) == lesson.title
    checked = page.locator(".lesson-list input:checked")
    assert checked.count() == 1
    assert checked.first.evaluate("el => el.closest('label').textContent").strip() == lesson.title
    assert page.locator("[data-metric='t-a']").count() == 0               # the lab: not built, not running
    page.screenshot(path=str(ARTIFACTS / "lesson-link-present.png"))
    tab(page, "Lab")
    page.locator("[data-metric='t-a']").first.wait_for()
    wait_for_step(page, 20)                                              # the link's play=1, once the lab is shown
    page.wait_for_function("() => !window.location.search.includes('lesson=')")
    assert not page.errors, page.errors
    page.close()


def _sessions(log: str) -> tuple[int, int]:
    return len(re.findall(r"Session \d+ created", log)), len(re.findall(r"Session \d+ destroyed", log))


def test_closed_pages_end_their_sessions_and_leave_no_traceback(browser):
    """Pages closed mid-frame (a heavy lab playing; a lesson with its demo running) and during load. A
    keep-alive ping every 50 ms (Bokeh's default: 37 s) makes Bokeh let go of a closed page's session
    while its last messages are still queued, every time rather than once in a while: without
    app.views.page.LateMessageFilter each of them left an AssertionError traceback in the log."""
    srv = AppServer(extra_args=("--keep-alive", "50"), env={"PANEL_LOG_LEVEL": "INFO"}).wait()
    try:
        for query in (HEAVY_PLAY, "?tab=lessons&lesson=05-sghmc", HEAVY_PLAY, "?tab=lessons&lesson=05-sghmc", ""):
            page = new_page(browser)
            page.goto(srv.url + query, timeout=120_000)
            if "lesson=" in query:
                page.locator(".lesson-demo-start button").first.click()
            if query:
                page.locator("[data-metric='t-a']").first.wait_for(timeout=120_000)
                wait_for_step(page, 30, timeout=120)
            page.close()                      # mid-frame, or (the last one) while the page loads
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            created, destroyed = _sessions(srv.log.read_text(errors="replace"))
            if created == destroyed:
                break
            time.sleep(0.5)
    finally:
        srv.stop()
    log = srv.log.read_text(errors="replace")
    assert _sessions(log) == (6, 6), _sessions(log)      # 5 pages and the readiness probe's GET
    bad = [line for line in log.splitlines() if re.search(r"Traceback|ERROR|Exception|Error\b", line)]
    assert not bad, bad[:10]
