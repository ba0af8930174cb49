"""Issue 12, items 9 and 10 in a real browser: the Paper figures tab reads as figures of papers (titles,
verdicts, rounded tables, downloads), and the recipe editor's cells show their whole formula.

Same server and browser as tests/test_app_browser.py; screenshots go to test-artifacts/.
"""
from __future__ import annotations

import re

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM, new_page

from samplers.reproduce import REPRODUCTIONS

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

FILE_NAME = re.compile(r"\.(png|svg|csv|json|md)\b|^[\w-]+$")


@pytest.fixture
def page(browser):
    pages = []

    def make(width=1280, height=800):
        pg = new_page(browser, width, height, console=True, accept_downloads=True)
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


HOVERS = """() => {
    const tips = [], columns = [];
    for (const doc of window.Bokeh.documents)
        for (const m of doc.all_models) {
            const kind = m.constructor.__name__ || m.type;
            if (kind === "HoverTool" && Array.isArray(m.tooltips)) tips.push(m.tooltips.map(t => t[0].trim()));
            if (kind === "ColumnDataSource") {
                const d = m.data;
                for (const [k, v] of (d instanceof Map ? d.entries() : Object.entries(d)))
                    columns.push([k, Array.from(v)]);
            }
        }
    return {tips, columns};
}"""


def test_each_reproduction_is_an_interactive_plot_with_hover_values_at_full_precision(page, server):
    """Issue 30: the CSV of each reproduction drawn by HoloViews (Bokeh in the browser), each point's row in its
    hover tooltip, the numbers as the CSV holds them; the PNG and SVG stay downloadable."""
    import csv

    from app.model.content import ASSETS_DIR
    pg = page()
    pg.goto(server.url + "?tab=figures", timeout=120_000)
    pg.locator(".figure-plot").first.wait_for()
    with_csv = [name for name in REPRODUCTIONS if (ASSETS_DIR / "reproductions" / f"{name}.csv").exists()]
    assert pg.locator(".figure-plot").count() == len(with_csv)
    pg.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0")
    hovers = pg.evaluate(HOVERS)
    assert len(hovers["tips"]) >= len(with_csv), hovers["tips"]
    rows = list(csv.DictReader(open(ASSETS_DIR / "reproductions" / "recipe-fig2-left.csv", encoding="utf-8")))
    kl = sorted(float(r["kl"]) for r in rows)
    assert any(k == "kl" and sorted(v) == kl for k, v in hovers["columns"]), "recipe-fig2-left's kl, every digit"
    assert any(t[:2] == ["row", "kl"] and "diverged" in t for t in hovers["tips"]), hovers["tips"]
    assert pg.locator(".figure-download").count() == 3 * len(REPRODUCTIONS)
    # another column of the table, picked by the reader, is drawn in its place
    pick = pg.locator(".figure-recipe-fig2-left .figure-metric select")
    pick.select_option("diverged")
    pg.wait_for_function("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if ((m.constructor.__name__ || m.type) === "HoverTool" && Array.isArray(m.tooltips) && m.tooltips.length
            && m.tooltips.length > 1 && m.tooltips[1][0].trim() === "diverged") return true; return false; }""",
                         timeout=60_000)
    assert not pg.errors, pg.errors
