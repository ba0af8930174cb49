"""The Paper figures page in Japanese (issue 31) without a browser: every line of every run's record in assets/
(the evidence of a verdict and the interval that decides it) reads in Japanese through a template of
app/locale/ja/figures-record.toml, with the run's numbers as it wrote them; so do the tables' word cells, column
names and settings' names (app/locale/ja/i31-figs.toml). A line no template matches stays English, marked so.

The templates are the lines' own: dropping any one of them (each tried in turn) leaves some line of the assets
in English, so the check below fails, and a template no line uses is caught the same way.
"""
from __future__ import annotations

import csv
import json
import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from app.model import figures
from app.model.content import ASSETS_DIR
from app.model.figures import cell_in, column_label, neutral, record_in, record_templates
from app.model.i18n import LOCALE_DIR
from app.model.i18n import catalogue as entries

RECORD_FILE = LOCALE_DIR / "ja" / figures.RECORD
NAMES_FILE = LOCALE_DIR / "ja" / "i31-figs.toml"
# record lines allowed to stay in English (none today): add one here only with the reason it cannot be templated
ALLOWED_ENGLISH: set[str] = set()
# settings' names written in Latin letters in Japanese too: a symbol of the paper (V, L, C, B, d, k, N, ...)
SYMBOL = re.compile(r"[A-Za-z]{1,2}\d?|Bhat")
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]\d+)?")
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def records() -> list[dict]:
    out = []
    for path in sorted(Path(ASSETS_DIR).rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("claims"), list):
            out.append(data)
    return out


def record_lines() -> list[str]:
    """Every evidence and decides line of the committed runs, and every setting's value in words, once each (a
    setting holding a dict or a list is shown as the run wrote it: its keys are the code's)."""
    lines = {c[k] for r in records() for c in r["claims"] for k in ("evidence", "decides") if c.get(k)}
    lines |= {str(v) for r in records() for v in r.get("settings", {}).values()
              if isinstance(v, str) and not neutral(v)}
    return sorted(lines)


def tables() -> list[list[list[str]]]:
    return [list(csv.reader(p.open(encoding="utf-8"))) for p in sorted(Path(ASSETS_DIR).rglob("*.csv"))]


def word_cells() -> list[str]:
    """The tables' cells with a word in them (numbers and names are shown as they are)."""
    return sorted({c for t in tables() for row in t[1:] for c in row if c and not neutral(c)})


def untranslated() -> list[str]:
    return [t for t in record_lines() + word_cells() if t not in ALLOWED_ENGLISH and record_in(t, "ja") is None]


def first_untranslated(items: list[str], hint: str) -> str | None:
    """A line left in English, looked for first among those holding `hint` (a template's longest words)."""
    for text in sorted(items, key=lambda t: hint not in t):
        if text not in ALLOWED_ENGLISH and record_in(text, "ja") is None:
            return text
    return None


def test_every_record_line_in_the_assets_reads_in_japanese_with_its_numbers():
    lines = record_lines()
    assert len(lines) >= 90, "too few record lines: is it reading assets/?"
    assert untranslated() == []
    for line in lines:
        shown = record_in(line, "ja")
        if shown is None:
            continue
        # the run's numbers, every one of them, as the run wrote them (a template adds words, never drops a value)
        assert not Counter(NUMBER.findall(line)) - Counter(NUMBER.findall(shown)), (line, shown)
        assert JAPANESE.search(shown) or neutral(line), shown


def test_every_template_is_needed_by_a_line_of_the_assets(monkeypatch):
    """Without any one entry of figures-record.toml, some line or cell of the assets is left in English: the
    coverage test above can fail, and no entry is stale."""
    with RECORD_FILE.open("rb") as f:
        keys = list(tomllib.load(f))
    templates, table = record_templates("ja"), entries("ja")
    assert untranslated() == []
    items, unneeded = record_lines() + word_cells(), []
    for key in keys:
        if "{" in key:
            monkeypatch.setattr(figures, "record_templates", lambda lang, k=key: tuple(
                t for t in templates if t[0] != k))
        else:
            monkeypatch.setattr(figures, "entries", lambda lang, k=key: {x: v for x, v in table.items() if x != k})
        if first_untranslated(items, max(re.split(r"\{\w+\}", key), key=len)) is None:
            unneeded.append(key)
        monkeypatch.undo()
    assert unneeded == [], "entries no line of assets/ needs:\n" + "\n".join(unneeded)


