"""The course in lessons/: every page parses, names a runnable demo and existing checks, links to
pages that exist, keeps LaTeX inside math delimiters; every numerical check passes its own
tolerance (quick=True).

Front matter (YAML between two `---` lines):

    title: str, order: int, summary: str,
    demo: {potential, sampler, params: {}, V | batch, chains, seed, steps_per_frame,
           compare?, compare_params?, drop?},
    checks: [names in lessons.checks.CHECKS]
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import lessons
from lessons import checks

LESSONS = Path(__file__).resolve().parents[1] / "lessons"
PAGES = sorted(LESSONS.glob("[0-9][0-9]-*.md"))

DEMO_KEYS = {"potential", "sampler", "params", "V", "batch", "chains", "seed", "steps_per_frame",
             "compare", "compare_params", "drop", "log"}
CHECK_MARK = re.compile(r"\{\{check:([A-Za-z_][A-Za-z0-9_]*)\}\}")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def parse(path: Path) -> tuple[dict, str]:
    """(front matter, body), parsed independently of lessons.parse_lesson (which is tested against it)."""
    m = re.match(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n(.*)\Z", path.read_text(encoding="utf-8"), re.S)
    assert m, f"{path.name}: no front matter between two '---' lines"
    meta = yaml.safe_load(m.group(1))
    assert isinstance(meta, dict), f"{path.name}: front matter is not a mapping"
    return meta, m.group(2)


def strip_math(body: str) -> str:
    """The body with display ($$...$$) and inline ($...$) math and code removed."""
    body = re.sub(r"```.*?```", " ", body, flags=re.S)
    body = re.sub(r"`[^`\n]*`", " ", body)
    body = re.sub(r"\$\$.*?\$\$", " ", body, flags=re.S)
    return re.sub(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\\n])+\$", " ", body)


def test_package_helpers_agree_with_the_files():
    pages = lessons.load_lessons()
    assert [p.slug for p in pages] == [p.stem for p in PAGES]
    for lesson, path in zip(pages, PAGES):
        meta, body = parse(path)
        assert (lesson.title, lesson.order, lesson.demo, lesson.checks, lesson.body) == \
            (meta["title"], meta["order"], meta["demo"], meta["checks"], body)
        segs = lesson.segments()
        assert "".join(v for k, v in segs if k == "markdown").count("{{check:") == 0
        assert [v for k, v in segs if k == "check"] == CHECK_MARK.findall(body)
        assert "{{demo}}" not in "".join(v for k, v in segs if k == "markdown")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_the_demo_is_embedded_once_in_the_lab_section(path):
    _, body = parse(path)
    assert len(lessons.DEMO_LINE.findall(body)) == 1, f"{path.name}: needs exactly one {{{{demo}}}} line"
    lab_section = body.split("## In the lab", 1)[1].split("\n## ", 1)[0]
    assert lessons.DEMO_LINE.search(lab_section), f"{path.name}: the {{{{demo}}}} line belongs in 'In the lab'"


def test_there_are_twelve_pages_in_order():
    assert [p.name[:2] for p in PAGES] == [f"{i:02d}" for i in range(1, 13)]
    orders = [parse(p)[0]["order"] for p in PAGES]
    assert orders == list(range(1, 13))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_front_matter(path):
    meta, body = parse(path)
    for key, kind in (("title", str), ("order", int), ("summary", str), ("demo", dict), ("checks", list)):
        assert isinstance(meta.get(key), kind), f"{path.name}: '{key}' missing or not a {kind.__name__}"
    assert meta["title"].strip() and meta["summary"].strip()
    demo = meta["demo"]
    assert set(demo) <= DEMO_KEYS, f"{path.name}: unknown demo keys {set(demo) - DEMO_KEYS}"
    for key in ("potential", "sampler", "params", "chains", "seed", "steps_per_frame"):
        assert key in demo, f"{path.name}: demo.{key} missing"
    assert ("V" in demo) != ("batch" in demo), f"{path.name}: demo needs exactly one of V and batch"
    assert isinstance(demo["params"], dict)
    for key in ("chains", "seed", "steps_per_frame"):
        assert isinstance(demo[key], int) and demo[key] >= (0 if key == "seed" else 1)
    if "compare_params" in demo:
        assert "compare" in demo and isinstance(demo["compare_params"], dict)
    for term in demo.get("drop", []):
        assert term in ("gamma", "friction"), f"{path.name}: can only drop gamma or friction, not {term}"
    for name in meta["checks"]:
        assert name in checks.CHECKS and callable(checks.CHECKS[name]), \
            f"{path.name}: no check '{name}' in lessons.checks.CHECKS"
    marks = CHECK_MARK.findall(body)
    assert marks, f"{path.name}: shows no check"
    for name in marks:
        assert name in meta["checks"], f"{path.name}: {{{{check:{name}}}}} is not listed in 'checks'"
    for line in body.splitlines():
        if "{{check:" in line:
            assert CHECK_MARK.fullmatch(line.strip()), f"{path.name}: a check mark must be alone on its line"
    assert set(meta["checks"]) <= set(marks), f"{path.name}: listed checks not shown in the body"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_demo_runs_with_the_library(path):
    """The demo's potential loads, its samplers are registered, their parameters are accepted, and a
    few steps of each run (a preset the app cannot open is a dead end for the learner)."""
    from samplers.registry import build_sampler, get_spec
    from samplers.sampler import coerce_params
    demo = parse(path)[0]["demo"]
    runs = [(demo["sampler"], demo["params"], demo.get("drop", []))]
    if "compare" in demo:
        runs.append((demo["compare"], demo.get("compare_params", {}), []))
    for name, params, drop in runs:
        spec = get_spec(name)
        coerce_params(spec, params)
        s = build_sampler(name, demo["potential"], V=demo.get("V"), batch=demo.get("batch"), **params)
        if drop:
            assert s.recipe is not None, f"{path.name}: cannot drop {drop} from '{name}', it has no recipe"
            s = s.with_recipe(s.recipe.with_drop(set(drop)))
        rng = np.random.default_rng(demo["seed"])
        z = s.init_state(8, rng)
        for t in range(1, 4):
            z, _ = s.step(z, rng, t)
        assert np.isfinite(z).all(), f"{path.name}: {name} diverged in three steps"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_links_resolve_and_chain_the_pages(path):
    _, body = parse(path)
    targets = [t for t in LINK.findall(body) if not re.match(r"[a-z]+:", t) and not t.startswith("?")]
    for t in targets:
        assert (LESSONS / t.split("#")[0]).is_file(), f"{path.name}: link to missing '{t}'"
    assert "glossary.md" in targets, f"{path.name}: no link to the glossary"
    i = PAGES.index(path)
    if i + 1 < len(PAGES):
        assert PAGES[i + 1].name in targets, f"{path.name}: no link to the next page {PAGES[i + 1].name}"
    if i > 0:
        assert PAGES[i - 1].name in targets, f"{path.name}: no link to the previous page {PAGES[i - 1].name}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_latex_stays_inside_math(path):
    _, body = parse(path)
    assert body.count("$$") % 2 == 0, f"{path.name}: unbalanced $$"
    prose = strip_math(body)
    for cmd in ("frac", "nabla", "mathbb", "mathcal", "epsilon", "theta", "begin", "sqrt", "sum", "operatorname"):
        hit = re.search(r"\\" + cmd + r"(?![A-Za-z])", prose)
        assert not hit, f"{path.name}: raw \\{cmd} outside math: ...{prose[max(0, hit.start() - 40):hit.end() + 20]}..."
    at = prose.find("$")
    assert at < 0, f"{path.name}: unbalanced $ near ...{prose[max(0, at - 60):at + 20]}..."
    # MathJax: no environments inside inline math; multi-line math belongs in $$...$$
    inline = re.findall(r"(?<![\\$])\$(?!\$)((?:\\.|[^$\\\n])+)\$", re.sub(r"\$\$.*?\$\$", " ", body, flags=re.S))
    for m in inline:
        assert "\\begin{aligned}" not in m and "\\\\" not in m, f"{path.name}: multi-line inline math: ${m}$"
    for block in re.findall(r"\$\$(.*?)\$\$", body, flags=re.S):
        assert block.count("\\begin{") == block.count("\\end{"), f"{path.name}: unbalanced environment"
        assert block.count("{") == block.count("}"), f"{path.name}: unbalanced braces in $${block[:60]}...$$"
    for m in inline:
        stripped = re.sub(r"\\[{}]", "", m)
        assert stripped.count("{") == stripped.count("}"), f"{path.name}: unbalanced braces in ${m}$"


@pytest.mark.parametrize("name", sorted(checks.CHECKS))
def test_check_passes_quick(name):
    result = checks.CHECKS[name](quick=True)
    assert set(result) >= {"value", "tolerance", "passed", "text"}
    assert isinstance(result["passed"], bool) and isinstance(result["text"], str) and result["text"]
    assert isinstance(result["value"], float) and isinstance(result["tolerance"], float)
    assert result["passed"], f"{name}: {result['text']}"


def test_each_lesson_has_its_own_check_module():
    """The checks a page shows live in one module of lessons.checks, and no other page's do."""
    owner = {}
    for p in PAGES:
        modules = {checks.CHECKS[name].__module__ for name in parse(p)[0]["checks"]}
        assert len(modules) == 1, f"{p.name}: its checks are spread over {sorted(modules)}"
        module = modules.pop()
        assert module not in owner, f"{p.name} and {owner.get(module)} share {module}"
        owner[module] = p.name


