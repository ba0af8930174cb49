"""The Paper figures section without a browser: which files in assets/ belong to which reproduction,
its paper, title and claims with their verdicts, and its table rounded for reading.

Titles, sources and papers come from the library's table of reproductions; the verdicts come from the
JSON each reproduction writes next to its figure (the numbers our run produced, never the docs' Markdown).
Files that belong to no reproduction are kept apart, to be listed by name.

In another language (`in_lang`) the titles, sources, claims and the paper's numbers go through the catalogue,
keyed by their English text as the reproduction writes it (app/locale/ja/pages-claims.toml): a claim's id is
its text, so a claim whose wording changes in a rerun has no entry and is shown in English (and the
completeness test in tests/test_lessons_ja.py fails) rather than under a stale translation. The evidence and
the interval that decides a verdict are the run's numbers in the run's words: they stay in English.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from samplers.reproduce import REPRODUCTIONS
from samplers.reproduce.base import verdict_word

from .content import ASSETS_DIR, IMAGE_EXT, MAX_FILE_BYTES, TABLE_EXT
from .i18n import DEFAULT_LANG, tr

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


def in_lang(fig: Figure, lang: str = DEFAULT_LANG) -> Figure:
    """The figure with its title, source, claims and the paper's numbers in the language, where the catalogue
    has them (the English text where it has not)."""
    if lang == DEFAULT_LANG:
        return fig
    claims = tuple(dataclasses.replace(v, claim=tr(v.claim, lang)) for v in fig.verdicts)
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


def display_table(path: Path, max_rows: int = MAX_ROWS) -> tuple[list[str], list[list[str]], int]:
    """(header, rows, rows left out): column names with spaces for underscores, cells by display_number."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return [], [], 0
    header = [h.replace("_", " ") for h in rows[0]]
    body = [[display_number(c) for c in r] for r in rows[1:max_rows + 1]]
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


def plot_table(path: Path, name: str = "", max_rows: int = MAX_ROWS) -> PlotTable | None:
    """The CSV's columns for an interactive plot, or None if it has no numeric column or no rows."""
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
    labels = [" · ".join(columns[c][i] for c in varying if columns[c][i]) or f"row {i + 1}" for i in range(len(body))]
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
