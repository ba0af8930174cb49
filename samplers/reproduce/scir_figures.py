"""SCIR paper (Baker, Fearnhead, Fox & Nemeth 2018): Fig. 1 and Fig. 2.

The sparse Dirichlet posterior (d = 10, N = 1000, counts 800/100/100/0…, α = 0.1; `sparse-dirichlet`)
and the dense one (the 1000 observations spread equally; `dense-dirichlet`). The paper's protocol,
which the default size follows: each run is one chain of 1000 iterations after 1000 iterations of
burn-in, repeated over five seeds, each sampler "optimally tuned", compared with as many exact
independent draws.

* Fig. 1: boxplots, on the log scale, of the fifth component ω₅ (a zero count) from exact draws,
  SCIR and SGRLD at minibatch size 10.
* Fig. 2: the Kolmogorov-Smirnov distance from the exact posterior against the minibatch size
  (0.001 to 0.5 of the data, n = 1 to 500), for SCIR and SGRLD, on the sparse and the dense posterior.

The distance (the paper defers it to its supplement, which we do not have): ω is mapped by the
Rosenblatt transform of Dir(a) (stick breaking, `dirichlet.dirichlet_rosenblatt`) to d − 1
coordinates that are i.i.d. Uniform(0, 1) under the posterior; the KS distance of each coordinate
from Uniform(0, 1) is averaged over the d − 1 coordinates (`dirichlet.dirichlet_ks`).

Tuning: for each posterior, minibatch size and sampler, every step size of a small grid (h for SCIR,
ε for SGRLD) is run over the five repeats and the one with the smallest mean distance is kept (Fig. 1
tunes the same way at n = 10). The repeats are independent chains of one ensemble. `--full` keeps the
per-run size (already the paper's) and refines the step-size grids.
"""
from __future__ import annotations

import numpy as np

from samplers.reproduce.base import (
    MARGIN_SHARE,
    SCIR,
    Claim,
    Outcome,
    Progress,
    all_hold,
    decides,
    decides_match,
    matches,
    mean_se,
    outside,
    parallel_map,
    reproduction,
    within,
)

POSTERIORS = ["sparse-dirichlet", "dense-dirichlet"]
SAMPLERS = {"scir": ("SCIR", "h"), "sgrld-simplex": ("SGRLD", "eps")}
COMPONENT = 4          # ω₅, the fifth component (a zero count)
ITERATIONS, BURN = 1000, 1000


def grids(full: bool, quick: bool) -> dict:
    if quick:
        return {"scir": [0.01, 0.1], "sgrld-simplex": [3e-5, 1e-4]}
    if full:
        return {"scir": [float(f"{v:.2g}") for v in np.logspace(-3, 0.5, 15)],
                "sgrld-simplex": [float(f"{v:.2g}") for v in np.logspace(-6, -2, 17)]}
    return {"scir": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
            "sgrld-simplex": [3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3]}


def _run_job(job):
    """One (posterior, sampler, batch, step) cell: KS per repeat, the share of each repeat's ω₅ below its exact
    median, ω₅ of the first repeat, mean ω."""
    from scipy import stats

    from samplers.registry import build_sampler
    from samplers.run import run
    from samplers.targets.presets import get_potential
    from samplers.targets.simplex import dirichlet_ks
    potential, name, batch, step, repeats, chains, run_seed = job
    pot = get_potential(potential)
    s = build_sampler(name, pot, None, batch, **{SAMPLERS[name][1]: step})
    res = run(s, ITERATIONS, repeats * chains, burn=BURN, seed=run_seed)
    omega = res.theta.reshape(ITERATIONS, repeats, chains, pot.dim)
    if res.diverged or not np.isfinite(omega).all():
        ks = np.full(repeats, np.inf)
    else:
        ks = np.array([dirichlet_ks(omega[:, r], pot.shape).mean() for r in range(repeats)])
    a = pot.shape
    med = stats.beta(a[COMPONENT], a.sum() - a[COMPONENT]).median()
    below = (omega[..., COMPONENT] < med).mean(axis=(0, 2))
    return dict(ks=ks, below=below, sample=omega[:, 0, :, COMPONENT].ravel().copy(), mean=omega.mean(axis=(0, 1, 2)))