def test_every_check_is_shown_on_some_page():
    shown = set()
    for p in PAGES:
        shown |= set(parse(p)[0]["checks"])
    assert shown == set(checks.CHECKS), f"checks no page shows: {set(checks.CHECKS) - shown}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_links_into_the_app_name_a_tab_and_a_model_that_exist(path):
    """`?tab=models&model=pmf` opens the app's Models page on a live model: the model must be registered."""
    from urllib.parse import parse_qs

    from samplers.targets.live import LIVE_MODELS
    _, body = parse(path)
    for link in (t for t in LINK.findall(body) if t.startswith("?")):
        query = {k: v[0] for k, v in parse_qs(link[1:]).items()}
        assert query.get("tab") in ("lab", "lessons", "figures", "models"), f"{path.name}: {link}"
        if query["tab"] == "models":
            assert query.get("model") in LIVE_MODELS, f"{path.name}: no live model in {link}"


def test_the_glossary_is_a_page_of_the_app_and_links_to_it_open_it():
    from app.model.content import GLOSSARY_SLUG, glossary_page
    from app.views.lessons import _markdown
    page = glossary_page()
    assert page is not None and page.slug == GLOSSARY_SLUG and page.checks == [] and "| $V$ |" in page.body
    text = _markdown("[glossary](glossary.md), [the same](../lessons/glossary.md#v)").object
    assert text == "[glossary](?tab=lessons&lesson=glossary), [the same](?tab=lessons&lesson=glossary)"


