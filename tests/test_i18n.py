"""The Japanese interface's catalogue cannot fall behind the code (issue 31).

Why a small catalogue (app/locale/<lang>/*.toml, the English text as the key) rather than gettext: see
app/model/i18n.py's docstring. In short, nothing to compile or extract, and the English key lets these tests
read every string the code asks for straight from its source.

(a) every literal the code passes to tr() has a Japanese entry (an AST scan of app/);
(b) nothing a reader sees escapes the wrapping: each lab section is built server-side with lang=ja and its
    object tree walked (widget names, labels, options, placeholders, tooltips, HTML and Markdown text, figure
    titles, axis labels, legends); a Latin-letter word there must be on ALLOWED, a short list of names and
    symbols that are written in Latin letters in Japanese too;
(c) the scan of (a) can fail: a catalogue without one of its entries is caught;
(d) no catalogue key is unused (each is asked for by a tr() literal, is a template of messages.toml, or
    translates a text that comes from data: a setting's label, a sampler's or a pair's name, a library message).
"""
from __future__ import annotations

import ast
import html.parser
import re
import time
import tomllib
from pathlib import Path

import pytest

from app.model import i18n

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"
JA_DIR = i18n.LOCALE_DIR / "ja"
# the catalogue files of this area (others' files, app/locale/ja/<helper>.toml, are checked by their own tests)
OWN_FILES = ("lab.toml", "messages.toml")
CALLS = {"tr", "N_"}   # tr(text, lang, **fields) and N_(text): the first argument is a catalogue key


def tr_literals(root: Path = APP) -> dict[str, list[str]]:
    """Every string literal passed as tr()'s first argument under `root`, with where it is."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name not in CALLS:
                continue
            for arg in _literal_choices(node.args[0]):
                found.setdefault(arg, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _literal_choices(node) -> list[str]:
    """A literal, or both literals of `"a" if c else "b"` (tr("Pause" if playing else "Play", lang))."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literal_choices(node.body) + _literal_choices(node.orelse)
    return []


def missing(literals, table) -> list[str]:
    return sorted(k for k in literals if k not in table)


def test_every_tr_literal_has_a_japanese_entry():
    literals = tr_literals()
    assert len(literals) > 150, "the scan found too few tr() calls: is it reading app/?"
    gaps = missing(literals, i18n.catalogue("ja"))
    assert not gaps, "no Japanese entry for:\n" + "\n".join(f"  {k!r}  ({literals[k][0]})" for k in gaps)


def test_the_scan_catches_a_dropped_entry():
    """(c) the test above can fail: without any one of its entries (each tried in turn) the scan reports it."""
    literals = tr_literals()
    table = dict(i18n.catalogue("ja"))
    for key in sorted(literals)[::7]:
        without = {k: v for k, v in table.items() if k != key}
        assert missing(literals, without) == [key]


SHOWN_SETTINGS = ("speed", "chains", "seed", "V", "burn", "dtype", "batch")    # LabConfig's fields on the lab page


def data_texts() -> set[str]:
    """The English texts the views translate that come from data, not from a tr() literal."""
    from app.model.config import LabConfig
    from app.model.design import DESIGN
    from app.model.lab import TERM_WORD
    from app.model.presets import TYPED, compare_pairs, load_potential, potential_names, sampler_label, samplers
    from samplers.registry import REGISTRY
    texts = {LabConfig.param[name].label for name in SHOWN_SETTINGS}
    texts |= {sampler_label(n) for n in samplers()} | {REGISTRY[n].title for n in samplers()}
    texts |= {p.label for p in compare_pairs()}
    texts |= set(TERM_WORD.values()) | {DESIGN}      # the designed sampler's title, unless its file names it
    # the library's and the configuration's own words, shown as they are in English: tooltips, descriptions,
    # the samplers' sources, parameter declarations and notes
    texts |= {LabConfig.param.start.doc, LabConfig.param.dtype.doc}
    texts |= {load_potential(n).description for n in potential_names()} | {load_potential(TYPED + "x^2").description}
    for n in samplers():
        spec = REGISTRY[n]
        texts |= {spec.source, spec.doc} | {p.describe() for p in spec.declared.values()}
    return texts


def test_data_texts_have_japanese_entries():
    """A setting's label, a sampler's and a pair's name reach the page through tr()/tr_message with a variable."""
    names = identifiers()
    gaps = sorted(t for t in data_texts() if escaped_words([i18n.tr_message(t, "ja")], names))
    assert not gaps, "no Japanese entry for:\n" + "\n".join(f"  {k!r}" for k in gaps)


