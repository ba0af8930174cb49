"""Issue 12, items 9 and 10 in a real browser: the Paper figures tab reads as figures of papers (titles,
verdicts, rounded tables, downloads), and the recipe editor's cells show their whole formula.

Same server and browser as tests/test_app_browser.py; screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM

from samplers.reproduce import REPRODUCTIONS

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

FILE_NAME = re.compile(r"\.(png|svg|csv|json|md)\b|^[\w-]+$")


@pytest.fixture
def page(browser):
    pages = []

    def make(width=1280, height=800):
        pg = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
        pg.errors = []
        pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
        pg.set_default_timeout(60_000)
        pages.append(pg)
        return pg
    yield make
    for pg in pages:
        pg.close()


def significant_digits(cell: str) -> int:
    mantissa = cell.split("×")[0].lstrip("-")
    return len(mantissa.replace(".", "").lstrip("0"))


@pytest.mark.parametrize("width, height", [(1280, 800), (853, 533), (390, 800)])
def test_figures_are_headed_by_titles_with_verdicts_and_rounded_tables(page, server, width, height):
    pg = page(width, height)
    pg.goto(server.url + "?tab=figures", timeout=120_000)
    pg.locator(".figure-title").first.wait_for()
    titles = pg.locator(".figure-title").all_inner_texts()
    assert titles == [r.title for r in REPRODUCTIONS.values()]
    assert not any(FILE_NAME.search(t) for t in titles), titles
    papers = pg.locator("h2.paper").all_inner_texts()
    assert papers and papers[0].startswith(next(iter(REPRODUCTIONS.values())).paper.authors)

    marks = pg.locator("ul.verdicts .mark").all_inner_texts()
    assert marks and set(marks) <= {"✓", "✗", "?"} and "✗" in marks   # docs/reproductions.md: some do not hold

    cells = pg.locator("table.asset-table td").all_inner_texts()
    decimals = [c for c in cells if re.fullmatch(r"-?\d*\.\d+|-?[\d.]+×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", c)]
    assert len(decimals) > 50
    assert all(significant_digits(c) <= 4 for c in decimals), [c for c in decimals if significant_digits(c) > 4]
    assert pg.locator(".figure-download").count() == 3 * len(REPRODUCTIONS)

    # the page never scrolls sideways (a wide table scrolls in its own box)
    assert pg.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth + 1")
    pg.screenshot(path=str(ARTIFACTS / f"figures-{width}.png"))
    assert not pg.errors, pg.errors


def test_the_csv_download_keeps_every_digit(page, server):
    pg = page()
    pg.goto(server.url + "?tab=figures", timeout=120_000)
    button = pg.locator(".figure-recipe-fig2-left .figure-download").first
    button.wait_for()
    with pg.expect_download() as info:
        button.locator("button, a").first.click()
    data = open(info.value.path(), encoding="utf-8").read()
    assert info.value.suggested_filename == "recipe-fig2-left.csv"
    assert re.search(r"\d\.\d{8,}", data), data[:200]


def test_recipe_cells_show_their_whole_formula_and_a_tooltip(page, server):
    pg = page()
    pg.goto(server.url + "?pot=double-well&s=sgrhmc&recipe=1", timeout=120_000)
    cell = pg.locator(".cell-Q-0-1").first
    cell.wait_for()
    box = pg.locator(".cell-Q-0-1 input").first
    assert box.input_value() == "-sqrt(1.5)*abs(U + 1.5)**(1/4)"
    assert cell.get_attribute("title") == box.input_value()
    for css in (".cell-D-1-1", ".cell-Q-0-1", ".cell-Q-1-0"):
        inner = pg.locator(f"{css} input").first
        assert inner.evaluate("e => e.scrollWidth <= e.clientWidth"), css
    assert not pg.errors, pg.errors