# -- the embedded demo: its controls and plots, and the "Try this" steps (issue 30) ----------------------------------

@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_try_this_step_can_be_done_in_the_demo_or_by_its_link(path):
    """Each step sets only controls the demo has and watches only plots it shows, or links into the lab (a link
    that opens the lab without a word of refusal)."""
    from app.model.demo_spec import PLOTS, problems
    lesson = lessons.parse_lesson(path)
    assert lesson.plots and set(lesson.plots) <= set(PLOTS), lesson.plots
    assert problems(lesson.slug, lesson.demo, lesson.controls, lesson.plots, lesson.body) == []


def test_the_step_check_fails_on_a_step_the_demo_cannot_do():
    """Power: lesson 5 as it was (a demo of Play, Step, Reset and Speed alone, no kinetic-temperature plot) fails,
    and so do a step naming a parameter by its code name, a link the lab refuses and a control no sampler has."""
    from app.model.demo_spec import problems
    lesson = lessons.parse_lesson(LESSONS / "05-sghmc.md")
    found = problems(lesson.slug, lesson.demo, [], ["phase plane", "trace", "histogram", "KL"], lesson.body)
    assert any("step 1: sets V" in p for p in found), found
    assert any("step 2: sets Bhat, C" in p for p in found), found
    assert any("step 2: watches kinetic temperature" in p for p in found), found
    demo = {"potential": "gaussian", "sampler": "sgrld", "compare": "sgrld"}
    body = "## Try this\n\n1. **A.** Set `metric_C` to 3.\n2. **B.** Open [it](?tab=lab&s=nosuch).\n"
    found = problems("x", demo, ["C"], ["trace"], body)
    assert any("no setting or parameter" in p for p in found), found       # sgrld has no C
    assert any("step 1: sets metric_C" in p for p in found), found
    assert any("step 2: the link" in p for p in found), found
    assert problems("x", demo, ["metric_C"], ["trace"], body.split("2.")[0]) == []


