"""QNHMC paper (Fu, Luo & Zhang), §5.1: Fig. 1 (burn-in) and Table 1 on the 100-d Gaussian.

Target N(0, 11ᵀ + 4I) (`gaussian-100d`), ε = 0.01, L = 10 for both samplers, so a proposal
costs L + 1 gradients for each and equal proposal counts are equal gradient budgets. One chain
per sampler, as in the paper, from one start far from the mode shared by all samplers
(θ₀ = 10·N(0, I) drawn from the seed; `init_state` adds N(0, 0.5²) to it).

Table 1's columns, as the paper defines them, on the projection x = θ·1/√d (the direction of the
largest eigenvalue), over the last half of the run (the paper: the last 50K of 100K):

* Σρ: the sum of the autocorrelations at lags 1..500;
* ESS: Stan's estimator with Geyer's truncation (`diagnostics.ess`), and beside it the paper's formula
  n / (1 + 2 Σρ) with n the number of samples in the last half. The formula sums 500 noisy
  autocorrelations: for a fast-mixing chain and a few thousand samples Σρ can come out below −½,
  and the "ESS" negative, so the claims use Stan's;
* burn-in: proposals until the chain reaches the high-density region, i.e. until its negative log
  density U, smoothed by a running median over 51 proposals, first falls below the 99.5% quantile
  of its exact stationary law χ²₁₀₀/2. (A criterion "stays inside the band" does not work for one
  chain: at ε = 0.01, L = 10 U itself is autocorrelated over hundreds of proposals, so even its
  running median wanders out of a 99% band now and then.) The paper reports seconds: we give both,
  seconds = proposals × this machine's seconds per proposal;
* ESS per second: ESS over the time spent on the samples it is computed from.

The paper does not say how it timed or estimated; HMC-BFGS (Zhang & Sutton 2011) is not in the lab,
so its row carries the paper's numbers only. QNHMC runs Algorithm 2 as printed: BFGS (Eq. 1) from
B = I. docs/notes/qnhmc.md explains why BFGS is slow to settle on this target (it rotates B's deficit
along 1 into the directions the chain drifts along instead of removing it); the lab's default QNHMC
(SR1 updates from I rescaled by the first pair) is run beside it as our variant.
"""
from __future__ import annotations

import time

import numpy as np

from samplers.reproduce.base import QNHMC, Claim, Outcome, Progress, parallel_map, reproduction

EPS, L, MAX_LAG, WINDOW = 0.01, 10, 500, 51
# Table 1 of the paper: Σρ, burn-in time (seconds), ESS, ESS per second (100K samples, last 50K used)
PAPER = {"HMC": (98.27, 81.0, 253.0, 7.22), "HMC-BFGS": (49.74, 47.0, 497.0, 9.65),
         "QNHMC": (2.65, 0.93, 7936.0, 93.36)}
OURS = "QNHMC, SR1 (lab default)"
# (sampler, variant) -> row label and parameters beyond eps and L
CONFIGS = {("hmc", None): ("HMC", {}), ("qnhmc", "printed"): ("QNHMC", dict(update="bfgs", B0=1.0, adapt=None)),
           ("qnhmc", "lab"): (OURS, {})}


def _band(d: int):
    from scipy import stats
    return tuple(stats.chi2(d).ppf([0.005, 0.995]) / 2)