def _exact_ks(potential, repeats, chains, seed):
    from scipy import stats

    from samplers.targets.presets import get_potential
    from samplers.targets.simplex import dirichlet_ks
    pot = get_potential(potential)
    rng = np.random.default_rng(10_000 + seed)
    draws = [pot.exact_sampler(ITERATIONS * chains, rng) for _ in range(repeats)]
    a = pot.shape
    med = stats.beta(a[COMPONENT], a.sum() - a[COMPONENT]).median()
    below = np.array([(w[:, COMPONENT] < med).mean() for w in draws])
    return np.array([dirichlet_ks(w, pot.shape).mean() for w in draws]), draws[0], below


def _tune(potentials, batches, grid, repeats, chains, seed, label):
    """Run every grid cell; return {(potential, sampler, batch): (best step, result)} and all results."""
    cells = [(p, n, b, v) for p in potentials for b in batches for n in SAMPLERS for v in grid[n]]
    jobs = [(p, n, b, v, repeats, chains, seed * 1_000_003 + k) for k, (p, n, b, v) in enumerate(cells)]
    results = parallel_map(_run_job, jobs, Progress(label, len(jobs)))
    best = {}
    for (p, n, b, v), r in zip(cells, results):
        key = (p, n, b)
        if key not in best or r["ks"].mean() < best[key][1]["ks"].mean():
            best[key] = (v, r)
    return best, dict(zip(cells, results))


# -- Fig. 1 ------------------------------------------------------------------------------------
@reproduction("scir-fig1", "SCIR paper Fig. 1: a sparse component of ω under exact, SCIR and SGRLD sampling",
          "Baker, Fearnhead, Fox & Nemeth 2018, Sec. 1.3 and 2.2, Fig. 1", SCIR)
