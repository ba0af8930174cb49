"""Issue 31 in a real browser: the lab with lang=ja reads in Japanese at 1280×800 and on a phone (390×844), the
page's <html lang> follows, the language switch in the header keeps the run going (its step count), the plots
(the same figures, their data) and the link's state (pot, s, seed), and axe-core finds no serious or critical
violation with lang=ja.

What is read is what the page draws as text (Panel's shadow roots entered, a formula's TeX for screen readers
left out) and the figures' titles and axis labels from the Bokeh models (drawn on a canvas); a Latin word there
must be on the allow-list of tests/test_i18n.py. Screenshots go to $SGMCMC_SHOTS (default test-artifacts/) for
a person to look at.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from app_browser_support import (
    ARTIFACTS,
    CHROMIUM,
    DEEP_TEXT,
    bokeh_data,
    metric_number,
    new_page,
    wait_for,
    wait_for_step,
)
from test_i18n import escaped_words, identifiers

playwright_api = pytest.importorskip("playwright.sync_api")
axe_api = pytest.importorskip("axe_playwright_python.sync_playwright")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

SHOTS = Path(os.environ.get("SGMCMC_SHOTS", ARTIFACTS))
# each text node on its own (Panel's shadow roots entered; style, scripts and a formula's TeX for screen readers
# left out), with the tooltips and accessible names of elements (title, aria-label, placeholder)
SHOWN_TEXTS = """() => {
    const out = [];
    const walk = n => {
        if (n.shadowRoot) walk(n.shadowRoot);
        for (const c of n.childNodes) {
            if (c.nodeType === 3 && c.textContent.trim()) out.push(c.textContent);
            else if (c.nodeType === 1 && !["STYLE", "SCRIPT", "LINK"].includes(c.tagName)
                     && !c.classList.contains("sr-only")) {
                for (const a of ["title", "aria-label", "placeholder"])
                    if (c.getAttribute(a)) out.push(c.getAttribute(a));
                walk(c);
            }
        }
    };
    walk(document.body);
    return out;
}"""
FIGURE_TEXTS = """() => {
    const out = [];
    for (const doc of window.Bokeh.documents)
        for (const m of doc.all_models) {
            const type = m.type || (m.constructor && m.constructor.__name__);
            if (type === "Title" && m.text) out.push(m.text);
            else if (/Axis$/.test(type) && typeof m.axis_label === "string") out.push(m.axis_label);
            else if (type === "LegendItem" && m.label && m.label.value !== undefined) out.push(String(m.label.value));
        }
    return out;
}"""


@pytest.fixture
def page(browser):
    pages = []

    def make(width=1280, height=800):
        pg = new_page(browser, width, height)
        pages.append(pg)
        return pg
    yield make
    for pg in pages:
        pg.close()


def open_lab(pg, server, query):
    pg.goto(server.url + query, timeout=120_000)
    pg.locator("[data-metric='t-a']").first.wait_for(timeout=90_000)
    pg.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0")
    return pg


def page_words(pg) -> dict:
    texts = pg.evaluate(SHOWN_TEXTS) + pg.evaluate(FIGURE_TEXTS)
    return escaped_words(texts, identifiers())


def shot(pg, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)
    pg.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)], ids=["1280x800", "phone"])
def test_the_lab_reads_in_japanese(page, server, width, height):
    pg = open_lab(page(width, height), server, "?lang=ja")
    assert pg.evaluate("() => document.documentElement.lang") == "ja"
    summary = pg.locator(".ab-summary").first.evaluate(DEEP_TEXT)
    assert "✗ 定常でない" in summary and "✓ 定常なレシピ" in summary, summary
    assert pg.locator(".play-button button").first.inner_text().strip() == "再生"
    pg.locator(".play-button button").first.click()
    wait_for_step(pg, 200, timeout=120)
    wait_for(lambda: "この ε" in pg.locator("[data-summary='accuracy-a']").first.evaluate(DEEP_TEXT),
             "the accuracy verdict in Japanese")
    say = pg.locator("[data-describe='plots']").first.evaluate(DEEP_TEXT)
    assert "A のヒストグラム" in say, say
    shot(pg, f"lab-ja-{width}x{height}")
    found = page_words(pg)
    assert not found, "English on the Japanese lab:\n" + "\n".join(f"  {w!r} in {t[:160]!r}"
                                                                for w, t in sorted(found.items()))
    assert not pg.errors, pg.errors


def test_switching_language_keeps_the_run_the_plots_and_the_link(page, server):
    pg = open_lab(page(), server, "?pot=double-well&s=sghmc&seed=7")
    assert pg.evaluate("() => document.documentElement.lang") == "en"
    pg.locator(".play-button button").first.click()
    before = wait_for_step(pg, 100, timeout=120)
    figures = pg.evaluate("() => window.Bokeh.documents[0].all_models.size || 0")
    hist = pg.evaluate("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if (m.name === 'hist-A') return m.id; return null; }""")
    search = pg.evaluate("() => window.location.search")
    assert "Language / 言語" in pg.locator(".lang-box").first.evaluate(DEEP_TEXT)
    button = pg.locator(".lang-switch button", has_text="日本語").first
    button.focus()                        # the keyboard reaches the switch and presses it
    button.press("Enter")
    pg.wait_for_function("() => document.documentElement.lang === 'ja'")
    pg.wait_for_function("() => window.location.search.includes('lang=ja')")
    wait_for(lambda: pg.locator(".play-button button").first.inner_text().strip() == "一時停止", "the Pause label")
    # the run went on: no reload, no new run (the same histogram source, more steps), the link's state kept
    after = wait_for_step(pg, before + 100, timeout=120)
    assert after > before
    assert pg.evaluate("""() => { for (const doc of window.Bokeh.documents) for (const m of doc.all_models)
        if (m.name === 'hist-A') return m.id; return null; }""") == hist
    assert figures > 0
    now = pg.evaluate("() => window.location.search")
    for part in ("pot=double-well", "s=sghmc", "seed=7"):
        assert part in search and part in now, (part, search, now)
    heights = bokeh_data(pg, "hist-A", "top0")
    assert heights and max(heights) > 0           # the histogram kept its data
    shot(pg, "lab-switched-ja")
    found = page_words(pg)            # every text re-worded in place, the tabs' titles and the plots' included
    assert not found, "English after switching:\n" + "\n".join(f"  {w!r} in {t[:160]!r}"
                                                              for w, t in sorted(found.items()))
    # and back: English again, the run still going
    pg.locator(".lang-switch button", has_text="English").first.click()
    pg.wait_for_function("() => document.documentElement.lang === 'en'")
    pg.wait_for_function("() => !window.location.search.includes('lang=')")
    assert wait_for_step(pg, after + 50, timeout=120) > after
    assert metric_number(pg, "t") > after
    assert not pg.errors, pg.errors


def test_no_serious_axe_violation_in_japanese(page, server):
    axe = axe_api.Axe()
    pg = open_lab(page(), server, "?lang=ja")
    results = axe.run(pg)
    bad = [f"{v['id']} ({v['impact']}): {v['nodes'][0]['html'][:160]} — {len(v['nodes'])} nodes"
           for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert bad == []
