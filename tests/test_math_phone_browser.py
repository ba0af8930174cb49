"""Issue 31 (and the English pages as well): a lesson's display equations on a phone, 390×844. Lesson 5's longest
equation is wider than the column: it scrolls sideways inside its own box, the page does not widen, and the box
is reachable and scrollable by keyboard (tabindex=0, a name in the page's language), so that axe-core's
scrollable-region-focusable passes; no serious or critical violation either. The test can fail: with the boxes'
tabindex taken away, axe reports the rule.

One server and one browser for the module (tests/conftest.py).
"""
from __future__ import annotations

import os

import pytest
from app_browser_support import ARTIFACTS, CHROMIUM, new_page, serious

playwright_api = pytest.importorskip("playwright.sync_api")
axe_api = pytest.importorskip("axe_playwright_python.sync_playwright")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

PHONE = {"width": 390, "height": 844}
# every display equation's box, shadow roots entered: its size, scroll extent, focusability and name
BOXES = """() => {
    const out = [];
    const walk = (root) => { for (const el of root.querySelectorAll("*")) {
        if (el.classList.contains("tex-scroll")) {
            const r = el.getBoundingClientRect();
            out.push({left: r.left, right: r.right, scroll: el.scrollWidth, client: el.clientWidth,
                      tabindex: el.getAttribute("tabindex"), role: el.getAttribute("role"),
                      label: el.getAttribute("aria-label"), math: !!el.querySelector("mjx-container")});
        }
        if (el.shadowRoot) walk(el.shadowRoot);
    } };
    walk(document);
    return out;
}"""


@pytest.fixture(scope="module")
def axe():
    return axe_api.Axe()


@pytest.fixture
def phone(browser):
    pg = new_page(browser, **PHONE)
    yield pg
    pg.close()


@pytest.mark.parametrize("lang, name", [("en", "Equation"), ("ja", "数式")])
def test_a_long_equation_scrolls_in_its_own_box_on_a_phone(phone, server, axe, lang, name):
    phone.goto(server.url + f"?tab=lessons&lesson=05-sghmc&lang={lang}", timeout=120_000)
    phone.locator(".lesson-body .tex-scroll mjx-container").first.wait_for()
    phone.wait_for_function(f"() => ({BOXES})().every(b => b.math)")    # every equation typeset
    boxes = phone.evaluate(BOXES)
    assert len(boxes) >= 4, boxes
    # the page is no wider than the phone; each box stays inside it, the long ones scroll within
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert all(b["left"] >= 0 and b["right"] <= PHONE["width"] for b in boxes), boxes
    wide = [b for b in boxes if b["scroll"] > b["client"] + 1]
    assert wide, "no equation wider than the phone's column: the test would prove nothing"
    assert all(b["tabindex"] == "0" and b["role"] == "group" and b["label"] == name for b in boxes), boxes
    # the keyboard scrolls it: focus the first wide box (Tab order), then the arrow key
    box = phone.locator(".lesson-body .tex-scroll").nth(boxes.index(wide[0]))
    box.focus()
    assert box.evaluate("el => el.scrollLeft") == 0
    phone.keyboard.press("ArrowRight")
    phone.wait_for_function("el => el.scrollLeft > 0", arg=box.element_handle())
    results = axe.run(phone)
    assert serious(results) == []
    assert "scrollable-region-focusable" not in {v["id"] for v in results.response["violations"]}
    phone.screenshot(path=str(ARTIFACTS / f"lesson5-equations-phone-{lang}.png"))
    # power: the same page with the boxes not focusable fails the rule
    phone.evaluate("""() => { const walk = (root) => { for (const el of root.querySelectorAll("*")) {
        if (el.classList.contains("tex-scroll")) el.removeAttribute("tabindex");
        if (el.shadowRoot) walk(el.shadowRoot); } }; walk(document); }""")
    assert "scrollable-region-focusable" in {v["id"] for v in axe.run(phone).response["violations"]}
    assert not phone.errors, phone.errors