def scir_fig1(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    from scipy import stats

    from samplers.diagnostics import ks_distance
    from samplers.targets.presets import get_potential
    potential, batch, repeats, chains = "sparse-dirichlet", 10, (3 if quick else 5), 1
    grid = grids(full, quick)
    best, every = _tune([potential], [batch], grid, repeats, chains, seed, "scir-fig1")
    pot = get_potential(potential)
    a = pot.shape
    marg = stats.beta(a[COMPONENT], a.sum() - a[COMPONENT])
    exact_ks, exact_draws, exact_below = _exact_ks(potential, repeats, chains, seed)
    samples = {"exact": exact_draws[:, COMPONENT]}
    rows = [dict(method="exact", step="", mean_rosenblatt_ks=float(exact_ks.mean()),
                 ks_omega5=ks_distance(samples["exact"], marg.cdf),
                 median_omega5=float(np.median(samples["exact"])), mean_omega5=float(marg.mean()),
                 q10_omega5=float(np.quantile(samples["exact"], 0.1)),
                 q90_omega5=float(np.quantile(samples["exact"], 0.9)))]
    for name, (label, key) in SAMPLERS.items():
        step, r = best[(potential, name, batch)]
        samples[label] = r["sample"]
        rows.append(dict(method=label, step=f"{key}={step:g}", mean_rosenblatt_ks=float(r["ks"].mean()),
                         ks_omega5=ks_distance(r["sample"], marg.cdf), median_omega5=float(np.median(r["sample"])),
                         mean_omega5=float(r["mean"][COMPONENT]), q10_omega5=float(np.quantile(r["sample"], 0.1)),
                         q90_omega5=float(np.quantile(r["sample"], 0.9))))
    by = {r["method"]: r for r in rows}

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw=dict(width_ratios=[1.1, 1]))
    order = ["exact", "SCIR", "SGRLD"]
    logs = [np.log10(np.clip(samples[m], 1e-300, None)) for m in order]
    bp = ax.boxplot(logs, patch_artist=True, widths=0.55)
    ax.set_xticks([1, 2, 3], [f"{m}\n{by[m]['step']}" if by[m]["step"] else m for m in order])
    for patch, c in zip(bp["boxes"], ["0.7", "tab:blue", "tab:red"]):
        patch.set_facecolor(c)
        patch.set_alpha(0.6)
    ax.set_ylabel("log₁₀ ω₅")
    ax.set_title(f"Fig. 1: ω₅ (a zero count), {ITERATIONS} iterations after {BURN} of burn-in,\n"
                 f"minibatch {batch}, vs {ITERATIONS} exact draws", fontsize=10)
    zero = [j for j in range(pot.dim) if a[j] == pot.data.alpha[j]]
    xs = np.arange(len(zero))
    exact_mean = a / a.sum()
    ax2.bar(xs - 0.27, exact_mean[zero], 0.27, color="0.6", label="exact E[ω_j]")
    for k, (name, (label, _)) in enumerate(SAMPLERS.items()):
        m = best[(potential, name, batch)][1]["mean"]
        ax2.bar(xs + k * 0.27, m[zero], 0.27, color="tab:blue" if name == "scir" else "tab:red",
                alpha=0.7, label=f"{label} (mean over {repeats} runs)")
    ax2.set_yscale("log")
    ax2.set_xticks(xs, [f"ω{j + 1}" for j in zero])
    ax2.set_ylabel("mean of ω_j")
    ax2.set_title("every zero-count component: sample mean vs exact α/(N + dα)", fontsize=10)
    tops = [exact_mean[zero].max()] + [best[(potential, n, batch)][1]["mean"][zero].max() for n in SAMPLERS]
    ax2.set_ylim(None, 10 * max(tops))
    ax2.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"sparse Dirichlet posterior (d = 10, N = 1000, counts 800/100/100/0…, α = 0.1); step sizes "
                 f"tuned on the mean Rosenblatt KS over {repeats} runs; seed {seed}", fontsize=10)
    fig.tight_layout()

    e, sc, sg = by["exact"], by["SCIR"], by["SGRLD"]
    zero_bias = [best[(potential, "sgrld-simplex", batch)][1]["mean"][j] / exact_mean[j] for j in zero]
    med = float(marg.median())
    below = {m: float(np.mean(samples[m] < med)) for m in order}
    for r in rows:
        r["below_exact_median"] = below[r["method"]]
    # the share of ω₅ below its exact median, run by run: 1/2 under the exact law; its spread over the independent
    # runs is the Monte Carlo error (autocorrelation within a run included)
    runs = {"SGRLD": best[(potential, "sgrld-simplex", batch)][1]["below"],
            "SCIR": best[(potential, "scir", batch)][1]["below"], "exact": exact_below}
    share = {m: mean_se(v) for m, v in runs.items()}
    tol_sg = 2 * share["SGRLD"][1]
    margin = MARGIN_SHARE * abs(share["SGRLD"][0] - 0.5)     # a tenth of SGRLD's departure from 1/2
    by_run = "; ".join(f"{m} {share[m][0]:.3f} ± {share[m][1]:.3f}" for m in ("SGRLD", "SCIR", "exact"))
    claims = [
        Claim("SGRLD rarely proposes small values of the sparse component: ω₅ is biased upwards",
              outside(0.5 - share["SGRLD"][0], tol_sg),
              f"share of ω₅ below the exact median {med:.2e}, mean over {repeats} runs ± standard error: {by_run} "
              f"(1/2 under the exact law); median ω₅: SGRLD {sg['median_omega5']:.2e}, exact draws "
              f"{e['median_omega5']:.2e}; mean: SGRLD "
              f"{sg['mean_omega5']:.2e}, exact {e['mean_omega5']:.2e} (every zero-count component: SGRLD's mean "
              f"{min(zero_bias):.1f}-{max(zero_bias):.1f} × the exact one)",
              decides=decides("1/2 − SGRLD's share", tol_sg, fmt=".3f", why=f"twice its standard error over "
                              f"{repeats} runs")),
        Claim("SCIR handles the small values: its ω₅ sample follows the exact posterior",
              matches(abs(share["SCIR"][0] - 0.5), 0.0, share["SCIR"][1], margin),
              f"share of ω₅ below the exact median: {by_run}; KS of ω₅ from its exact Beta marginal: SCIR "
              f"{sc['ks_omega5']:.3f}, SGRLD {sg['ks_omega5']:.3f}, {ITERATIONS} exact draws {e['ks_omega5']:.3f} (one "
              f"run's autocorrelated chain against independent draws); median ω₅ SCIR {sc['median_omega5']:.2e}",
              decides=decides_match(margin, what="|SCIR's share − 1/2|", against="SGRLD's",
                                    why=f"sd: its standard error over {repeats} runs")),
    ]
    settings = dict(potential=potential, minibatch=batch, iterations=ITERATIONS, burn=BURN, chains_per_run=chains,
                    runs_for_tuning=repeats, grid={SAMPLERS[n][1] + " " + SAMPLERS[n][0]: g for n, g in grid.items()},
                    component="ω₅ (fifth, zero count)", seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="boxplots only (no numbers given): SGRLD's ω₅ sits orders of magnitude above the exact one")


