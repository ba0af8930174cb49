"""The lab's design editor in a real browser (issue 15): a user builds SGNHT from the empty design by clicks and
typing, sees the residual ✓, runs it and shares the link; a bad cell shows its message naming the cell.

Screenshots at 1280x800, at a phone's width and at 150 % zoom go to test-artifacts/ for a person to look at.
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs, quote, urlparse

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM, wait_for_step
from test_app_browser import Page, deep_text, fill, play_button, select, wait_enabled, wait_text

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

SGNHT_K = "r**2/2 + (xi - 1)**2/2"
SGNHT_CELLS = [("D", 1, 1, "1"), ("Q", 0, 1, "-1"), ("Q", 1, 0, "1"), ("Q", 1, 2, "r"), ("Q", 2, 1, "-r")]


@pytest.fixture
def pages(browser, server):
    made = []

    def make(query="", width=1280, height=800, scale=1):
        p = Page(browser, server, width, height, scale)
        made.append(p)
        p.open(query)
        return p
    yield make
    for p in made:
        p.page.close()


def cell(page, which, i, j):
    return page.locator(f".design-cell-{which}-{i}-{j} input").first


def add_variable(page, name: str, count: int) -> None:
    fill(page, ".aux-new", name, enter=False)
    page.locator(".aux-add button").first.click()
    page.locator(f".aux-name-{count - 1} input").first.wait_for()
    assert page.locator(f".aux-name-{count - 1} input").first.input_value() == name


def type_cell(page, which, i, j, text) -> None:
    box = cell(page, which, i, j)
    box.fill(text)
    box.press("Enter")


def test_a_user_builds_sgnht_from_an_empty_design_runs_it_and_shares_the_link(pages):
    p = pages("?pot=double-well&s=sgld&n=1000")
    page = p.page
    page.locator(".design-button button").first.click()
    page.locator(".design-editor").first.wait_for()
    select(page, ".design-preset", "empty design (θ alone, nothing moves)")
    cell(page, "D", 0, 0).wait_for()
    add_variable(page, "r", 1)
    cell(page, "Q", 1, 1).wait_for()
    add_variable(page, "xi", 2)
    cell(page, "Q", 2, 2).wait_for()
    fill(page, ".design-kinetic", SGNHT_K)
    for which, i, j, text in SGNHT_CELLS:
        type_cell(page, which, i, j, text)
    badge = page.locator(".design-residual").first
    wait_text(badge, "stationary: a recipe", timeout=60)
    assert "not stationary" not in deep_text(badge)
    wait_text(page.locator(".residual-map-caption").first, "zero everywhere", timeout=60)
    math = deep_text(page.locator(".design-editor").first)
    assert "ξ" in math and "Γ" in math, math[-400:]
    p.shot("design-sgnht-1280")
    wait_enabled(play_button(page))
    play_button(page).click()
    wait_for_step(page, 300, timeout=90)
    play_button(page).click()
    # the link holds the whole design, once the run built from it is on screen
    page.wait_for_function("() => window.location.search.includes('design=')")
    url = page.url
    design = json.loads(parse_qs(urlparse(url).query)["design"][0])
    assert design["aux"] == ["r", "xi"] and design["kinetic"] == SGNHT_K and design["Q"][1][2] == "r"
    # ... and a new page opens on it: the same cells, the same verdict
    p2 = pages("?" + url.split("?", 1)[1])
    page2 = p2.page
    cell(page2, "Q", 2, 1).wait_for()
    assert cell(page2, "Q", 2, 1).input_value() == "-r"
    assert page2.locator(".aux-name-1 input").first.input_value() == "xi"
    assert page2.locator(".design-kinetic input").first.input_value() == SGNHT_K
    wait_text(page2.locator(".design-residual").first, "stationary: a recipe", timeout=60)
    assert not p.errors + p2.errors, p.errors + p2.errors


def test_a_bad_cell_shows_its_message_naming_the_cell_after_a_rename_and_a_removal(pages):
    p = pages("?pot=double-well&s=design&design=" + quote(json.dumps(
        {"aux": ["r"], "kinetic": "r**2/2", "D": [["0", "0"], ["0", "1"]], "Q": [["0", "-1"], ["1", "0"]]})))
    page = p.page
    wait_text(page.locator(".design-residual").first, "stationary: a recipe", timeout=60)
    add_variable(page, "s", 2)                      # added and removed again: the state as it was
    cell(page, "Q", 2, 2).wait_for()
    page.locator(".aux-remove-1 button").first.click()
    cell(page, "Q", 2, 2).wait_for(state="detached")
    fill(page, ".aux-name-0", "p")                  # renamed: in K and the cells too
    page.wait_for_function("() => window.location.search.includes('p**2') || "
                           "decodeURIComponent(window.location.search).includes('p**2')")
    assert page.locator(".design-kinetic input").first.input_value() == "p**2/2"
    type_cell(page, "D", 1, 1, "-1")
    wait_text(page.locator(".design-error").first, r"D\[p,p\] = -1")
    page.locator(".design-cell-D-1-1.cell-bad").first.wait_for()
    assert play_button(page).is_disabled()
    type_cell(page, "Q", 0, 1, "p +")
    wait_text(page.locator(".design-error").first, r"Q\[theta,p\]: expression is incomplete")
    page.locator(".design-cell-Q-0-1.cell-bad").first.wait_for()
    p.shot("design-bad-cell")
    # the invalid design never reaches the URL: it keeps the last one that built (renamed)
    shared = json.loads(parse_qs(urlparse(page.url).query)["design"][0])
    assert shared["aux"] == ["p"] and shared["D"][1][1] == "1" and shared["Q"][0][1] == "-1", shared
    assert not p.errors, p.errors


@pytest.mark.parametrize("name, width, height, scale", [("design-1280", 1280, 800, 1), ("design-phone", 390, 844, 1),
                                                        ("design-zoom150", 853, 533, 1.5)])
def test_the_design_editor_fits_a_laptop_a_phone_and_150_percent_zoom(pages, name, width, height, scale):
    p = pages("?pot=double-well&s=design&design=" + quote(json.dumps(
        {"name": "sgnht", "aux": ["r", "xi"], "kinetic": SGNHT_K, "D": [["0", "0", "0"], ["0", "1", "0"],
         ["0", "0", "0"]], "Q": [["0", "-1", "0"], ["1", "0", "r"], ["0", "-r", "0"]]})), width, height, scale)
    page = p.page
    wait_text(page.locator(".design-residual").first, "stationary", timeout=60)
    page.locator(".design-editor").first.scroll_into_view_if_needed()
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= width + 30, f"the page is {wide}px wide in a {width}px window"
    box = page.locator(".design-kinetic input").first.bounding_box()
    assert box["width"] >= min(300, width - 60), box
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(".design-editor").first.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    assert not p.errors, p.errors


def test_the_notebooks_design_lab_served_alone_plays(browser, tmp_path):
    """design_lab(...).show() / .servable(): the view binds its own frame loop to the page it is served on."""
    from app_browser_support import AppServer
    app = tmp_path / "nblab"
    app.mkdir()
    (app / "main.py").write_text("from app.views.notebook import design_lab\n"
                                 "design_lab('sgnht', 'double-well', compare='sgnht', chains=300).servable()\n")
    server = AppServer(app=str(app)).wait()
    try:
        p = Page(browser, server)
        page = p.open()
        wait_text(page.locator(".design-residual").first, "stationary: a recipe", timeout=60)
        play_button(page).click()
        wait_for_step(page, 100, timeout=60)
        assert wait_for_step(page, 100, run="b", timeout=30) >= 100
        assert not p.errors, p.errors
        p.page.close()
    finally:
        server.stop()
    assert not server.server_errors(), server.server_errors()
