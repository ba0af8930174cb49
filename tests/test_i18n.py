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

import numpy as np
import pytest

from app.model import i18n

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"
JA_DIR = i18n.LOCALE_DIR / "ja"
# the catalogue files of this area (others' files, app/locale/ja/<helper>.toml, are checked by their own tests)
OWN_FILES = ("lab.toml", "messages.toml", "i31-lib.toml")
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
    view.present_button.value = True
    assert_japanese(lab_texts(view), "presentation mode")
    assert " 上の " in view.heading.object           # "<pair> on <target>", in Japanese word order
    view.present_button.value = False
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


def string_words(*roots: Path) -> set[str]:
    """Every word of every string constant (f-strings' literal parts included) in the Python files under roots."""
    words: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    words |= set(re.findall(r"[A-Za-z]{3,}", node.value))
    return words


@pytest.mark.parametrize("name, roots", [(i18n.MESSAGES, ("app", "samplers")), (i18n.CHECKS, ("lessons",))])
def test_every_message_template_is_still_written_somewhere(name, roots):
    """(d) for messages.toml (checks.toml): each template's words are still in some string of app/ or samplers/
    (lessons/) (the messages are put together from pieces, so words rather than whole sentences), so a message
    reworded there leaves no stale template behind unnoticed."""
    known = string_words(*(ROOT / r for r in roots))
    assert {"diverged", "tolerance"} & known and "frobnicated" not in known       # it can find a word, and miss one
    with (JA_DIR / name).open("rb") as f:
        keys = tomllib.load(f)
    stale = {key: missing for key in keys
             if (missing := [w for w in re.findall(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}", " ", key)) if w not in known])}
    assert not stale, "templates with words no code writes:\n" + "\n".join(f"  {k!r}: {v}" for k, v in stale.items())


def test_a_bad_lang_in_a_link_is_reported_and_english_is_kept():
    from app.model.urlstate import NAV_KEYS, nav_errors
    assert "lang" in NAV_KEYS
    assert nav_errors({"lang": "fr"}, ["lab"], []) == ["URL 'lang'='fr': must be one of en, ja"]
    assert nav_errors({"lang": "ja"}, ["lab"], []) == []
    assert i18n.tr_message("Some of the link was ignored: URL 'lang'='fr': must be one of en, ja", "ja") == \
        "リンクの一部を無視した: URL 'lang'='fr': en, ja のいずれかでなければならない"
    assert i18n.parse_lang("fr") == "en" and i18n.parse_lang("ja") == "ja"


# --- (e) what the library and the lab say about bad input, in Japanese -------------------------------------------
# Two ways in, both by code: (1) a table of bad inputs driven through the paths the lab takes (a typed U, D and Q
# cells, a design file, a model file and its CSV, a link), each message read with lang=ja; (2) every refusal the
# library and the model raise (an AST scan of their raise sites: InputError and its kinds, a file's located
# error, the model's ValueErrors), its fields filled in, read with lang=ja. What the user typed stays as typed: its
# words are not counted. A Latin word left is an untranslated message.

M_FILE = "params: [t1, t2]\ndata: d.csv\nloglik: -(x - t1)^2/2\nlogprior: -t1^2/2 - t2^2/2\n"
M_CSV = b"x\n1\n2\n3\n"
BAD_U = ["", "x^", "2x", "x**y", "foo(x)", "sin x", "x,y", "(x", "x)", "1/0", "x^x", "x^1e9", "log(-1)", "sqrt(-2)",
         "1e999", "1e-999", "x..2", "-x^2", "x^4 - 1/x", "tan(x)", "x^2 + z", "exp", "exp()", "abs(x, y)", "x = 2",
         "x;", "'x'", "sinn(x)", "xy", "1.2.3", "x^2/(x-x)", "(" * 40 + "x" + ")" * 40, "x^(1/3)", "abs(x)^0.5",
         "x" + "+x" * 300, "2^2^2^2^2^2", "x^4 + y^(1/3)", "-x^4", "sqrt(x^2)", "x^4 - 2*x^2 + log(x)", "0^-1",
         "pi(x)", "x^4+y", "x\u22122", "x[1]", "x^y", "1e13*x^2", "1e-13*x^2"]
# sghmc's D and Q on a 2-D target, one cell typed: (matrix, row, column, text)
BAD_CELLS = [("D", 2, 2, "-1"), ("D", 2, 2, "x"), ("D", 2, 3, "1"), ("Q", 0, 2, "1"),
             ("D", 0, 0, "1/(theta_1-theta_1)"), ("D", 2, 2, "sqrt(-1-theta_1^2)"), ("D", 2, 2, "2x"),
             ("Q", 2, 3, "theta_1"), ("D", 2, 2, "(theta_1+theta_2+r_1+r_2+U+2)^64"), ("D", 2, 2, "-theta_1^2"),
             ("D", 2, 2, "r_3")]
_DQ2 = "D: [[1, 0], [0, 1]]\nQ: [[0, 1], [-1, 0]]\naux: [r]\nkinetic: r^2/2\n"
BAD_DESIGNS = ["", "[1, 2]", "D: [[1]]", "D: [[1]]\nQ: [[0]]\nfoo: 1", "D: [[1]]\nQ: [[0]]\nparms: {}",
               "D: [[1, 0]]\nQ: [[0]]", "D: [[1]]\nQ: [[0, 1], [1, 0]]", "D: [[1]]\nQ: [[0]]\nname: 'a b'",
               "D: [[1]]\nQ: [[0]]\naux: [theta]", "D: [[1]]\nQ: [[0]]\naux: [exp]", "D: [[1]]\nQ: [[0]]\naux: [_r]",
               "D: [[1, 0], [0, 1]]\nQ: [[0, 1], [-1, 0]]\naux: [r]", "D: [[1]]\nQ: [[0]]\nparams: 3",
               "D: [[1]]\nQ: [[0]]\nparams: {eps: x}", "D: [[1]]\nQ: [[0]]\nparams: {eps: .inf}",
               "D: [[1]]\nQ: [[0]]\nparams: {eps: 1e13}", "D: [[1]]\nQ: [[0]]\ndrop: [foo]",
               "D: [[1]]\nQ: [[0]]\ndrop: 3",
               "D: [[1]]\nQ: [[0]]\nnaive: foo", "D: [[1]]\nQ: [[0]]\nblocks: 3", "D: [[1]]\nQ: [[0]]\nbox: 3",
               "D: [[1]]\nQ: [[0]]\n!!python/object:os.system x: 1", "D: [[1]]\nQ: [[0]]\nD: [[2]]",
               "D: [[1]]\nQ: [[0]]\n: 3", "D: [1]\nQ: [[0]]", "D: [[1, 2], [3]]\nQ: [[0]]", "D: [[x^]]\nQ: [[0]]",
               "D: [[-1]]\nQ: [[0]]", _DQ2 + "box: {s: [0, 1]}", _DQ2 + "box: {r: [1, 0]}", _DQ2 + "box: {r: 3}",
               _DQ2 + "blocks: [[theta]]", _DQ2 + "blocks: [[theta, r], [r]]", _DQ2 + "blocks: [[theta], [s]]",
               _DQ2 + "blocks: [[theta], []]", _DQ2.replace("[r]", "[r, r]"), "D: [[1]]\nQ: [[0]]\ndescription: [1]",
               "D: [[1e13]]\nQ: [[0]]", "D: [[1]]\nQ: [[1]]", _DQ2.replace("[1, 0], [0, 1]", "[1, 1], [0, 1]"),
               "D: [[a]]\nQ: [[0]]", "D: [[{a: 1}]]\nQ: [[0]]", "D: [[.nan]]\nQ: [[0]]", "a: [" * 40,
               _DQ2 + "naive: gamma\ndrop: [gamma]", "D: [[1]]\nQ: [[0]]\nx: &a [1]\ny: *a",
               "D: [[1]]\nQ: [[0]]\n? [1]\n: 2",
               "D: [[1/theta]]\nQ: [[0]]", "D: [[sqrt(-1-theta^2)]]\nQ: [[0]]"]
BAD_DESIGN_EDITS = [("params", "eps"), ("params", "eps = x"), ("params", "eps = inf"), ("aux", 9), ("json", "x"),
                    ("json", "{}"), ("json", "[1]"), ("json", "x" * 70_000)]
BAD_MODELS = [{"a.csv": M_CSV}, {"m.yaml": M_FILE.encode(), "n.yaml": b""}, {"m.yaml": M_FILE.encode()},
              {"m.yaml": M_FILE.encode(), "d.csv": b"x\n" + b"1\n" * 2100},
              {"m.yaml": M_FILE.encode(), "d.csv": b"x" * (2 << 20)}, {"m.yaml": b"", "d.csv": M_CSV},
              {"m.yaml": b"[1]", "d.csv": M_CSV}, {"m.yaml": (M_FILE + "foo: 1").encode(), "d.csv": M_CSV},
              *({"m.yaml": M_FILE.replace(a, b).encode(), "d.csv": M_CSV} for a, b in [
                  ("[t1, t2]", "[1t]"), ("[t1, t2]", "[exp]"), ("[t1, t2]", "3"), ("[t1, t2]", "[t1, t1]"),
                  ("[t1, t2]", "{w: 0}"), ("[t1, t2]", "[[1]]"), ("[t1, t2]", "[_t]"),
                  ("[t1, t2]", "[" + "a" * 40 + "]"),
                  ("[t1, t2]", "{w: 101}"), ("-(x - t1)^2/2", "-(y - t1)^2/2"), ("-(x - t1)^2/2", "2t1"),
                  ("-(x - t1)^2/2", "-t1^2"), ("-t1^2/2 - t2^2/2", "x*t1"), ("-(x - t1)^2/2", "[1]"),
                  ("-t1^2/2 - t2^2/2", "t1^2"), ("loglik", "lglik"), ("data: d.csv", "data: 3"),
                  ("data: d.csv", "data: e.csv"), ("-t1^2/2 - t2^2/2", "t1^4 - t2^2/2")]),
              *({"m.yaml": (M_FILE + extra).encode(), "d.csv": M_CSV} for extra in [
                  "box: [[0, 1]]", "box: [[1, 0], [0, 1]]", "box: [[1, x], [0, 1]]", "box: [1, 2]", "start: [0]",
                  "start: [0, x]"]),
              *({"m.yaml": M_FILE.encode(), "d.csv": csv} for csv in [
                  b"", b"x\n", b"x,x\n1,2\n", b"x\n1,2\n", b"x\nfoo\n", b"y\n1\n", b"1\n2\n",
                  b",".join(b"c%d" % i for i in range(300)) + b"\n1\n"])]
# samplers built with what the lab's run would build them with: (sampler, target, V, batch, parameters)
BAD_BUILDS = [("santa", "double-well", 1.0, None, {"G1": "expr:y"}),
              ("santa", "double-well", 1.0, None, {"integrator": "splitting", "G1": "expr:1+x^2"}),
              ("qnhmc", "gaussian", 1.0, None, {"update": "sr1", "memory": 5}),
              ("scir", "gaussian", None, 10, {}), ("scir", "gaussian", None, None, {}),
              ("scir", "gamma:1", 1.0, None, {}),
              ("sgld", "double-well", 1.0, 10, {})]
BAD_LINKS = ["?n=0", "?n=x", "?V=-1", "?seed=1.5", "?pot=nope", "?s=nope", "?a.eps=-1", "?a.eps=x", "?a.eps=inf",
             "?a.foo=1", "?s=santa&a.G1=foo", "?s=santa&a.G1=expr:x^", "?s=santa&a.G1=expr:-1",
             "?pot=dirichlet:1", "?pot=dirichlet:x", "?pot=gamma:-1", "?pot=gamma:x", "?pot=dirichlet:1,2;beta=3",
             "?box=1,0", "?box=x", "?a.beta=0", "?s=scir&a.beta=2&pot=gamma:1", "?D=x", "?lang=fr",
             "?s=santa&a.integrator=x", "?batch=0", "?design=x", "?design={}", "?foo=1",
             "?s=sgld&a.Bhat=-1", "?a.C=x", "?speed=x", "?burn=-1", "?start=x", "?dtype=x", "?tab=x",
             "?lesson=x", "?s=sgld&a.beta=x", "?s=qnhmc&a.memory=1.5", "?cmp=x"]


def bad_input_messages() -> list[tuple[str, str]]:
    """(message, what was typed) for every case of the table, as the lab words it (in English)."""
    from app.model import design as design_model
    from app.model.config import LabConfig
    from app.model.lab import typed_potential_reason
    from app.model.modelupload import _checked, _texts
    from app.model.urlstate import apply_query, nav_errors, parse_search
    from samplers.design import design_recipe, parse_design
    from samplers.engine.edit import edited_recipe, matrix_cells
    from samplers.errors import InputError
    from samplers.registry import build_sampler
    from samplers.targets.presets import get_potential
    out = []
    for text in BAD_U:
        block = typed_potential_reason(text)
        assert block is not None, text
        out += [(block.message, text), (block.detail, text)]
    base = build_sampler("sghmc", get_potential("banana")).recipe
    for name, i, j, text in BAD_CELLS:
        D, Q = matrix_cells(base._raw[0]), matrix_cells(base._raw[1])
        (D if name == "D" else Q)[i][j] = text
        with pytest.raises(InputError) as err:
            edited_recipe(base, D, Q, base.drop)
        out.append((str(err.value), text))
    for text in BAD_DESIGNS:
        with pytest.raises(InputError) as err:
            design_model.from_yaml(text)
            design_recipe(parse_design(text))
        out.append((str(err.value), text))
    data = design_model.empty_design(1)
    def add_aux(d, n):
        for k in range(n):
            d = design_model.add_aux(d, f"r{k}")

    edits = {"params": design_model.set_params, "aux": add_aux, "json": lambda d, text: design_model.from_json(text)}
    for kind, arg in BAD_DESIGN_EDITS:
        with pytest.raises(ValueError) as err:
            edits[kind](data, arg)
        out.append((str(err.value), str(arg)))
    for files in BAD_MODELS:
        typed = " ".join([*files, *(v.decode("utf-8", "replace") for v in files.values())])
        try:
            args = _texts(files)
        except InputError as err:
            out.append((str(err), typed))
            continue
        sent = []
        _checked(sent.append, *args, "model:upload:test")
        assert sent[0][0] == "refused", files
        out.append((sent[0][1], typed))
    from samplers.registry import build_sampler as build
    for name, target, V, batch, params in BAD_BUILDS:
        with pytest.raises(InputError) as err:
            build(name, get_potential(target), V, batch, **params).init_state(4, np.random.default_rng(0))
        out.append((str(err.value), " ".join(map(str, params.values()))))
    for query in BAD_LINKS:
        errors = apply_query(LabConfig(), parse_search(query)) + nav_errors(parse_search(query), ["lab"], ["02-recipe"])
        assert errors, query
        out += [(m, query) for m in errors]
    return out


# What is left in English, with why: the words of other parsers, quoted after the lab's own sentence
THIRD_PARTY = {
    r"(?<=有効な YAML ではない: ).*": "PyYAML's own description of a syntax error: its wording, not enumerable",
    r"(?<=JSON ではない: ).*?(?= 文字目で|$)|(?<=文字目で ).*": "json's own description of a syntax error",
    r"(?<=: )Expecting value: line \d+ column \d+ \(char \d+\)$": "json's, quoted by a link's D or Q (urlstate)",
}
# names a message lists as they are written (the parser's functions and constants, a file's keys, sympy's Abs
# for what was typed abs: the kink's message shows the expression sympy parsed)
WRITTEN_AS_IS = {"exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs", "pi", "Abs", "gamma", "friction",
                 "noise_correction", "name", "description", "aux", "kinetic", "blocks", "naive", "drop", "box",
                 "params", "data", "loglik", "logprior", "start", "low", "high", "lo", "hi", "euler", "splitting",
                 "update", "memory", "identity", "rmsprop", "batch", "integrator", "Bhat", "per", "sampling",
                 "alpha", "rho", "beta", "expr", "dirichlet", "sparse", "dense", "correlated", "gaussian", "length",
                 "json", "none", "SVRG", "LBFGS", "sr1", "pip", "jax", "dim", "names", "inf", "nan", "csv", "yaml",
                 # a link's choices (lang, tab, start), as a link spells them
                 "en", "ja", "lab", "lessons", "figures", "models", "near", "exact"}
# words written in Latin letters in Japanese text too (formats, languages, libraries), and symbols inside formulas
# (-inf, -theta_1**2), where a name is not told apart by the word boundaries escaped_words looks for
LATIN_IN_JAPANESE = {"ASCII", "JSON", "Python", "numpy", "NaN", "inf", "theta"}


@pytest.fixture(scope="module")
def bad_inputs():
    return bad_input_messages()


def english_left(message: str, typed: str, names=None) -> dict[str, str]:
    """The Latin words of the message in Japanese, less what the user typed and names written as they are."""
    shown = i18n.tr_message(message, "ja")
    for pattern in THIRD_PARTY:
        shown = re.sub(pattern, " ", shown)
    names = (identifiers() | WRITTEN_AS_IS) if names is None else names
    found = escaped_words([shown], names | set(re.findall(r"[A-Za-z_]\w*", typed)))
    return {w: t for w, t in found.items() if w not in LATIN_IN_JAPANESE}


def test_bad_input_is_refused_in_japanese(bad_inputs):
    assert len(bad_inputs) > 150
    names = identifiers() | WRITTEN_AS_IS
    left = {m: w for m, t in bad_inputs if (w := english_left(m, t, names))}
    assert not left, "messages left in English with lang=ja:\n" + "\n".join(
        f"  {m!r}: {sorted(w)}" for m, w in left.items())


def test_a_refusal_quotes_what_was_typed_as_typed(bad_inputs):
    """The user's text inside a message is not translated or changed: the quoted parts ('...') of the English
    message are in the Japanese one."""
    for message, _ in bad_inputs:
        shown = i18n.tr_message(message, "ja")
        for quoted in re.findall(r"'[^'\n]{1,40}'", message):
            assert quoted in shown, (message, shown)


def test_a_removed_template_lets_english_through(bad_inputs, monkeypatch):
    """The test above can fail: without any one of the templates it relies on (each tried in turn, the exact
    entries taken away with it), some message falls through to English."""
    names = identifiers() | WRITTEN_AS_IS
    patterns = i18n._patterns("ja")
    table = i18n.catalogue("ja")
    hits = []

    class Recorded:       # a template's pattern that notes each message it matches, at any depth of nesting
        def __init__(self, pattern):
            self.pattern = pattern

        def match(self, text):
            m = self.pattern.match(text)
            if m:
                hits.append(self.pattern)
            return m

    used = {}      # a template, with a message whose translation takes it
    # a template that only passes its fields on ("{cell}: {why}", its Japanese its English) words nothing itself
    passing = {p for p, v in patterns if p.match(v)}
    with monkeypatch.context() as mp:
        mp.setattr(i18n, "_patterns", lambda lang: [(Recorded(p), v) for p, v in patterns])
        for message, typed in bad_inputs:
            hits.clear()
            i18n.tr_message(message, "ja")
            for pattern in set(hits) - passing:
                used.setdefault(pattern.pattern, (pattern, message, typed))
    assert len(used) > 100
    before = {message: i18n.tr_message(message, "ja") for message, _ in bad_inputs}
    softened = []
    for key, (pattern, message, typed) in sorted(used.items()):
        with monkeypatch.context() as mp:
            mp.setattr(i18n, "_patterns", lambda lang, _p=pattern: [x for x in patterns if x[0] is not _p])
            mp.setattr(i18n, "catalogue", lambda lang: {k: v for k, v in table.items() if "{" not in k})
            if not english_left(message, typed, names):
                softened.append((key, message, i18n.tr_message(message, "ja")))
                assert i18n.tr_message(message, "ja") != before[message], f"{key!r} is not what words {message!r}"
    # a message a more general template words without English once its own template is gone (its wording then
    # the general one's): few, the rest fall through to English
    assert len(softened) <= len(used) // 10, "\n".join(f"{k}: {m!r} -> {t!r}" for k, m, t in softened)


# the modules whose raise sites a user of the lab can reach, and the calls that raise a refusal
REFUSING = ["samplers/targets/expr.py", "samplers/targets/typed.py", "samplers/targets/potential.py",
            "samplers/targets/presets.py", "samplers/targets/simplex.py", "samplers/targets/modelfile.py",
            "samplers/targets/usermodel.py", "samplers/targets/reference.py", "samplers/engine/edit.py",
            "samplers/engine/validate.py", "samplers/engine/symbols.py", "samplers/engine/noise.py",
            "samplers/engine/recipe.py", "samplers/marked.py", "samplers/design/schema.py",
            "samplers/design/build.py", "samplers/design/__init__.py", "samplers/sampler.py", "samplers/registry.py",
            "samplers/gradients.py", "samplers/stepsize.py", "samplers/families/santa.py",
            "samplers/families/simplex.py", "samplers/families/qnhmc.py", "app/model/design.py",
            "app/model/modelupload.py", "app/model/urlstate.py", "app/model/config.py", "app/model/presets.py",
            "app/model/models.py", "app/model/live_run.py", "app/model/lab.py", "app/model/autoeps.py"]
# modules whose refusals never reach a page of the lab, and why (the command line's, cli.py and diagnostics.py,
# raise none of these)
NOT_REFUSING_IN_THE_LAB = {
    "samplers/run.py": "steps, burn, thin and dtype of the Python API and the command line (the lab's are bounded)",
    "samplers/targets/lda.py": "the shipped corpora of the Paper figures, not a user's data",
    "samplers/targets/models.py": "the shipped data files of the QNHMC models, not a user's",
    "app/model/i18n.py": "a catalogue file that breaks the format: the developers' mistake",
    "app/model/session.py": "log lines (log.error), not messages",
}
RAISERS = {"InputError", "PotentialError", "NotFinite", "NotIntegrable", "SamplerError", "RecipeError", "DesignError",
           "ModelFileError", "ExpressionError", "GradientError", "ValueError", "error"}
# sites whose message is completed in code by a piece of English the scan cannot fill in (a hint, a choice of
# words): the bad-input table drives each of their forms
FILLED_IN_CODE = {
    "unknown key '{…}'{…}": "a hint: (did you mean '…'?) or (the keys: …); both in BAD_DESIGNS",
    "{…}: '{…}' is not a name: a letter, then letters, digits or '_'{…}": "a tail on names starting with _",
    "{…} must be {…} {…}": "'one of' or 'a list of', DROPPABLE (drop: 3, naive: foo in BAD_DESIGNS)",
    "{…} is not {…}: {…}[{…},{…}] = {…} but {…}[{…},{…}] = {…} at z = {…}": "symmetric or skew-symmetric",
    "'{…}' is not a {…} name: a letter, then letters, digits or _{…}": "'parameter', and a tail on _names",
    "{…} [lo, hi] pair{…}, one per plotted parameter": "a plural 's'",
    "the box needs {…} (lo, hi) pair{…} (one per coordinate), got {…}": "a plural 's'",
    "a {…} name has at most {…} characters": "'parameter'",
    "G1: a typed G1 is a function of x on 1-D targets and of x, y on 2-D ones; this target has d = {…}{…}":
        "a tail: ' and G1 uses y'",
    "{…} must be one of {…}{…}, got '{…}'": "a tail: ' or expr:<a function of x, y>'",
    "{…} must be {…}{…}, got {…}": "' or auto'",
    "the '{…}' estimator draws minibatches: give a batch size": "the estimator's name or 'sampling'",
    "{…}: {…}": "a place and a message: each part is a message of its own",
    "cannot read design file {…}: no such file (the shipped designs, found by name: {…})": "a file path: the CLI's",
    "cannot read design file {…}: {…}": "a file path: the command line's",
    "constant is not a real number {…}": "'at position n'",
    "constant too large {…} (limit 1e300)": "'at position n'",
    "exponents must be constant numbers ({…})": "a hint: 'e.g. x**2' or 'use exp(...) for e to a power'",
    # what only Python code can give the library (the lab builds these from files it has checked)
    "DataModel.from_jax needs JAX: pip install -e '.[jax]'": "Python API: JAX is not used by the lab",
    "blocks must list every state index exactly once": "Python API: a design's blocks are checked by its schema",
    "a recipe with numeric D and Q has no symbolic drift": "a caller's bug, not an input",
}


def _skeleton(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _skeleton(node.left), _skeleton(node.right)
        return None if left is None and right is None else (left or "{…}") + (right or "{…}")
    return None


def refusal_sites(modules=REFUSING) -> dict[str, str]:
    """{the message with its fields as {…}: where it is raised} for every refusal in the modules."""
    sites = {}
    for rel in modules:
        path = ROOT / rel
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name not in RAISERS or (name == "ValueError" and not rel.startswith("app/")):
                continue
            for arg in node.args:
                if (text := _skeleton(arg)) is not None:
                    sites.setdefault(text, f"{rel}:{node.lineno}")
                    break
    return sites


def test_every_module_that_refuses_input_is_scanned_or_left_out_with_its_reason():
    """A new module raising refusals is noticed: each module of samplers/ and app/model/ with a raise site is in
    REFUSING or in NOT_REFUSING_IN_THE_LAB, and both lists name modules that raise."""
    paths = sorted([*(ROOT / "samplers").rglob("*.py"), *(APP / "model").rglob("*.py")])
    raising = {rel for path in paths if refusal_sites([rel := str(path.relative_to(ROOT))])}
    assert raising == set(REFUSING) | set(NOT_REFUSING_IN_THE_LAB), (
        sorted(raising - set(REFUSING) - set(NOT_REFUSING_IN_THE_LAB)),
        sorted((set(REFUSING) | set(NOT_REFUSING_IN_THE_LAB)) - raising))


def test_every_refusal_of_the_library_reads_in_japanese():
    """(2) each raise site's message, its fields filled with a number (what a field holds is a value, a name or
    a message of its own, which the table above drives), has a template: no English is left."""
    sites = refusal_sites()
    assert len(sites) > 150, "the scan found too few raise sites"
    names = identifiers() | WRITTEN_AS_IS
    left = {}
    for text, where in sites.items():
        if text in FILLED_IN_CODE or not re.search(r"[A-Za-z]", text):   # "{…}": a message passed on
            continue
        message = text.replace("{…}", "7")
        if words := english_left(message, "", names):
            left[text] = (where, sorted(words))
    assert not left, "refusals without a Japanese template:\n" + "\n".join(
        f"  {w}: {t!r} {words}" for t, (w, words) in left.items())
    assert not set(FILLED_IN_CODE) - set(sites), "stale FILLED_IN_CODE entries"


def test_the_target_picker_shows_a_refusal_in_japanese_with_the_typed_text_escaped():
    """Through the view: a typed U's and an uploaded model's refusals in the page's language, what the user typed
    (here a file name with markup) escaped, and in English again after switching."""
    from app.model.config import LabConfig
    from app.model.lab import Lab, typed_potential_reason
    from app.model.modelupload import _checked, _texts
    from app.views.controls import PotentialPicker
    picker = PotentialPicker(Lab(LabConfig()), lang="ja")
    picker._typed_field()
    picker._show_status("error", typed_potential_reason("2x").detail)
    assert "演算子がない" in picker.status.object and "2*x" in picker.status.object
    sent = []
    _checked(sent.append, *_texts({"<img src=x>.yaml": M_FILE.replace("[t1, t2]", "3").encode(), "d.csv": M_CSV}),
             "model:upload:test")
    picker._show_upload("error", sent[0][1])
    shown = picker.upload_status.object
    assert "&lt;img src=x&gt;.yaml: 1 行 9 列: params: 名前のリストを書く" in shown and "<img" not in shown, shown
    picker.lang = "en"
    assert "missing operator" in picker.status.object and "a list of names" in picker.upload_status.object