# -- Fig. 2 ------------------------------------------------------------------------------------
@reproduction("scir-fig2", "SCIR paper Fig. 2: KS distance against minibatch size, sparse and dense Dirichlet",
          "Baker, Fearnhead, Fox & Nemeth 2018, Sec. 2.2, Fig. 2", SCIR)
def scir_fig2(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    N = 1000
    batches = [1, 10, 100] if quick else [1, 2, 5, 10, 20, 50, 100, 200, 500]
    repeats, chains = (3 if quick else 5), 1
    grid = grids(full, quick)
    best, _ = _tune(POSTERIORS, batches, grid, repeats, chains, seed, "scir-fig2")
    exact = {p: _exact_ks(p, repeats, chains, seed)[0] for p in POSTERIORS}
    rows = []
    for p in POSTERIORS:
        rows.append(dict(posterior=p, sampler="exact", batch="", fraction="", step="",
                         ks_mean=float(exact[p].mean()), ks_min=float(exact[p].min()), ks_max=float(exact[p].max())))
        for name, (label, key) in SAMPLERS.items():
            for b in batches:
                step, r = best[(p, name, b)]
                rows.append(dict(posterior=p, sampler=label, batch=b, fraction=b / N, step=f"{key}={step:g}",
                                 ks_mean=float(r["ks"].mean()), ks_min=float(r["ks"].min()),
                                 ks_max=float(r["ks"].max())))

    def ks(p, name, b):
        return float(best[(p, name, b)][1]["ks"].mean())

    fig, axs = plt.subplots(1, 2, figsize=(12, 4.6))
    frac = np.array(batches) / N
    colors = {"scir": "tab:blue", "sgrld-simplex": "tab:red"}
    for ax, p, tag in zip(axs, POSTERIORS, "ab"):
        e = exact[p]
        ax.axhline(e.mean(), color="k", ls="--", lw=1, label=f"exact ({ITERATIONS} independent draws)")
        ax.axhspan(e.min(), e.max(), color="0.85")
        for name, (label, _) in SAMPLERS.items():
            per = np.array([best[(p, name, b)][1]["ks"] for b in batches])     # (batches, repeats)
            jitter = np.exp(np.linspace(-0.06, 0.06, per.shape[1]))
            for r in range(per.shape[1]):
                ax.plot(frac * jitter[r], per[:, r], "o", ms=3, color=colors[name], alpha=0.45)
            ax.plot(frac, per.mean(1), "-", color=colors[name], lw=1.6, label=f"{label} (mean of {repeats} seeds)")
        ax.set_xscale("log")
        ax.set_xlabel("minibatch size as a fraction of N = 1000 (log scale)")
        ax.set_ylabel("KS distance (mean over the 9 Rosenblatt coordinates)")
        ax.set_ylim(0, None)
        ax.set_title(f"({tag}) {p.replace('-dirichlet', '')} Dirichlet posterior", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"each point: one chain, {ITERATIONS} iterations after {BURN} of burn-in, at the step size with "
                 f"the smallest mean KS over its grid; seed {seed}", fontsize=10)
    fig.tight_layout()

    sp, dn = "sparse-dirichlet", "dense-dirichlet"
    big, small = batches[-1], batches[0]

    def runs(p, name, b):
        return best[(p, name, b)][1]["ks"]

    def gap(p, b):
        """SGRLD − SCIR mean KS at minibatch b, and twice its standard error over the runs."""
        (g, g_se), (c, c_se) = mean_se(runs(p, "sgrld-simplex", b)), mean_se(runs(p, "scir", b))
        return g - c, 2 * float(np.hypot(g_se, c_se))

    def drop(hi, lo_runs):
        (x, x_se), (y, y_se) = mean_se(hi), mean_se(lo_runs)
        return x - y, 2 * float(np.hypot(x_se, y_se))
    sparse = {b: gap(sp, b) for b in batches}
    fall, tol_fall = drop(runs(sp, "scir", small), runs(sp, "scir", big))
    stay, tol_stay = drop(runs(sp, "sgrld-simplex", big), exact[sp])
    e_sp, e_dn = float(exact[sp].mean()), float(exact[dn].mean())
    dense = {b: gap(dn, b) for b in batches}
    claims = [
        Claim("On the sparse posterior SCIR's KS distance is below SGRLD's at every minibatch size",
              all_hold(outside(g, t) for g, t in sparse.values()),
              f"SGRLD − SCIR mean KS over {repeats} runs, ± twice its standard error, by minibatch size: "
              + ", ".join(f"n={b}: {g:+.3f} ± {t:.3f}" for b, (g, t) in sparse.items()),
              decides="SGRLD − SCIR above + twice its standard error at every n holds, below − twice it at any n "
                      "does not hold"),
        Claim("On the sparse posterior SCIR approaches the exact sampler as the minibatch grows; SGRLD does not",
              all_hold([outside(fall, tol_fall), outside(stay, tol_stay)]),
              f"SCIR {ks(sp, 'scir', small):.3f} at n={small}, {ks(sp, 'scir', big):.3f} at n={big} (a fall of "
              f"{fall:.3f} ± {tol_fall:.3f}); SGRLD {ks(sp, 'sgrld-simplex', small):.3f} → "
              f"{ks(sp, 'sgrld-simplex', big):.3f}, above the exact sampler's {e_sp:.3f} at n={big} by {stay:.3f} ± "
              f"{tol_stay:.3f} (± twice the standard error over {repeats} runs)",
              decides=f"SCIR's fall from n={small} to n={big} above +{tol_fall:.3f} and SGRLD's excess over the exact "
                      f"sampler at n={big} above +{tol_stay:.3f} holds; either below minus its tolerance does not "
                      f"hold"),
        Claim("On the dense posterior the two samplers perform similarly",
              all_hold(within(g, t, e_dn) for g, t in dense.values()),
              "SCIR − SGRLD mean KS by minibatch size, ± twice its standard error: " + ", ".join(
                  f"n={b}: {-g:+.3f} ± {t:.3f}" for b, (g, t) in dense.items())
              + f"; similar means within the KS of {ITERATIONS} exact draws, {e_dn:.3f}",
              decides=f"|gap| + twice its standard error below {e_dn:.3f} at every n holds, |gap| − twice it above "
                      f"{e_dn:.3f} at any n does not hold"),
    ]
    settings = dict(posteriors=POSTERIORS, minibatches=batches, N=N, iterations=ITERATIONS, burn=BURN,
                    chains_per_run=chains, seeds=repeats,
                    grid={SAMPLERS[n][1] + " " + SAMPLERS[n][0]: g for n, g in grid.items()},
                    distance="mean over the d − 1 Rosenblatt coordinates of the KS distance from Uniform(0, 1)",
                    seed=seed)
    return Outcome(rows, claims, fig, settings,
                   paper="curves only (no numbers given); sparse: SCIR well below SGRLD and nearing the exact "
                         "sampler at large minibatches; dense: the two similar")