def _demo(path):
    from app.model.presets import demo_query
    from app.views.lesson_demo import LessonDemo
    lesson = lessons.parse_lesson(path)
    demo = LessonDemo(demo_query(lesson.demo), controls=lesson.controls, plots=lesson.plots)
    demo.cfg.chains = 50       # the figures' kinds do not depend on the number of chains
    return lesson, demo


# the logistic posterior's first build takes minutes on a busy machine (its exact reference); its demo is a 2-D
# target with SGLD on both sides, drawn like lesson 3's banana
CHEAP = [p for p in PAGES if not p.name.startswith("04-")]


@pytest.mark.parametrize("path", CHEAP, ids=lambda p: p.stem)
def test_the_demo_shows_exactly_the_plots_its_page_names(path):
    lesson, demo = _demo(path)
    demo.build()
    assert sorted(demo.plot_kinds()) == sorted(lesson.plots)


def test_the_demo_and_its_lab_link_agree_and_the_link_follows_its_fields():
    """Lesson 5: the demo runs 1000 chains and its link opens 1000 (it opened the preset's 2000); a field of the
    demo changes what the demo runs and what the link opens; a refused value is said and not applied."""
    import html as html_mod
    from urllib.parse import parse_qs

    from app.model.config import LabConfig
    from app.model.urlstate import apply_query
    lesson, demo = _demo(LESSONS / "05-sghmc.md")
    demo.cfg.chains = 1000
    query = {k: v[0] for k, v in parse_qs(html_mod.unescape(demo.lab_href)[1:]).items()}
    assert query["n"] == "1000" and query["tab"] == "lab"
    linked = LabConfig()
    assert apply_query(linked, query) == []
    assert {k: v for k, v in linked.param.values().items() if k != "name"} == \
        {k: v for k, v in demo.cfg.param.values().items() if k != "name"}
    fields = {w.css_classes[0]: w for row in demo.fields[:1] for w in row.objects}
    assert set(fields) == {"demo-control-V", "demo-control-a-C", "demo-control-b-C", "demo-control-a-Bhat",
                           "demo-control-b-Bhat"}
    fields["demo-control-V"].value = 0.0
    fields["demo-control-b-C"].value = "0.2"
    assert demo.cfg.V == 0 and demo.cfg.params_b["C"] == "0.2"
    assert "V=0" in html_mod.unescape(demo.lab_href) and "b.C=0.2" in html_mod.unescape(demo.lab_href)
    assert "b.C=0.2" in html_mod.unescape(demo.top_link.object)
    fields["demo-control-b-C"].value = "-1"
    assert demo.cfg.params_b["C"] == "0.2" and "not applied" in demo.param_error.object


def test_the_kinetic_temperature_plot_follows_the_run():
    """Lesson 5's extra plot: a point per sample of each side's mean r·r/d, as the runs step."""
    lesson, demo = _demo(LESSONS / "05-sghmc.md")
    demo.build()
    demo.lab().step(5)
    data = [s.data for s in demo.history.sources]
    assert [len(d["t"]) for d in data] == [1, 1] and data[0]["t"] == [5]
    assert all(0 < d["y"][0] < 10 for d in data)