def test_a_line_without_a_template_stays_english_and_marked(tmp_path):
    from app.views.figures import FiguresView
    from samplers.reproduce import REPRODUCTIONS
    from samplers.reproduce.base import Claim, Outcome, write
    assert record_in("a line no template knows, 0.5", "ja") is None
    # a field for numbers and names does not take words: the template is passed over, the line stays English
    assert record_in("seconds per proposal QNHMC 1.2 ms, while the cache warms", "ja") is None
    assert record_in("seconds per proposal QNHMC 1.2 ms, HMC 0.4 ms", "ja") == \
        "提案あたりの秒数 QNHMC 1.2 ms, HMC 0.4 ms"
    assert record_in("a line no template knows, 0.5", "en") == "a line no template knows, 0.5"
    claims = [Claim("claim 0", True, "log ratio +2.64; ESS 3098, Σρ 1.55"),
              Claim("claim 1", None, "an unforeseen wording 0.25", decides="naive − gSGRHMC above +0.3 holds, "
                    "below −0.3 does not hold (twice the difference's sd)")]
    write(REPRODUCTIONS["scir-fig1"], Outcome([dict(method="exact", ks=0.5)], claims), tmp_path)
    text = " ".join(str(getattr(o, "object", "")) for o in FiguresView(figures.catalogue(tmp_path), lang="ja")
                    .body.select(lambda o: hasattr(o, "object")))
    assert "<div class='evidence'>対数比 +2.64。ESS 3098, Σρ 1.55</div>" in text       # no label, no lang='en'
    record = entries("ja")["The run's record (in English): "]
    assert f"<div class='evidence'>{record}<span lang='en'>an unforeseen wording 0.25</span>" in text
    assert "素朴な版 − gSGRHMC が +0.3 を上回れば成り立ち" in text
    assert text.count(record) == 1
    english = " ".join(str(getattr(o, "object", "")) for o in FiguresView(figures.catalogue(tmp_path))
                       .body.select(lambda o: hasattr(o, "object")))
    assert "<div class='evidence'>log ratio +2.64; ESS 3098, Σρ 1.55</div>" in english
    assert "<div class='evidence'>an unforeseen wording 0.25 Decided by: naive − gSGRHMC above" in english


def test_columns_cells_and_settings_names_of_the_assets_are_in_japanese():
    names = {h for t in tables() for h in t[0]}
    settings = {k for r in records() for k in r.get("settings", {})}
    gaps = sorted(k for k in names | settings if k not in entries("ja") and not SYMBOL.fullmatch(k))
    assert gaps == [], f"no Japanese name for {gaps}"
    assert column_label("burn_in_s", "ja") == "バーンイン(秒)" and column_label("burn_in_s") == "burn in s"
    assert cell_in("naive QNHMC (Eq. 4, no MH), tuned ε = 0.4", "ja") == "素朴な QNHMC(式 4、MH なし)、調整後 ε = 0.4"
    assert cell_in("0.8311", "ja") == "0.8311" and cell_in("sghmc-naive", "ja") == "sghmc-naive"
    # the names' file holds only those names and the two joints of a translated record
    with NAMES_FILE.open("rb") as f:
        own = set(tomllib.load(f))
    assert own - names - settings == {"; ", ", ", "row"}


@pytest.mark.parametrize("name", ["qnhmc-logistic", "scir-fig2"])
def test_the_plot_menu_is_labelled_in_japanese_and_keeps_the_column_keys(name):
    from app.views.figures import plot_view
    fig = next(f for p in figures.catalogue().papers for f in p.figures if f.name == name)
    ja, en = plot_view(fig, "ja")[0], plot_view(fig)[0]
    assert list(ja.options.values()) == list(en.options.values()) and ja.value == en.value
    assert all(JAPANESE.search(label) for label in ja.options if label not in ("KL", "KS", "ESS", "ε"))
    assert list(en.options) == [k.replace("_", " ") for k in en.options.values()]