def _job(job):
    from scipy.ndimage import median_filter

    from samplers import diagnostics as dg
    from samplers.registry import build_sampler
    from samplers.run import run
    from samplers.targets.presets import get_potential
    name, variant, seed, chains, steps, stream = job
    label, extra = CONFIGS[(name, variant)]
    pot = get_potential("gaussian-100d")
    d = pot.dim
    theta0 = 10.0 * np.random.default_rng(1000 + seed).standard_normal(d)
    s = build_sampler(name, pot, None, eps=EPS, L=L, **extra)
    t0 = time.perf_counter()
    res = run(s, steps, chains, seed=seed + 100 * stream, theta0=theta0)
    seconds = time.perf_counter() - t0
    kept = res.theta.shape[0]
    u = pot.U_chunked(res.theta.reshape(-1, d)).reshape(kept, chains)
    smooth = median_filter(np.median(u, axis=1), size=WINDOW, mode="nearest")
    inside = smooth <= _band(d)[1]
    burn = int(np.argmax(inside)) + 1 if inside.any() else kept
    half = kept // 2
    proj = res.theta[half:].sum(axis=2) / np.sqrt(d)           # (kept/2, chains): θ·1/√d
    x = proj[:, 0] if chains == 1 else proj
    rho = dg.autocorrelation(x, min(MAX_LAG, half - 1))
    sum_rho = float(rho[1:].sum())
    n = proj.size
    per_proposal = seconds / steps
    ess = dg.ess(x)
    row = dict(method=label, sum_rho=sum_rho, burn_in=burn, burn_in_s=burn * per_proposal,
               ess=ess, ess_per_s=ess / (per_proposal * half), ess_formula=n / (1 + 2 * sum_rho),
               var_proj=float(proj.var()), acceptance=res.stats.acceptance_rate, seconds=seconds,
               samples_used=n)
    trace = dict(u=np.median(u, axis=1), proj=res.theta.sum(axis=2)[:, 0] / np.sqrt(d), rho=rho)
    return row, trace


@reproduction("qnhmc-table1", "QNHMC paper Table 1 and Fig. 1: HMC vs QNHMC on the 100-d Gaussian",
          "Fu, Luo & Zhang, Quasi-Newton HMC, Sec. 5.1, Table 1 and Fig. 1", QNHMC)