def test_no_stale_keys():
    """(d) every key of this area's files is used: a tr() literal, a data text, or a message template."""
    used = set(tr_literals()) | data_texts()
    stale = []
    for name in OWN_FILES:
        path = JA_DIR / name
        if not path.exists():
            continue
        with path.open("rb") as f:
            keys = tomllib.load(f)
        if name == i18n.MESSAGES:
            continue           # templates and library messages: their use is the message tests' (below)
        stale += [f"{name}: {k!r}" for k in keys if k not in used]
    assert not stale, "unused catalogue keys:\n" + "\n".join(stale)


# --- (b) what a reader of the Japanese lab sees ------------------------------------------------------------------

# Latin-letter words that stay so in Japanese text (two letters or more; single letters are variables: x, U, D, Q)
ALLOWED = {
    # the samplers' and the method's names, as the Japanese literature writes them
    "SG", "MCMC", "SGLD", "SGRLD", "SGHMC", "SGRHMC", "gSGRHMC", "SGNHT", "mSGNHT", "HMC", "QNHMC", "SCIR", "Santa",
    "BFGS",
    # measures, file formats and units
    "KL", "TV", "ESS", "FP", "CSV", "NPZ", "YAML", "PNG", "URL", "ms", "MB",
    # functions and symbols of formulas
    "exp", "log", "sqrt", "eps",
    # authors' names (the pairs' titles, the samplers' sources): Japanese papers write them in Latin letters
    "Baker", "Fearnhead", "Fox", "Nemeth", "Chen", "Carlson", "Gan", "Li", "Carin", "Fu", "Luo", "Zhang", "Neal",
    "Oono", "Ding", "Patterson", "Teh", "Guestrin", "Welling", "Xifara", "Nocedal", "Wright",
    # in formulas and the names of methods and laws inside them
    "diag", "min", "grad", "Gamma", "Dir", "ABOBA", "OU", "CIR", "SR", "StepInfo", "KS", "dH", "dt", "Cr", "ij",
    # a key of the keyboard
    "Enter",
    # the language switch names both languages in its own (its label is bilingual on purpose)
    "Language", "English",
}


def identifiers() -> set[str]:
    """Names a link or a file spells (targets, sampler keys, parameters, choices, designs, dtypes): shown as
    written, so that a reader can type them; removed before the words are checked."""
    from app.model.config import LabConfig
    from app.model.presets import potential_names, samplers
    from samplers.design import example_names
    from samplers.registry import REGISTRY
    names = set(potential_names()) | set(samplers()) | set(example_names())
    for n in samplers():
        spec = REGISTRY[n]
        spec = getattr(spec, "spec", spec)
        for key, declared in spec.declared.items():
            names.add(key)
            names |= {str(c) for c in (declared.choices or ())}
    names |= set(LabConfig.param.dtype.objects)
    # the state's variables as a cell is typed ("theta", "theta_1", ...), and the values typed for a default
    names |= {"theta", "theta1", "theta2", "theta_1", "theta_2", "r_1", "r_2", "xi", "auto", "none"}
    return names


# what is written as code: a file's path, a command-line flag, a target or a value as a link spells it
# (gamma:a, expr:<g(x)>, metropolis=on), and what a user typed, which messages quote ('foo')
CODE = re.compile(r"\S+\.md\b|--\w+|\b\w+:[^\s、。()（）]+|\b\w+=\w+|'[^'\n]*'")


class _Text(html.parser.HTMLParser):
    """The text of an HTML fragment, with its tooltips and accessible names (title, aria-label)."""

    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_starttag(self, tag, attrs):
        self.parts += [v for k, v in attrs if k in ("title", "aria-label", "placeholder") and v]

    def handle_data(self, data):
        self.parts.append(data)


def html_text(text: str) -> list[str]:
    p = _Text()
    p.feed(text)
    return p.parts


def bokeh_texts(model) -> list[str]:
    from bokeh.models import Axis, ColorBar, LegendItem, Title, Tool
    out = []
    for m in model.references():
        if isinstance(m, Tool):           # its tooltip: Bokeh's English name unless the app words it
            out.append(m.description or type(m).__name__)
        if isinstance(m, Title):
            out.append(m.text)
        elif isinstance(m, Axis) and isinstance(m.axis_label, str):
            out.append(m.axis_label)
        elif isinstance(m, LegendItem) and m.label is not None:
            out.append(m.label.get("value", "") if isinstance(m.label, dict) else str(getattr(m.label, "value", "")))
        elif isinstance(m, ColorBar) and m.title:
            out.append(m.title)
    return out


