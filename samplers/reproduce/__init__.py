"""Reproductions of the sources' synthetic experiments: `python -m samplers reproduce NAME`.

Each reproduction returns an `Outcome`: rows of numbers (written as CSV), a matplotlib
figure (PNG and SVG), and the paper's claims each marked as holding or not with the
number that decides it (JSON, read by the docs and the app's Paper figures page).
"""
from __future__ import annotations

import csv
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets" / "reproductions"
DOCS = ROOT / "docs" / "reproductions.md"


@dataclass
class Claim:
    text: str          # what the source claims
    holds: bool        # whether our numbers agree
    evidence: str      # the numbers that decide it


@dataclass
class Outcome:
    rows: list[dict]
    claims: list[Claim]
    figure: object = None
    settings: dict = field(default_factory=dict)
    paper: str = ""    # the paper's own numbers, where it gives any


@dataclass
class Reproduction:
    name: str
    title: str
    source: str
    run: Callable      # (seed, full, quick) -> Outcome; quick is the reduced size the tests use


REPRODUCTIONS: dict[str, Reproduction] = {}


def register(name, title, source):
    def wrap(fn):
        REPRODUCTIONS[name] = Reproduction(name, title, source, fn)
        return fn
    return wrap


def names() -> list[str]:
    from samplers.reproduce import recipe_figures  # noqa: F401  (registers)
    for optional in ("chen", "qnhmc_table", "scir_figures"):
        try:
            __import__(f"{__name__}.{optional}")
        except ImportError:
            pass
    return list(REPRODUCTIONS)


class Progress:
    """A one-line progress bar on stderr (silent when not a terminal and quiet is asked)."""

    def __init__(self, label: str, total: int, stream=None):
        self.label, self.total, self.done = label, max(int(total), 1), 0
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.time()

    def __call__(self, k: int = 1):
        self.done = min(self.done + k, self.total)
        frac = self.done / self.total
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label:20s} [{bar:30s}] {100 * frac:5.1f}%  {time.time() - self.t0:6.1f}s")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def parallel_map(fn, jobs, progress: Progress | None = None):
    """Run fn over jobs on the machine's cores (results in job order)."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1:
        out = []
        for job in jobs:
            out.append(fn(job))
            if progress:
                progress()
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, job) for job in jobs]
        out = []
        for f in futures:
            out.append(f.result())
            if progress:
                progress()
        return out


def write(name: str, outcome: Outcome, out_dir: Path) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    if outcome.rows:
        paths["csv"] = out_dir / f"{name}.csv"
        keys = list(dict.fromkeys(k for row in outcome.rows for k in row))
        with open(paths["csv"], "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(outcome.rows)
    if outcome.figure is not None:
        import matplotlib.pyplot as plt
        for ext in ("png", "svg"):
            paths[ext] = out_dir / f"{name}.{ext}"
            # a fixed date keeps the SVG reproducible
            outcome.figure.savefig(paths[ext], dpi=110, bbox_inches="tight", metadata={"Date": None}
                                   if ext == "svg" else None)
        plt.close(outcome.figure)
    rep = REPRODUCTIONS[name]
    summary = dict(name=name, title=rep.title, source=rep.source, settings=outcome.settings,
                   claims=[asdict(c) for c in outcome.claims], paper=outcome.paper,
                   files={k: p.name for k, p in paths.items()})
    paths["json"] = out_dir / f"{name}.json"
    paths["json"].write_text(json.dumps(summary, indent=2, default=str))
    return summary


def format_table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = list(dict.fromkeys(k for row in rows for k in row))

    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    widths = {k: max(len(k), *(len(cell(r.get(k, ""))) for r in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines += ["  ".join(cell(r.get(k, "")).ljust(widths[k]) for k in keys) for r in rows]
    return "\n".join(lines)


def reproduce(name: str, out_dir=None, seed: int = 0, full: bool = False, stream=None, quick: bool = False) -> dict:
    names()
    if name not in REPRODUCTIONS:
        raise KeyError(f"unknown reproduction '{name}' (choose from {', '.join(REPRODUCTIONS)}, or all)")
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "sgmcmc-lab"   # stable ids: regenerated SVGs diff cleanly
    stream = stream if stream is not None else sys.stdout
    outcome = REPRODUCTIONS[name].run(seed=seed, full=full, quick=quick)
    summary = write(name, outcome, out_dir or ASSETS)
    if out_dir is None:
        write_docs()
    print(f"\n{REPRODUCTIONS[name].title}", file=stream)
    print(format_table(outcome.rows), file=stream)
    for c in outcome.claims:
        print(f"[{'holds' if c.holds else 'DOES NOT HOLD'}] {c.text}: {c.evidence}", file=stream)
    return summary


def write_docs(assets: Path = ASSETS, target: Path = DOCS) -> Path:
    """docs/reproductions.md from the JSON, CSV and figures in assets/ (never hand-edited)."""
    parts = ["# Reproductions of the sources' experiments", "",
             "Generated by `python -m samplers reproduce all` from the files in `assets/reproductions/`; "
             "do not edit by hand. Each claim is marked as it came out in our run, with the numbers that decide it.",
             ""]
    for path in sorted(Path(assets).glob("*.json")):
        info = json.loads(path.read_text())
        parts += [f"## {info['title']}", "", f"`{info['name']}` — source: {info['source']}", ""]
        if "png" in info["files"]:
            rel = Path("..") / Path(assets).relative_to(ROOT) / info["files"]["png"]
            parts += [f"![{info['name']}]({rel.as_posix()})", ""]
        if info["files"].get("csv"):
            with open(Path(assets) / info["files"]["csv"]) as f:
                rows = list(csv.reader(f))
            parts += ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
            parts += ["| " + " | ".join(_short(v) for v in r) + " |" for r in rows[1:]]
            parts.append("")
        for c in info["claims"]:
            parts.append(f"- **{'holds' if c['holds'] else 'does not hold'}** — {c['text']}: {c['evidence']}")
        if info.get("paper"):
            parts.append(f"- the paper's numbers: {info['paper']}")
        settings = ", ".join(f"{k} = {v}" for k, v in info.get("settings", {}).items())
        parts += ["", f"Settings: {settings}", ""]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(parts))
    return target


def _short(v: str) -> str:
    try:
        return f"{float(v):.4g}"
    except ValueError:
        return v
