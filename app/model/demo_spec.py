"""What a lesson's embedded demo exposes, and whether its "Try this" steps can be done with it.

A lesson's front matter names the demo's `controls` (settings such as V, or sampler parameters such as C or
eps, a field for each side whose sampler has it; `potential` is a menu of the presets) and its `plots`
(the lab's figures for the demo's target, and the extra histories the demo adds). A "Try this" step can be
done where it is read when every control it sets and every plot it asks the reader to watch is the demo's,
or when it carries a link into the lab (`?tab=lab&...`) that opens what it needs.

The steps are prose: `needs` reads what they set and watch from the forms the lessons write them in
(`$C = 0.2$`, `` `metric_C` ``, "the kinetic temperature"...), so a step that sets a control the demo lacks
is caught; prose that names a quantity no figure shows (E[θ²], a median) is not read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import numpy as np

from samplers import diagnostics as dg
from samplers.registry import REGISTRY

from .config import LabConfig
from .presets import potential_names
from .urlstate import apply_query

# settings of the lab a demo may expose (LabConfig's names), besides the samplers' parameters
SETTINGS = ("V", "batch", "chains", "seed", "burn", "potential")
# the figures: the lab's for a target (main plot, trace, marginals, the KL history) and the demo's own histories
LAB_PLOTS = ("density", "phase plane", "trace", "histogram", "log histogram", "KL")
EXTRA_PLOTS = ("kinetic temperature", "xi")
PLOTS = LAB_PLOTS + EXTRA_PLOTS
# what a step needs that no embedded demo has: the lab's recipe editor, another sampler
LAB_ONLY = ("recipe", "sampler", "typed potential")

PARAM_NAMES = frozenset(k for spec in REGISTRY.values() for k in spec.declared)
MATH_SET = {"V": "V", "C": "C", "h": "h", "L": "L", "n": "batch", r"\epsilon": "eps", "c_0": "metric_C"}
SYMBOL = r"(V|C|h|L|n|\\epsilon|c_0)"
# "$C = 0.2$", "raise $V$ from 25", "set SGRLD's $\epsilon$ to 0.01"
MATH = re.compile(rf"\$\s*{SYMBOL}\s*=\s*[-\d.\\]|\${SYMBOL}\$ (?:to|from) [-\d.]")
CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\((\?[^)\s]+)\)")
WATCH = {"kinetic temperature": r"kinetic (temperature|energy)|mean \$r\^2\$|momentum variance",
         "xi": r"\\xi\b", "histogram": r"histogram", "trace": r"\btrace\b", "KL": r"\bKL\b",
         "log histogram": r"\\log_\{10\}"}
EDITOR = re.compile(r"editor|\(H, D, Q\)\$ view|\*drop|Q_\{\d+\}|[Tt]ype `")
SWITCH_SAMPLER = re.compile(r"[Ss]witch to (naive )?(SG\w+|HMC|QNHMC)\b|[Pp]ick the pair")
BATCH = re.compile(r"\bbatch\b|minibatches of")


@dataclass
class Needs:
    controls: set = field(default_factory=set)
    plots: set = field(default_factory=set)
    links: list = field(default_factory=list)   # lab queries the step links to


def try_steps(body: str) -> list[str]:
    """The numbered steps of a page's "Try this" section, each as one string."""
    section = body.split("## Try this", 1)[1].split("\n## ", 1)[0] if "## Try this" in body else ""
    return [s.strip() for s in re.split(r"\n(?=\d+\. )", "\n" + section) if re.match(r"\d+\. ", s.strip())]


def needs(step: str, demo: dict) -> Needs:
    """What a step sets (controls) and watches (plots), and the lab links it carries."""
    out = Needs(links=LINK.findall(step))
    text = LINK.sub("]", step)
    out.controls |= {MATH_SET[a or b] for a, b in MATH.findall(text)}
    demo_samplers = {demo.get("sampler"), demo.get("compare")}
    for code in CODE.findall(text):
        code = code.strip()
        if code in PARAM_NAMES:
            out.controls.add(code)
        elif code.startswith("expr:"):
            out.controls.add("typed potential")
        elif code in potential_names() and code != demo.get("potential"):
            out.controls.add("potential")
        elif code in REGISTRY and code not in demo_samplers:
            out.controls.add("sampler")
    if BATCH.search(text):
        out.controls.add("batch")
    if SWITCH_SAMPLER.search(text):
        out.controls.add("sampler")
    if EDITOR.search(text):
        out.controls.add("recipe")
    out.plots = {name for name, pattern in WATCH.items() if re.search(pattern, text)}
    return out


def control_sides(name: str, samplers: list[str]) -> list[int]:
    """The sides (0: A, 1: B) whose sampler has this parameter; [] for a setting or an unknown name."""
    if name in SETTINGS:
        return []
    return [i for i, s in enumerate(samplers) if s in REGISTRY and name in REGISTRY[s].declared]


def problems(slug: str, demo: dict, controls: list, plots: list, body: str) -> list[str]:
    """Why some "Try this" step of a page cannot be done with its demo (empty: every step can)."""
    out = []
    samplers = [demo.get("sampler"), demo.get("compare")]
    for name in controls:
        if name not in SETTINGS and not control_sides(name, samplers):
            out.append(f"{slug}: the demo cannot have a control {name!r}: no setting or parameter of its samplers")
    out += [f"{slug}: unknown plot {p!r} (known: {', '.join(PLOTS)})" for p in plots if p not in PLOTS]
    steps = try_steps(body)
    if not steps:
        out.append(f"{slug}: no numbered steps under '## Try this'")
    for i, step in enumerate(steps, 1):
        need = needs(step, demo)
        for query in need.links:
            keys = dict(parse_qsl(query[1:]))
            ignored = apply_query(LabConfig(), keys)
            if keys.get("tab") != "lab" or ignored:
                out.append(f"{slug} step {i}: the link {query} does not open the lab as it says"
                           + (f" ({'; '.join(ignored)})" if ignored else ""))
        if need.links:          # the lab has every control and plot; the link opens what the step needs
            continue
        missing = sorted(need.controls - set(controls))
        if missing:
            out.append(f"{slug} step {i}: sets {', '.join(missing)}, which the demo lacks, and links nowhere")
        unseen = sorted(need.plots - set(plots) - {"KL"})     # every run's metrics show its KL
        if unseen:
            out.append(f"{slug} step {i}: watches {', '.join(unseen)}, which the demo does not show")
    return out


def readouts(run) -> dict[str, float]:
    """The demo's extra histories at the run's current step: the mean kinetic temperature r·r/d (1 at the
    target) and the thermostat ξ's mean and standard deviation, over the chains that have not diverged."""
    out = {}
    alive = run.ens.guard.alive
    z = run.ens.z[alive]
    if run.r_cols and len(z):
        out["kinetic temperature"] = float(dg.kinetic_temperature(z[:, run.r_cols]).mean())
    if run.xi_cols and len(z):
        xi = z[:, run.xi_cols].ravel()
        out["xi"], out["xi_sd"] = float(xi.mean()), float(xi.std())
    return {k: v for k, v in out.items() if np.isfinite(v)}