def shown_texts(obj, seen=None) -> list[str]:
    """Every text a Panel object shows, its children's included (built server-side: no browser)."""
    import panel as pn
    from panel.viewable import Viewer
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    out = []
    if isinstance(obj, Viewer):
        return shown_texts(obj.__panel__(), seen)
    if isinstance(obj, pn.Tabs):
        out += list(obj._names)
    if isinstance(obj, pn.Card):
        out.append(obj.title or "")
    if isinstance(obj, pn.widgets.Widget):
        for attr in ("name", "label", "placeholder", "description"):
            value = getattr(obj, attr, None)
            if isinstance(value, str):
                out.append(value)
        options = getattr(obj, "options", None)
        if isinstance(options, dict):
            out += [str(k) for k in options]
        elif isinstance(options, list):
            out += [str(k) for k in options]
    if isinstance(obj, (pn.pane.HTML, pn.pane.Markdown)) and isinstance(obj.object, str):
        out += html_text(obj.object)
    if isinstance(obj, pn.pane.Bokeh) and obj.object is not None:
        out += bokeh_texts(obj.object)
    for child in getattr(obj, "objects", None) or []:
        out += shown_texts(child, seen)
    return out


WORD = re.compile(r"[A-Za-z]{2,}")


def escaped_words(texts, names) -> dict[str, str]:
    """Latin words not on ALLOWED, each with a text it was found in."""
    found = {}
    for text in texts:
        stripped = CODE.sub(" ", text)
        for name in sorted(names, key=len, reverse=True):
            stripped = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", " ", stripped)
        for word in WORD.findall(stripped):
            if word not in ALLOWED:
                found.setdefault(word, text)
    return found


def wait_built(lab, timeout=120.0):
    t = time.monotonic()
    while lab.building and time.monotonic() - t < timeout:
        time.sleep(0.1)
    assert not lab.building


def lab_texts(view) -> list[str]:
    return shown_texts(view.header) + list(view.tabs._names) + shown_texts(view.lab_view)


def assert_japanese(texts, where: str) -> None:
    found = escaped_words(texts, identifiers())
    assert not found, f"English words in the Japanese lab ({where}):\n" + "\n".join(
        f"  {w!r} in {t!r}" for w, t in sorted(found.items()))


@pytest.fixture(scope="module")
def lab_ja():
    from app.views.page import AppView
    # a link with a bad value and an unknown key: the notice is worded in Japanese too
    view = AppView("?lang=ja&n=0&foo=1")
    wait_built(view.lab)
    yield view
    view.stop()


def test_the_lab_in_japanese_shows_no_english_word(lab_ja):
    """(b) The lab with lang=ja: its first screen (A against B, a link's notice), the ladder and recipe cards
    opened, then a 2-D target, the typed target's fields, a single sampler and the design editor."""
    from app.model.design import DESIGN
    from app.model.presets import TYPED
    view, lab = lab_ja, lab_ja.lab
    lab_view = view.lab_view
    assert lab.notice is not None
    lab_view.ladder_card.collapsed = False
    lab_view.recipe_card.collapsed = False
    wait_built(lab)
    assert_japanese(lab_texts(view), "first screen")
    view.config.potential = "banana"
    wait_built(lab)
    lab_view.controls_parts[0].select.value = TYPED
    wait_built(lab)
    assert_japanese(lab_texts(view), "a 2-D target, a typed one")
    view.config.param.update(compare=False, potential="double-well", sampler="sgld", params={})
    wait_built(lab)
    assert_japanese(lab_texts(view), "one sampler")
    view.config.param.update(sampler=DESIGN, params={}, D=None, Q=None, naive=None)
    wait_built(lab)
    assert lab_view.designer is not None
    assert_japanese(lab_texts(view), "the design editor")


def test_switching_language_keeps_the_runs_and_rewords_everything():
    """Setting lang on a live page: the same runs, figures and step count, the link's state, and every text
    in the new language (then back in English)."""
    from app.views.page import AppView
    view = AppView("?pot=double-well&seed=7")
    try:
        wait_built(view.lab)
        lab_view = view.lab_view
        lab_view.recipe_card.collapsed = False
        lab_view.ladder_card.collapsed = False
        view.lab.step(3)
        t = time.monotonic()
        while view.lab.runs[0].t < 3 and time.monotonic() - t < 30:
            time.sleep(0.05)
        runs, figures, steps = list(view.lab.runs), [f for p in lab_view.plots for f in p.figures], \
            [r.t for r in view.lab.runs]
        assert escaped_words(lab_texts(view), identifiers()), "the English page has English words"
        before = view.nav() | {"seed": view.config.seed, "pot": view.config.potential}
        view.lang_select.value = "ja"
        assert view.lang == "ja" and lab_view.lang == "ja"
        assert view.lab.runs == runs and [r.t for r in view.lab.runs] == steps
        assert [f for p in lab_view.plots for f in p.figures] == figures
        assert (view.nav() | {"seed": view.config.seed, "pot": view.config.potential}) == before | {"lang": "ja"}
        assert_japanese(lab_texts(view), "after switching")
        view.lang_select.value = "en"
        assert view.lab.runs == runs and "Play" in {lab_view.run_controls.play.name}
        assert view.nav()["lang"] == ""
    finally:
        view.stop()
