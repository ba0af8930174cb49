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
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parent   # where the pages are
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n(.*)\Z", re.S)
CHECK_LINE = re.compile(r"^[ \t]*\{\{check:([A-Za-z_][A-Za-z0-9_]*)\}\}[ \t]*$", re.M)
DEMO_LINE = re.compile(r"^[ \t]*\{\{demo\}\}[ \t]*$", re.M)
LADDER_LINE = re.compile(r"^[ \t]*\{\{(ladder)\}\}[ \t]*$", re.M)
MARK_LINE = re.compile(f"{CHECK_LINE.pattern}|{DEMO_LINE.pattern}|{LADDER_LINE.pattern}", re.M)
PAGES = "[0-9][0-9]-*.md"                  # the pages' file names, as a glob

__all__ = ["Lesson", "parse_lesson", "load_lessons", "run_check", "FOLDER", "PAGES"]


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


def load_lessons(folder=FOLDER, strict: bool = True) -> list[Lesson]:
    """Every `NN-*.md` page in folder, sorted by `order`; strict=False leaves out pages that do not
    parse (the app shows the rest rather than fail on one bad file)."""
    pages = []
    for path in Path(folder).glob(PAGES):
        try:
            pages.append(parse_lesson(path))
        except (ValueError, TypeError, OSError, yaml.YAMLError):
            if strict:
                raise
    return sorted(pages, key=lambda x: (x.order, x.slug))


def run_check(name: str, quick: bool = True) -> dict:
    """The check's result (a dict: value, tolerance, passed, text), memoised per process.

    The checks load the sampler library, so they are imported here, when a page first shows one,
    not when the pages are listed."""
    from .checks import cached
    return cached(name, quick)
