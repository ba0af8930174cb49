"""The Paper figures section without a browser: which files in assets/ belong to which reproduction,
its paper, title and claims with their verdicts, and its table rounded for reading.

Titles, sources and papers come from the library's table of reproductions; the verdicts come from the
JSON each reproduction writes next to its figure (the numbers our run produced, never the docs' Markdown).
Files that belong to no reproduction are kept apart, to be listed by name.

In another language (`in_lang`) the titles, sources, claims and the paper's numbers go through the catalogue,
keyed by their English text as the reproduction writes it (app/locale/ja/pages-claims.toml): a claim's id is
its text, so a claim whose wording changes in a rerun has no entry and is shown in English (and the
completeness test in tests/test_lessons_ja.py fails) rather than under a stale translation.

The evidence and the interval that decides a verdict are written by the run with its numbers in them: they are
translated by templates (app/locale/<lang>/figures-record.toml, `record_in`), never by a stored copy of each line,
so a rerun's new numbers read in Japanese too. A line is translated whole or not at all: one clause without a
template leaves it in English (marked so by the view), never half-translated. Column names and the tables' word
cells go through the same catalogue; the numbers and the samplers' names are shown as the run wrote them.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from samplers.registry import REGISTRY
from samplers.reproduce import REPRODUCTIONS
from samplers.reproduce.base import verdict_word

from .content import ASSETS_DIR, IMAGE_EXT, MAX_FILE_BYTES, TABLE_EXT
from .i18n import DEFAULT_LANG, LOCALE_DIR, tr
from .i18n import catalogue as entries

SIGNIFICANT = 4
MAX_ROWS = 200
OWN_EXT = IMAGE_EXT | {".csv", ".json"}     # what `python -m samplers reproduce` writes
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Verdict:
    claim: str
    holds: bool | None        # None: not decidable from the run's numbers
    evidence: str
    decides: str = ""         # the interval that would decide it, where the run states one
    evidence_lang: str = DEFAULT_LANG      # the language `evidence` is in (English where no template fits it)
    decides_lang: str = DEFAULT_LANG       # and `decides`

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "?"}[self.holds]

    @property
    def word(self) -> str:
        return verdict_word(self.holds)

    def word_in(self, lang: str = DEFAULT_LANG) -> str:
        """The verdict's word in the language (the library's words, through the catalogue)."""
        return {True: tr("holds", lang), False: tr("does not hold", lang),
                None: tr("not decidable here", lang)}[self.holds]


def _holds(value) -> bool | None:
    """The JSON's verdict: true, false or null (an older file's "True"/"False" strings read as such; anything
    else is not a verdict, so not decided)."""
    if isinstance(value, bool) or value is None:
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower())


@dataclass(frozen=True)
class Figure:
    """One reproduction: what it shows and the files it wrote."""
    name: str
    title: str
    source: str
    verdicts: tuple[Verdict, ...]
    paper_numbers: str                    # what the paper itself reports, where it gives numbers
    settings: tuple[tuple[str, str], ...]
    image: Path | None
    table: Path | None
    downloads: tuple[Path, ...]           # csv, png, svg: the files at full precision
    recorded: bool                        # the run's JSON (its verdicts) is there

    @property
    def command(self) -> str:
        return f"python -m samplers reproduce {self.name}"


@dataclass(frozen=True)
class PaperSection:
    authors: str
    title: str
    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class Catalogue:
    papers: tuple[PaperSection, ...]
    others: tuple[Path, ...]              # files in assets/ that no reproduction of the table wrote

    @property
    def empty(self) -> bool:
        return not self.others and not any(f.downloads or f.recorded for p in self.papers for f in p.figures)


def _files(folder: Path) -> list[Path]:
    if not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith("."))


def _summary(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _verdicts(summary: dict) -> tuple[Verdict, ...]:
    out = []
    for c in summary.get("claims", []):
        if isinstance(c, dict) and "text" in c:
            out.append(Verdict(str(c["text"]), _holds(c.get("holds")), str(c.get("evidence", "")),
                               str(c.get("decides") or "")))
    return tuple(out)


def _settings(summary: dict) -> tuple[tuple[str, str], ...]:
    settings = summary.get("settings")
    return tuple((str(k), str(v)) for k, v in settings.items()) if isinstance(settings, dict) else ()


RECORD = "figures-record.toml"     # the templates of the runs' records (evidence, intervals, table cells)
# A template's fields match one token (a number, a name: no space, comma, semicolon or bracket), except:
TEXT_FIELDS = ("values", "list")   # any text, shown as it is; like a token, numbers and names only (else the
                                   # template is passed over)
NESTED_FIELDS = ("part", "what", "why", "against", "method")   # any text, itself translated
ITEM_FIELDS = ("items",)           # a ", "-separated list, each item translated
MAX_RECORD = 2500                  # characters: a longer record is shown as it is, in English (the runs write under
                                   # 1500; it bounds the matching of fields that take any text)
# an English word: a standalone word (not a unit after "/", a name before "=" or "/") with a part of two or more
# lowercase letters (burn-in, held-out; not L-BFGS, HMC or MovieLens-1M), or a possessive ("SGRLD's"). Units and
# symbols written in Latin letters in Japanese too, and the samplers' own names as a run writes them (sghmc-naive),
# are not words.
_WORD = re.compile(r"(?<![\w/.=-])[A-Za-z][\w-]*(?![\w/=])")
_SYMBOLS = {"ms", "sd", "eps", "pi", "log", "sqrt", "nan", "inf", "theta"} | set(REGISTRY)


def _kind(field: str) -> str:
    base = field.rstrip("0123456789")
    return ("text" if base in TEXT_FIELDS else "nested" if base in NESTED_FIELDS else
            "items" if base in ITEM_FIELDS else "token")


def split_top(text: str, sep: str) -> list[str]:
    """The text cut at `sep` outside brackets (a clause's parenthesis keeps its own semicolons)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] in "([":
            depth += 1
        elif text[i] in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    return out + [text[start:]]


def neutral(text: str) -> bool:
    """Whether a text has no English word to translate: numbers, names, symbols and units only."""
    if re.search(r"\w's\b", text):
        return False
    return not any(w not in _SYMBOLS and any(len(p) > 1 and p.isascii() and p.isalpha() and p.islower()
                                             for p in re.split(r"[-_]", w)) for w in _WORD.findall(text))


@cache
def record_templates(lang: str) -> tuple[tuple[str, re.Pattern, str], ...]:
    """The language's record templates (key, pattern over the English, translation), the most specific (longest
    words) first. A field named twice must match the same text both times (a back-reference)."""
    path = LOCALE_DIR / lang / RECORD
    if not path.exists():
        return ()
    with path.open("rb") as f:
        table = tomllib.load(f)
    out = []
    for key, value in table.items():
        parts = re.split(r"\{(\w+)\}", key)
        if len(parts) == 1:
            continue
        seen, regex = [], []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                regex.append(re.escape(part))
            elif part in seen:
                regex.append(f"(?P={part})")
            else:
                seen.append(part)
                regex.append(f"(?P<{part}>[^\\s,;()]+?)" if _kind(part) == "token" else f"(?P<{part}>.+?)")
        out.append((key, re.compile("".join(regex) + r"\Z", re.S), value, len("".join(parts[::2]))))
    out.sort(key=lambda t: -t[3])
    return tuple(t[:3] for t in out)


def record_in(text: str, lang: str = DEFAULT_LANG, _depth: int = 0) -> str | None:
    """A line of a run's record in the language, or None where a clause of it has no template (and a word to
    translate): its clauses (cut at "; ") each by an exact entry, a template with its fields filled in, or as
    they are when they hold only numbers and names."""
    if lang == DEFAULT_LANG:
        return text
    if len(text) > MAX_RECORD or _depth > 6:
        return None
    clauses = split_top(text, "; ")
    if len(clauses) > 1:
        done = [record_in(c, lang, _depth + 1) for c in clauses]
        return None if None in done else tr("; ", lang).join(done)
    table = entries(lang)
    if text in table:
        return table[text]
    for _, pattern, value in record_templates(lang):
        m = pattern.match(text)
        if m is not None and (filled := _fill(m.groupdict(), lang, _depth)) is not None:
            return value.format(**filled)
    return text if neutral(text) else None


def _fill(fields: dict[str, str], lang: str, depth: int) -> dict[str, str] | None:
    out = {}
    for name, value in fields.items():
        kind = _kind(name)
        if kind == "nested":
            value = record_in(value, lang, depth + 1)
        elif kind == "items":
            items = [record_in(item, lang, depth + 1) for item in split_top(value, ", ")]
            value = None if None in items else tr(", ", lang).join(items)
        elif not neutral(value):          # a number's or a name's field holding words: not this template
            value = None
        if value is None:
            return None
        out[name] = value
    return out


def cell_in(text: str, lang: str = DEFAULT_LANG) -> str:
    """A table's cell in the language: a number as it is, words through the record's templates (as written
    where none fits: a potential's or a sampler's name)."""
    if lang == DEFAULT_LANG or not text:
        return text
    if text not in entries(lang) and neutral(text):
        return text          # most cells: numbers, whose look-up through every template would be wasted
    return record_in(text, lang) or text


def column_label(key: str, lang: str = DEFAULT_LANG) -> str:
    """A CSV column's name for reading: the catalogue's, else the key with spaces for underscores."""
    shown = tr(key, lang) if lang != DEFAULT_LANG else key
    return shown.replace("_", " ") if shown == key else shown


def _verdict_in(v: Verdict, lang: str) -> Verdict:
    evidence, decides = record_in(v.evidence, lang), record_in(v.decides, lang) if v.decides else ""
    return dataclasses.replace(
        v, claim=tr(v.claim, lang), evidence=v.evidence if evidence is None else evidence,
        evidence_lang=DEFAULT_LANG if evidence is None else lang,
        decides=v.decides if decides is None else decides, decides_lang=DEFAULT_LANG if decides is None else lang)


def in_lang(fig: Figure, lang: str = DEFAULT_LANG) -> Figure:
    """The figure with its title, source, claims, their evidence and the paper's numbers in the language, where
    the catalogue has them (the English text where it has not)."""
    if lang == DEFAULT_LANG:
        return fig
    claims = tuple(_verdict_in(v, lang) for v in fig.verdicts)
    return dataclasses.replace(fig, title=tr(fig.title, lang), source=tr(fig.source, lang), verdicts=claims,
                               paper_numbers=tr(fig.paper_numbers, lang) if fig.paper_numbers else "")


def catalogue(folder: Path = ASSETS_DIR) -> Catalogue:
    """Every reproduction of the library's table, grouped by paper in the table's order, with its files."""
    files = [p for p in _files(folder) if p.stat().st_size <= MAX_FILE_BYTES]
    by_stem: dict[str, dict[str, Path]] = {}
    for p in files:
        if p.stem in REPRODUCTIONS and p.suffix.lower() in OWN_EXT:
            by_stem.setdefault(p.stem, {}).setdefault(p.suffix.lower(), p)
    owned = {p for group in by_stem.values() for p in group.values()}
    sections: dict[object, list[Figure]] = {}
    for name, rep in REPRODUCTIONS.items():
        own = by_stem.get(name, {})
        summary = _summary(own.get(".json"))
        # one picture per figure: the PNG is lighter to send than the SVG
        image = own.get(".png") or next((own[e] for e in sorted(IMAGE_EXT) if e in own), None)
        sections.setdefault(rep.paper, []).append(Figure(
            name=name, title=rep.title, source=rep.source, verdicts=_verdicts(summary),
            paper_numbers=str(summary.get("paper") or ""), settings=_settings(summary), image=image,
            table=own.get(".csv"), downloads=tuple(own[e] for e in (".csv", ".png", ".svg") if e in own),
            recorded=bool(summary)))
    papers = tuple(PaperSection(paper.authors, paper.title, tuple(figs)) for paper, figs in sections.items())
    return Catalogue(papers, tuple(p for p in files if p not in owned))


def preview(path: Path, others: tuple[Path, ...] = ()) -> str | None:
    """How another file can be shown: "image", "table", "markdown", or None (listed by name only; an SVG
    beside a PNG of the same figure is one picture already)."""
    ext = path.suffix.lower()
    if ext == ".svg" and any(o.parent == path.parent and o.stem == path.stem and o.suffix.lower() != ".svg"
                             and o.suffix.lower() in IMAGE_EXT for o in others):
        return None
    if ext in IMAGE_EXT:
        return "image"
    return {".csv": "table", ".md": "markdown"}.get(ext) if ext in TABLE_EXT else None


def display_number(text: str, digits: int = SIGNIFICANT) -> str:
    """A CSV cell for reading: floats to `digits` significant digits (8.278×10⁻⁷ when very small or
    large), whole counts as they are, text untouched."""
    s = text.strip()
    try:
        int(s)
        return s
    except ValueError:
        pass
    try:
        v = float(s)
    except ValueError:
        return text
    if not math.isfinite(v):
        return s
    if v == 0:
        return "0"
    rounded = float(f"{v:.{digits}g}")
    exponent = math.floor(math.log10(abs(rounded)))
    if -4 <= exponent < 6:
        if rounded.is_integer():
            return str(int(rounded))
        return f"{rounded:.{max(0, digits - 1 - exponent)}f}".rstrip("0").rstrip(".")
    mantissa = f"{rounded / 10 ** exponent:.{digits - 1}f}".rstrip("0").rstrip(".")
    return f"{mantissa}×10{str(exponent).translate(SUPERSCRIPT)}"


def display_table(path: Path, max_rows: int = MAX_ROWS,
                  lang: str = DEFAULT_LANG) -> tuple[list[str], list[list[str]], int]:
    """(header, rows, rows left out): column names by column_label, cells by display_number (words by cell_in)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return [], [], 0
    header = [column_label(h, lang) for h in rows[0]]
    body = [[cell_in(display_number(c), lang) for c in r] for r in rows[1:max_rows + 1]]
    return header, body, max(0, len(rows) - 1 - max_rows)


# How a reproduction's CSV is drawn when a curve says more than a row of points: its x column (log scale) and
# the text columns whose values make one curve each. Any other CSV is drawn as one point per row (a dot plot).
CURVES = {"scir-fig2": ("batch", ("posterior", "sampler"))}
# the column each figure plots first (what its paper's figure or table compares); the reader may pick another
PRIMARY = {"chen-fig1": "E_theta2", "qnhmc-logistic": "ess_per_s", "qnhmc-pmf": "test_rmse",
           "qnhmc-table1": "ess_per_s", "recipe-fig2-left": "kl", "recipe-fig2-right": "median_steps_both_arms",
           "recipe-lda": "final_perplexity", "scir-dpmixture": "log_predictive", "scir-fig1": "ks_omega5",
           "scir-fig2": "ks_mean", "scir-lda": "final_perplexity"}


@dataclass(frozen=True)
class PlotTable:
    """A CSV as columns to plot: text columns (str) and numeric ones (float, NaN where empty), each row's label
    (its text cells that differ between rows), and the column to draw against (None: one point per row)."""
    columns: dict[str, list]
    text: tuple[str, ...]
    numeric: tuple[str, ...]
    labels: tuple[str, ...]
    x: str | None = None
    by: tuple[str, ...] = ()
    primary: str = ""

    @property
    def metrics(self) -> tuple[str, ...]:
        """The columns a reader may choose to plot: the numeric ones, less the x column."""
        return tuple(c for c in self.numeric if c != self.x)

    def log_scale(self, column: str) -> bool:
        """Whether a column's values are all positive and span more than two decades."""
        v = [x for x in self.columns[column] if math.isfinite(x)]
        return bool(v) and min(v) > 0 and max(v) / min(v) > 100


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def plot_table(path: Path, name: str = "", max_rows: int = MAX_ROWS, lang: str = DEFAULT_LANG) -> PlotTable | None:
    """The CSV's columns for an interactive plot, or None if it has no numeric column or no rows; its rows'
    labels in the language (cell_in)."""
    try:
        rows = list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8", errors="replace"))))
    except OSError:
        return None
    if len(rows) < 2:
        return None
    header, body = rows[0], [r + [""] * (len(rows[0]) - len(r)) for r in rows[1:max_rows + 1]]
    columns, text, numeric = {}, [], []
    for j, col in enumerate(header):
        cells = [r[j].strip() for r in body]
        values = [_float(c) if c else math.nan for c in cells]
        if all(v is not None for v in values) and any(math.isfinite(v) for v in values):
            columns[col] = values
            numeric.append(col)
        else:
            columns[col] = cells
            text.append(col)
    if not numeric:
        return None
    # a row's label: its first text columns that differ between rows, as few as tell the rows apart (chen-fig1's
    # variant names its sampler, gradient and test already)
    varying = [c for c in text if len(set(columns[c])) > 1] or text[:1]
    for k in range(1, len(varying) + 1):
        if len({tuple(columns[c][i] for c in varying[:k]) for i in range(len(body))}) == len(body):
            varying = varying[:k]
            break
    labels = [" · ".join(cell_in(columns[c][i], lang) for c in varying if columns[c][i]) or f"row {i + 1}"
              for i in range(len(body))]
    # two rows of one label would be drawn as one point: number them
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if labels.count(label) > 1:
            labels[i] = f"{label} ({seen[label]})"
    x, by = CURVES.get(name, (None, ()))
    if x not in numeric or not set(by) <= set(text):
        x, by = None, ()
    metrics = [c for c in numeric if c != x]
    varies = [c for c in metrics if len({v for v in columns[c] if math.isfinite(v)}) > 1]
    primary = PRIMARY.get(name) if PRIMARY.get(name) in metrics else (varies or metrics or [""])[0]
    return PlotTable(columns, tuple(text), tuple(numeric), tuple(labels), x, tuple(by), primary)
