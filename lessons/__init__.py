"""The course: one Markdown page per result of the sources, `lessons/NN-name.md`, read by this
package, and the numerical checks the pages show, `lessons/checks/` (one module per lesson).

A page is YAML front matter between two `---` lines, then a Markdown body with MathJax math
(`$...$` inline, `$$...$$` display, for markdown-it's dollarmath plugin):

    ---
    title: "The recipe (Theorem 1)"
    order: 2
    summary: "one sentence"
    demo:                       # the lab preset the page opens
      potential: double-well    # a preset name or "expr:..."
      sampler: sgrld            # a registry name
      params: {eps: 0.003}      # sampler parameters (registry names)
      V: 1.0                    # simulated gradient-noise variance, or `batch: 20` (real minibatches)
      chains: 2000
      seed: 1
      steps_per_frame: 20
      compare: sgrld            # optional: a second sampler side by side (same potential, seed, noise)
      compare_params: {}        # optional
      drop: [gamma]             # optional: terms dropped from the first sampler's recipe
      log: 1                    # optional: a log-scale view of a small component (simplex targets)
    checks: [recipe_residual]   # names in lessons.checks.CHECKS
    controls: [V, eps]          # the demo's fields: settings (V, batch, potential...) or sampler parameters
    plots: [trace, histogram, KL]   # the figures the demo shows (app/model/demo_spec.py: PLOTS)
    ---
    Markdown ... a line `{{check:recipe_residual}}` marks where the check's number goes,
    and a line `{{demo}}` where the live demo is embedded (in its "In the lab" section).

Links between pages are relative (`[next](03-completeness.md)`). Helpers for a renderer:

    from lessons import load_lessons, run_check
    for lesson in load_lessons():          # sorted by `order`
        for kind, value in lesson.segments():
            ...  # ("markdown", text) or ("check", name); run_check(name) -> the check's result

The pages ship inside the package (package data), so an installed copy finds them too.

Translations: `lessons/<lang>/NN-name.md` (format in `lessons/ja/README.md`) holds a page's words only, a front
matter of `title` and `summary` and a body in which a line `{{eq:k}}` stands for the English body's k-th display
equation. `load_lessons(lang="ja")` gives each English page with that title, summary and body (its equations put
back), sharing the English page's demo, checks, controls and plots (the same objects, not copies); a page whose
translation is missing or breaks the format is given in English.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parent   # where the pages are
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n(.*)\Z", re.S)
CHECK_LINE = re.compile(r"^[ \t]*\{\{check:([A-Za-z_][A-Za-z0-9_]*)\}\}[ \t]*$", re.M)
DEMO_LINE = re.compile(r"^[ \t]*\{\{demo\}\}[ \t]*$", re.M)
LADDER_LINE = re.compile(r"^[ \t]*\{\{(ladder)\}\}[ \t]*$", re.M)
MARK_LINE = re.compile(f"{CHECK_LINE.pattern}|{DEMO_LINE.pattern}|{LADDER_LINE.pattern}", re.M)
EQ_LINE = re.compile(r"^[ \t]*\{\{eq:([0-9]+)\}\}[ \t]*$", re.M)
PAGES = "[0-9][0-9]-*.md"                  # the pages' file names, as a glob
LANGS = ("en", "ja")                       # "en": the pages themselves; others: lessons/<lang>/

__all__ = ["Lesson", "parse_lesson", "load_lessons", "translate", "with_equations", "markers", "run_check",
           "FOLDER", "PAGES", "LANGS"]


@dataclass
class Lesson:
    slug: str          # file name without .md, e.g. "02-recipe"
    path: Path
    title: str
    order: int
    summary: str
    demo: dict | str   # as in the front matter (a str: a lab preset name or query)
    checks: list       # check names
    body: str          # Markdown after the front matter
    controls: list = field(default_factory=list)   # what the embedded demo lets the reader set (V, C, eps...)
    plots: list = field(default_factory=list)      # the figures it shows (app/model/demo_spec.py names them)
    lang: str = "en"   # the language of title, summary and body

    def segments(self) -> list[tuple[str, str]]:
        """The body cut at its check, demo and ladder lines: [("markdown", text), ("check", name), ("demo", ""),
        ("ladder", ""), ...]. A ladder runs the demo's samplers over a ladder of step sizes."""
        out, pos = [], 0
        for m in MARK_LINE.finditer(self.body):
            if m.start() > pos:
                out.append(("markdown", self.body[pos:m.start()]))
            out.append(("check", m.group(1)) if m.group(1) else ("ladder", "") if m.group(2) else ("demo", ""))
            pos = m.end()
        if pos < len(self.body):
            out.append(("markdown", self.body[pos:]))
        return out