def qnhmc_table1(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    chains = 1
    steps = 100_000 if full else 2500 if quick else 20_000
    configs = [("qnhmc", "printed"), ("hmc", None)] + ([] if quick else [("qnhmc", "lab")])
    jobs = [(n, b, seed, chains, steps, k) for k, (n, b) in enumerate(configs)]   # own random stream each
    results = parallel_map(_job, jobs, Progress("qnhmc-table1", len(jobs)))
    ours = {r["method"]: (r, tr) for r, tr in results}
    rows = []
    for method in ["HMC", "HMC-BFGS", "QNHMC", OURS]:
        r = dict(ours[method][0]) if method in ours else dict(method=method) if method in PAPER else None
        if r is None:
            continue
        if method in PAPER:
            r.update(zip(["paper_sum_rho", "paper_burn_in_s", "paper_ess", "paper_ess_per_s"], PAPER[method]))
        rows.append(r)

    band = _band(100)
    colors = {"HMC": "tab:blue", "QNHMC": "tab:red", OURS: "tab:orange"}
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.6))
    it = np.arange(1, steps + 1)
    # every proposal up to 1000, then 4000 evenly spaced ones: the log-x panels look the same, the SVG stays small
    show = np.unique(np.concatenate([np.arange(min(steps, 1000)), np.linspace(0, steps - 1, 4000).astype(int)]))
    order = [m for m in [OURS, "QNHMC", "HMC"] if m in ours]   # HMC drawn on top
    for method in order:
        r, tr = ours[method]
        c = colors[method]
        axs[0].plot(it[show], tr["u"][show], color=c, lw=0.8, label=f"{method} (burn-in {r['burn_in']})")
        axs[0].axvline(r["burn_in"], color=c, ls=":", lw=1.2)
        axs[1].plot(it[show], tr["proj"][show], color=c, lw=0.5, alpha=0.8, label=method)
        axs[2].plot(np.arange(len(tr["rho"])), tr["rho"], color=c, label=f"{method}: Σρ = {r['sum_rho']:.2f}")
    axs[0].axhspan(*band, color="0.85", label="exact 99% band of U")
    axs[0].set_xscale("log")
    axs[0].set_yscale("log")
    axs[0].set_ylim(20, 8000)   # room for the legend above the curves
    axs[0].set_xlabel("iteration (proposal)")
    axs[0].set_ylabel("U(θ) = ½ θᵀΣ⁻¹θ")
    axs[0].set_title("Fig. 1: negative log density from a far start\n(dotted: end of burn-in)", fontsize=10)
    axs[0].legend(fontsize=8, loc="upper right")
    sd = np.sqrt(104.0)
    axs[1].axhspan(-2 * sd, 2 * sd, color="0.88", label="exact ±2 sd")
    axs[1].set_xscale("log")
    axs[1].set_xlabel("iteration (proposal)")
    axs[1].set_ylabel("θ·1/√d")
    axs[1].set_title("projection onto 1 (the slow direction, variance 104)", fontsize=10)
    axs[1].legend(fontsize=8, loc="lower right")
    axs[2].axhline(0, color="0.5", lw=0.8)
    axs[2].set_xlabel("lag (proposals)")
    axs[2].set_ylabel("autocorrelation of θ·1/√d")
    axs[2].set_title(f"over the last {steps // 2} of {steps} proposals", fontsize=10)
    axs[2].legend(fontsize=8)
    fig.suptitle(f"N(0, 11ᵀ + 4I), d = 100, ε = {EPS}, L = {L}, one chain per sampler from the same far start, "
                 f"seed {seed}", fontsize=10)
    fig.tight_layout()

    h, q = ours["HMC"][0], ours["QNHMC"][0]
    lab = ours.get(OURS, (None,))[0]
    extra = "" if lab is None else f"; the lab's QNHMC (SR1): {lab['burn_in']} ({lab['burn_in_s']:.2f} s)"
    claims = [
        Claim("QNHMC's effective sample size (projection onto 1) is far above HMC's",
              q["ess"] > 3 * h["ess"],
              f"of n = {q['samples_used']} samples: QNHMC {q['ess']:.0f}, HMC {h['ess']:.1f} "
              f"(×{q['ess'] / h['ess']:.0f}; the paper: 7936 vs 253 of n = 50000, ×31); the paper's n/(1 + 2Σρ): "
              f"{q['ess_formula']:.0f} vs {h['ess_formula']:.1f}"),
        Claim("QNHMC's summed autocorrelation (lags 1-500) is far below HMC's",
              q["sum_rho"] < h["sum_rho"] / 3,
              f"Σρ QNHMC {q['sum_rho']:.2f}, HMC {h['sum_rho']:.2f} (the paper: 2.65 vs 98.27)"),
        Claim("QNHMC draws more effective samples per second than HMC",
              q["ess_per_s"] > h["ess_per_s"],
              f"QNHMC {q['ess_per_s']:.1f}/s, HMC {h['ess_per_s']:.2f}/s (the paper: 93.36 vs 7.22); "
              f"seconds per proposal QNHMC {q['seconds'] / steps * 1e3:.2f} ms, "
              f"HMC {h['seconds'] / steps * 1e3:.2f} ms"),
        Claim("QNHMC ends burn-in within hundreds of iterations, far sooner than HMC",
              q["burn_in"] < 1000 and q["burn_in"] < h["burn_in"] / 3,
              f"proposals until U (running median of {WINDOW}) first enters its stationary 99% band: QNHMC (B = I, "
              f"Algorithm 2) {q['burn_in']} ({q['burn_in_s']:.2f} s), HMC {h['burn_in']} ({h['burn_in_s']:.2f} s)"
              f"{extra}; the paper: 0.93 s vs 81 s"),
    ]
    if lab is not None:
        claims.append(Claim("The lab's QNHMC (SR1 updates, our variant, not the paper's) ends burn-in within hundreds "
                            "of iterations, far sooner than HMC",
                            lab["burn_in"] < 1000 and lab["burn_in"] < h["burn_in"] / 3,
                            f"SR1: {lab['burn_in']} proposals ({lab['burn_in_s']:.2f} s), HMC {h['burn_in']} "
                            f"({h['burn_in_s']:.2f} s); ESS {lab['ess']:.0f}, Σρ {lab['sum_rho']:.2f}"))
    settings = dict(potential="gaussian-100d", eps=EPS, L=L, chains=chains, proposals=steps,
                    used_for_ess=f"last {steps // 2}", max_lag=MAX_LAG, start="10·N(0, I), rng 1000 + seed",
                    burn_in=f"first proposal where the running median of {WINDOW} of U is below the exact 99.5% "
                            "quantile of χ²₁₀₀/2",
                    streams="each sampler its own random stream (seed + 100 k): with one stream the two QNHMC "
                            "chains couple once their B agree",
                    B="QNHMC: BFGS from B = I (Algorithm 2); ours: SR1 from I rescaled by the first pair", seed=seed)
    paper = "; ".join(f"{m}: Σρ {v[0]}, burn-in {v[1]} s, ESS {v[2]:.0f}, ESS/s {v[3]}" for m, v in PAPER.items())
    return Outcome(rows, claims, fig, settings, paper=paper + " (100K samples, last 50K used)")
