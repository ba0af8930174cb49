"""Reproductions of the sources' synthetic experiments: `python -m samplers reproduce NAME`.

Each reproduction returns an `Outcome`: rows of numbers (written as CSV), a matplotlib
figure (PNG and SVG), and the paper's claims each marked as holding, not holding or not decidable here, on
the run's Monte Carlo error, with the numbers and the interval that would decide it (JSON, read by the docs and
the app's Paper figures page; `base.outside`, `within`, `matches` and `decides` make every verdict).
"""
from __future__ import annotations

import sys

from samplers.reproduce import chen, dpmixture, lda, qnhmc_models, qnhmc_table, recipe_figures, scir_figures
from samplers.reproduce.base import ASSETS, Reproduction, format_table, verdict_word, write, write_docs

REPRODUCTIONS: dict[str, Reproduction] = {r.name: r for r in (
    recipe_figures.fig2_left,
    recipe_figures.fig2_right,
    lda.recipe_lda,
    chen.chen_fig1,
    qnhmc_table.qnhmc_table1,
    qnhmc_models.qnhmc_logistic,
    qnhmc_models.qnhmc_pmf,
    scir_figures.scir_fig1,
    scir_figures.scir_fig2,
    lda.scir_lda,
    dpmixture.scir_dpmixture,
)}


def names() -> list[str]:
    return list(REPRODUCTIONS)


def reproduce(name: str, out_dir=None, seed: int = 0, full: bool = False, stream=None, quick: bool = False) -> dict:
    if name not in REPRODUCTIONS:
        raise KeyError(f"unknown reproduction '{name}' (choose from {', '.join(REPRODUCTIONS)}, or all)")
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "sgmcmc-lab"   # stable ids: regenerated SVGs diff cleanly
    stream = stream if stream is not None else sys.stdout
    outcome = REPRODUCTIONS[name].run(seed=seed, full=full, quick=quick)
    summary = write(REPRODUCTIONS[name], outcome, out_dir or ASSETS)
    if out_dir is None:
        write_docs()
    print(f"\n{REPRODUCTIONS[name].title}", file=stream)
    print(format_table(outcome.rows), file=stream)
    for c in outcome.claims:
        decides = f" (decided by: {c.decides})" if c.decides else ""
        print(f"[{verdict_word(c.holds).upper() if c.holds is not True else 'holds'}] {c.text}: {c.evidence}{decides}",
              file=stream)
    return summary