def parse_lesson(path) -> Lesson:
    """One page; raises ValueError if the front matter is missing or malformed."""
    path = Path(path)
    m = FRONT_MATTER.match(path.read_text(encoding="utf-8"))
    if not m:
        raise ValueError(f"{path.name}: no front matter between two '---' lines")
    meta = yaml.safe_load(m.group(1))
    if not isinstance(meta, dict):
        raise ValueError(f"{path.name}: the front matter is not a mapping")
    missing = [k for k in ("title", "order", "summary", "demo", "checks") if k not in meta]
    if missing:
        raise ValueError(f"{path.name}: front matter lacks {', '.join(missing)}")
    demo = meta["demo"] if isinstance(meta["demo"], str) else dict(meta["demo"])   # a str names a lab preset
    return Lesson(path.stem, path, str(meta["title"]), int(meta["order"]), str(meta["summary"]),
                  demo, list(meta["checks"]), m.group(2), [str(c) for c in meta.get("controls") or []],
                  [str(p) for p in meta.get("plots") or []])


def load_lessons(folder=FOLDER, strict: bool = True, lang: str = "en") -> list[Lesson]:
    """Every `NN-*.md` page in folder, sorted by `order`, in `lang` where `folder/lang/` has its translation;
    strict=False leaves out pages that do not parse and gives a page whose translation does not in English (the
    app shows the rest rather than fail on one bad file)."""
    pages = []
    for path in Path(folder).glob(PAGES):
        try:
            page = parse_lesson(path)
        except (ValueError, TypeError, OSError, yaml.YAMLError):
            if strict:
                raise
            continue
        if lang != "en" and (Path(folder) / lang / path.name).exists():
            try:
                page = translate(page, Path(folder) / lang / path.name, lang)
            except (ValueError, TypeError, OSError, yaml.YAMLError):
                if strict:
                    raise
        pages.append(page)
    return sorted(pages, key=lambda x: (x.order, x.slug))


def markers(body: str) -> list[str]:
    """The body's demo, ladder and check lines in order, as written between the braces."""
    return [m.group(0).strip()[2:-2] for m in MARK_LINE.finditer(body)]


def with_equations(body: str, english: str, name: str = "page") -> str:
    """A translated body with each `{{eq:k}}` line replaced by the English body's k-th display block ($$...$$,
    verbatim). Raises ValueError unless the lines are {{eq:1}}..{{eq:K}} in order, K the English blocks."""
    parts = english.split("$$")
    if len(parts) % 2 == 0:
        raise ValueError(f"{name}: the English page has an odd number of $$")
    blocks = [f"$${parts[i]}$$" for i in range(1, len(parts), 2)]
    found = [int(m.group(1)) for m in EQ_LINE.finditer(body)]
    if found != list(range(1, len(blocks) + 1)) or "$$" in body:
        raise ValueError(f"{name}: equation lines {found}, the English page has {len(blocks)} display blocks")
    # a function as the replacement: the blocks' backslashes are TeX, not regex escapes
    return EQ_LINE.sub(lambda m: blocks[int(m.group(1)) - 1], body)


def translate(page: Lesson, path, lang: str) -> Lesson:
    """The English page in another language: the translation's title, summary and body (its equations the
    English ones), everything that runs shared with `page`. Raises ValueError if the translation breaks the
    format (other front-matter keys, other marker lines, equation lines out of step)."""
    path = Path(path)
    m = FRONT_MATTER.match(path.read_text(encoding="utf-8"))
    if not m:
        raise ValueError(f"{path.name}: no front matter between two '---' lines")
    meta = yaml.safe_load(m.group(1))
    if not isinstance(meta, dict) or set(meta) != {"title", "summary"}:
        raise ValueError(f"{path.name}: the front matter must hold exactly title and summary")
    body = with_equations(m.group(2), page.body, path.name)
    if markers(body) != markers(page.body):
        raise ValueError(f"{path.name}: markers {markers(body)}, the English page has {markers(page.body)}")
    return replace(page, path=path, title=str(meta["title"]), summary=str(meta["summary"]), body=body, lang=lang)


def run_check(name: str, quick: bool = True) -> dict:
    """The check's result (a dict: value, tolerance, passed, text), memoised per process.

    The checks load the sampler library, so they are imported here, when a page first shows one,
    not when the pages are listed."""
    from .checks import cached
    return cached(name, quick)
