"""What every reproduction shares: its declaration, its outcome (rows, figure, claims), progress,
parallel jobs, and the files it writes."""
from __future__ import annotations

import csv
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

# a checkout keeps its figures in its own assets/; an installed package writes under the current directory
ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "pyproject.toml").exists():
    ROOT = Path.cwd()
ASSETS = ROOT / "assets" / "reproductions"
DOCS = ROOT / "docs" / "reproductions.md"


@dataclass
class Claim:
    """A claim of the source with our verdict: `holds` is True ("holds"), False ("does not hold") or None
    ("not decidable here": the run's numbers cannot tell, e.g. a difference within its Monte Carlo error).
    `decides` states the interval that would decide it (required when the verdict is None)."""
    text: str                # what the source claims
    holds: bool | None       # whether our numbers agree; None when they cannot decide it
    evidence: str            # the numbers behind the verdict
    decides: str = ""        # what would decide it, e.g. "a difference outside ±1.43 (twice its standard error)"

    def __post_init__(self):
        # numpy's bool_ is not JSON: json.dumps(default=str) wrote it as the string "True"
        if self.holds is not None:
            self.holds = bool(self.holds)
        if self.holds is None and not self.decides:
            raise ValueError(f"an undecided claim says what would decide it: {self.text}")


VERDICT_WORDS = {True: "holds", False: "does not hold", None: "not decidable here"}


def verdict_word(holds: bool | None) -> str:
    return VERDICT_WORDS[None if holds is None else bool(holds)]


def outside(diff: float, tolerance: float) -> bool | None:
    """Three-valued "diff > 0": True above +tolerance, False below −tolerance, None within ±tolerance
    (the tolerance is a Monte Carlo error, e.g. twice the standard error of the runs' spread)."""
    if diff > tolerance:
        return True
    if diff < -tolerance:
        return False
    return None


OVER_CHAINS = "twice the difference's standard error over chains"


def decides(what: str, tolerance: float, unit: str = "", fmt: str = ".2f", why: str = OVER_CHAINS) -> str:
    """The interval that decides an `outside(what, tolerance)` verdict, in words."""
    t = format(tolerance, fmt)
    return f"{what} above +{t}{unit} holds, below −{t}{unit} does not hold ({why})"


def within(gap: float, tolerance: float, margin: float) -> bool | None:
    """Three-valued "|gap| < margin" (an equivalence): True when even |gap| + tolerance is below the margin,
    False when |gap| − tolerance is above it, None otherwise."""
    if abs(gap) + tolerance < margin:
        return True
    if abs(gap) - tolerance > margin:
        return False
    return None


def decides_within(what: str, tolerance: float, margin: float, fmt: str = ".4f") -> str:
    t, m = format(tolerance, fmt), format(margin, fmt)
    return f"|{what}| + {t} below {m} holds, |{what}| − {t} above {m} does not hold"


# "Matches the target" is an equivalence and needs a margin: no sampler at a finite step matches exactly, and with
# enough samples any discretisation bias shows. The margin is the figure's own contrast: a tenth (one decade on
# its log axis) of the error of the sampler the figure sets against it (the naive one). The verdict is on the
# excess over the noise floor (what exact draws of this size would show) with twice its Monte Carlo sd.
MARGIN_SHARE = 0.1
KL_SD = "sd of the KL's noise by resampling whole chains, and of the floor's estimate"


def matches(value: float, floor: float, sd: float, margin: float) -> bool | None:
    """Three-valued "value − floor below margin": True when even excess + 2 sd is, False when excess − 2 sd is
    above it, None otherwise."""
    excess = value - floor
    if excess + 2 * sd <= margin:
        return True
    if excess - 2 * sd > margin:
        return False
    return None


def decides_match(margin: float, what: str = "KL − floor", why: str = KL_SD,
                  against: str = "the naive sampler's") -> str:
    return (f"{what} + 2 sd at most {margin:.2g} holds, {what} − 2 sd above it does not hold ({margin:.2g}: a tenth of "
            f"{against} excess, the figure's contrast; {why})")


def all_hold(verdicts) -> bool | None:
    """Three-valued conjunction: False if any is False, True if all are True, else None."""
    verdicts = list(verdicts)
    if any(v is False for v in verdicts):
        return False
    return True if all(v is True for v in verdicts) else None


def mean_se(x) -> tuple[float, float]:
    """Mean and its standard error over independent runs or chains."""
    import numpy as np
    x = np.asarray(x, float)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x)))


@dataclass
class Outcome:
    rows: list[dict]
    claims: list[Claim]
    figure: object = None
    settings: dict = field(default_factory=dict)
    paper: str = ""    # the paper's own numbers, where it gives any


@dataclass(frozen=True)
class Paper:
    authors: str       # as cited: "Ma, Chen & Fox (2015)"
    title: str


RECIPE = Paper("Ma, Chen & Fox (2015)", "A complete recipe for stochastic gradient MCMC")
SGHMC = Paper("Chen, Fox & Guestrin (2014)", "Stochastic gradient Hamiltonian Monte Carlo")
QNHMC = Paper("Fu, Luo & Zhang (2016)", "Quasi-Newton Hamiltonian Monte Carlo")
SCIR = Paper("Baker, Fearnhead, Fox & Nemeth (2018)", "Large-scale stochastic sampling from the probability simplex")


@dataclass
class Reproduction:
    name: str
    title: str
    source: str
    run: Callable      # (seed, full, quick) -> Outcome; quick is the reduced size the tests use
    paper: Paper       # whose experiment it is (the Paper figures page groups by it)


def reproduction(name, title, source, paper: Paper):
    """Declare a function (seed, full, quick) -> Outcome as the reproduction `name`."""
    def wrap(fn):
        return Reproduction(name, title, source, fn, paper)
    return wrap


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


def write(rep: Reproduction, outcome: Outcome, out_dir: Path) -> dict:
    name = rep.name
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


def write_docs(assets: Path = ASSETS, target: Path = DOCS) -> Path:
    """docs/reproductions.md from the JSON, CSV and figures in assets/ (never hand-edited)."""
    parts = ["# Reproductions of the sources' experiments", "",
             "Generated by `python -m samplers reproduce all` from the files in `assets/reproductions/`; "
             "do not edit by hand. Each claim is marked as it came out in our run: **holds**, **does not hold**, or "
             "**not decidable here** when the run's numbers (within their Monte Carlo error) cannot tell, with the "
             "numbers behind the verdict and, where given, the interval that would decide it.",
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
            decides = f" (decided by: {c['decides']})" if c.get("decides") else ""
            parts.append(f"- **{verdict_word(c['holds'])}** — {c['text']}: {c['evidence']}{decides}")
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
