"""Every number field of the lab and of the Models page, in a real browser: a value out of its declared bounds is
refused where it was typed, with a message that names the field and quotes the bound, and the field goes back to
the value in use (issue 27). One page of each, shared by the cases: a case is one field and one value.
"""
from __future__ import annotations

import pytest
from app_browser_support import CHROMIUM
from test_app_browser import Page, deep_text, wait_text

from app.model.config import LabConfig, bounds_text
from app.model.models import ModelsConfig
from samplers.registry import REGISTRY

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs /usr/bin/chromium")

LAB_QUERY = "?pot=logistic&s=sghmc&speed=1"     # a data target: the minibatch field is there too
SGHMC = REGISTRY["sghmc"].declared


def lab_cases():
    """(css of the field, css of its message, what to type, the message's words, what the field shows after)."""
    cfg = LabConfig()
    cases = []
    for name, css, typed in (("chains", "chains-input", ("0", "-5", "100000000")), ("seed", "seed-input", ("-1",)),
                             ("V", "v-input", ("-3",)), ("burn", "burn-input", ("-10",)),
                             ("batch", "batch-input", ("0",))):
        p = LabConfig.param[name]
        in_use = "10" if name == "batch" else str(getattr(cfg, name)).removesuffix(".0")
        cases += [(css, "settings-error", text, f"{p.label} must be {bounds_text(p)}", in_use) for text in typed]
    # sampler A's parameters (SGHMC's): each just past a bound of its declaration
    for name, p in SGHMC.items():
        if p.choices:
            continue
        text = f"{p.hi * 10:g}" if p.hi is not None else f"{p.lo - 1:g}"
        cases.append((f"param-a-{name}", "params-error-a", text, f"{name} must be {p.bounds}", str(p.default)))
    return cases


MODELS_CASES = [
    ("models-chains", "models-settings-error", "0", f"Chains must be {bounds_text(ModelsConfig.param.chains)}", ""),
    ("models-chains", "models-settings-error", "100000", "Chains must be between 1 and", ""),
    ("models-seed", "models-settings-error", "-1", f"Seed (data and chains) must be "
                                                   f"{bounds_text(ModelsConfig.param.seed)}", "0"),
    ("models-eps-a", "models-eps-error", "0", "Step size A must be greater than 0", ""),
    ("models-eps-b", "models-eps-error", "-1", "Step size B must be greater than 0", ""),
]


@pytest.fixture(scope="module")
def lab_page(browser, server):
    p = Page(browser, server)
    p.page.goto(server.url + LAB_QUERY, timeout=120000)
    p.page.locator("[data-metric='t-a']").first.wait_for(timeout=120000)   # the logistic's grid, built once
    p.page.locator(".params-more-a button").first.click()        # beta and the schedule's fields too
    p.page.locator(".param-a-eps_c input").first.wait_for()
    yield p
    assert not p.errors and not p.external, (p.errors, p.external)
    assert not server.server_errors()
    p.page.close()


@pytest.fixture(scope="module")
def models_page(browser, server):
    p = Page(browser, server)
    p.page.goto(server.url + "?tab=models&model=pmf", timeout=120000)
    p.page.locator("[data-models='step']").first.wait_for(timeout=60000)
    yield p
    assert not p.errors and not p.external, (p.errors, p.external)
    assert not server.server_errors()
    p.page.close()


def refused(page, field: str, message: str, text: str, says: str, shows: str):
    box = page.locator(f".{field} input").first
    box.fill(text)
    box.press("Enter")
    shown = wait_text(page.locator(f".{message}").first, f"{says}.*got {text}".replace("(", r"\(").replace(")", r"\)")
                      .replace("+", r"\+"))
    assert "not applied" in shown
    # the field goes back to the value in use: a refused value is never left on screen
    deadline = page.evaluate("() => Date.now()") + 10_000
    while box.input_value() != shows and page.evaluate("() => Date.now()") < deadline:
        page.wait_for_timeout(50)
    assert box.input_value() == shows, (field, text, box.input_value())


@pytest.mark.parametrize("field,message,text,says,shows", lab_cases(),
                         ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_a_lab_field_refuses_a_value_out_of_bounds_and_shows_the_one_in_use(lab_page, field, message, text, says,
                                                                             shows):
    page = lab_page.page
    search = page.evaluate("() => window.location.search")
    noise = page.locator(".bk-btn-group button", has_text="real minibatches").first
    if field == "batch-input":
        noise.click()
        page.locator(".batch-input input").first.wait_for()
    try:
        refused(page, field, message, text, says, shows)
    finally:
        if field == "batch-input":
            page.locator(".bk-btn-group button", has_text="simulated noise V").first.click()
    if field != "batch-input":
        assert page.evaluate("() => window.location.search") == search        # the link keeps the run's values
    assert "not applied" in deep_text(page.locator(f".{message}").first)


@pytest.mark.parametrize("field,message,text,says,shows", MODELS_CASES,
                         ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_a_models_field_refuses_a_value_out_of_bounds_and_shows_the_one_in_use(models_page, field, message, text,
                                                                               says, shows):
    page = models_page.page
    search = page.evaluate("() => window.location.search")
    refused(page, field, message, text, says, shows)
    assert page.evaluate("() => window.location.search") == search
