"""Issue 30 in a real browser: axe-core (the engine the Python package axe-playwright-python bundles) finds no
serious or critical violation on any lesson, the glossary, the errata or the Paper figures, as each page opens, nor
on lesson 5 while its demo plays;
and lesson 5's demo has the controls and the kinetic-temperature plot its steps ask for, with a link into the lab
that opens what the demo runs.

One server and one browser for the module (tests/conftest.py).
"""
from __future__ import annotations

import html
import re
from urllib.parse import parse_qs

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM, new_page, serious

from lessons import load_lessons

playwright_api = pytest.importorskip("playwright.sync_api")
axe_api = pytest.importorskip("axe_playwright_python.sync_playwright")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

PAGES = [f"?tab=lessons&lesson={lesson.slug}" for lesson in load_lessons()] + \
        ["?tab=lessons&lesson=glossary", "?tab=lessons&lesson=errata", "?tab=figures"]


@pytest.fixture(scope="module")
def axe():
    return axe_api.Axe()


@pytest.fixture
def page(browser):
    pg = new_page(browser)
    yield pg
    pg.close()


@pytest.mark.parametrize("query", PAGES, ids=lambda q: q.split("=")[-1])
def test_no_serious_axe_violation(page, server, axe, query):
    page.goto(server.url + query, timeout=120_000)
    page.locator(".figure-plot" if "figures" in query else ".lesson-body").first.wait_for()
    if "figures" in query:
        page.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0")
    else:   # the math is typeset (its drawing is what the rules check)
        page.locator(".lesson-body mjx-container").first.wait_for()
    assert serious(axe.run(page)) == []
    assert not page.errors, page.errors


def link_query(href: str) -> dict:
    return {k: v[0] for k, v in parse_qs(html.unescape(href).lstrip("?")).items()}


def test_lesson_5_demo_has_its_steps_controls_and_plot_and_its_link_opens_the_same_run(page, server, axe):
    """Lesson 5's "Try this": set V = 0, C = 0.2 in the corrected panel, Bhat = 4, watch the kinetic temperature.
    Before the issue the demo had Play, Step, Reset and Speed alone, and its link opened 2000 chains to its 1000."""
    page.goto(server.url + "?tab=lessons&lesson=05-sghmc", timeout=120_000)
    page.locator(".lesson-demo-start button").wait_for()
    for css in ("demo-control-V", "demo-control-a-C", "demo-control-b-C", "demo-control-a-Bhat",
                "demo-control-b-Bhat"):
        assert page.locator(f".{css} input").count() == 1, css
    header = page.locator(".lesson-demo-header a.lesson-demo").first
    assert "1000 chains" in header.evaluate("a => a.parentElement.textContent")
    assert link_query(header.get_attribute("href"))["n"] == "1000"
    field = page.locator(".demo-control-b-C input")
    field.fill("0.2")
    field.press("Enter")
    top = page.locator(".lesson-demo-top a.lesson-demo").first
    for _ in range(300):
        if link_query(top.get_attribute("href")).get("b.C") == "0.2":
            break
        page.wait_for_timeout(100)
    assert link_query(top.get_attribute("href")).get("b.C") == "0.2"
    assert link_query(header.get_attribute("href")) == link_query(top.get_attribute("href"))

    page.locator(".lesson-demo-start button").click()
    page.locator(".lesson-demo-buttons .play-button button").wait_for()
    page.wait_for_function("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if (m.name === "history-kinetic temperature") return true; return false; }""", timeout=120_000)
    page.wait_for_function("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if (m.name && m.name.startsWith("history-kinetic temperature-")
            && (m.data.get ? m.data.get("t") : m.data["t"]).length > 0) return true; return false; }""",
                           timeout=120_000)
    # the run's figures beside the demo's own plot, laid out at their width (once they were at zero width)
    widths = [box["width"] for box in (c.bounding_box() for c in page.locator(".lesson-live-demo .bk-Canvas").all())
              if box]
    assert len(widths) >= 4 and min(widths) > 100, widths
    # axe-core while the demo plays (its live figures, the trace and KL history made at its first step)
    play = page.locator(".lesson-demo-buttons .play-button button")
    if not re.search("Pause", play.inner_text()):
        play.click()
    page.wait_for_function("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if (m.name === "kl-history") return true; return false; }""", timeout=120_000)
    assert re.search("Pause", play.inner_text())
    assert serious(axe.run(page)) == []
    text = play.inner_text()
    if re.search("Pause", text):
        play.click()
    page.screenshot(path=str(ARTIFACTS / "lesson5-demo.png"))
    assert not page.errors, page.errors
