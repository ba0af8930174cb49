"""Recipe paper, Fig. 2 and Fig. S.5: SGLD, SGHMC, naive SGRHMC and gSGRHMC on synthetic targets.

The paper does not give its step sizes or gradient noise. We use each sampler's defaults
(eps: SGLD 0.01, SGHMC 0.05 with C = 1, SGRHMC 0.02 with metric_D = 1.5 and metric_C = 0.5 - min U)
and simulated gradient noise V = 1, and say so in the outputs.
"""
from __future__ import annotations

import numpy as np

from samplers.reproduce.base import (
    MARGIN_SHARE,
    RECIPE,
    Claim,
    Outcome,
    Progress,
    all_hold,
    decides,
    decides_match,
    matches,
    outside,
    parallel_map,
    reproduction,
    verdict_word,
)

LEFT = ["sgld", "sghmc", "sgrhmc-naive", "sgrhmc"]
BOOT = 400        # resamples of the chains for the medians' Monte Carlo error
LABEL = {"sgld": "SGLD", "sghmc": "SGHMC", "sgrhmc-naive": "naive SGRHMC (Eq. 16)",
         "sgrhmc": "gSGRHMC (Alg. 1)"}


def _make(name, potential, V=1.0, **params):
    from samplers.registry import build_sampler
    from samplers.targets.presets import get_potential
    pot = get_potential(potential)
    return build_sampler(name, pot, V, **params)


def _kl_job(job):
    from samplers.accuracy import edges_for, kl_error, score
    from samplers.run import run
    name, potential, seed, chains, steps, burn = job
    s = _make(name, potential)
    res = run(s, steps, chains, burn=burn, seed=seed)
    edges = edges_for(s.potential, 80)
    hist, _ = np.histogram(res.theta[..., 0].ravel(), bins=edges, density=True)
    floor, sd = kl_error(s.potential, res.theta)     # the Monte Carlo error the verdicts are decided on
    return dict(sampler=name, potential=potential, kl=score(s.potential, res.theta)["kl"],
                diverged=res.diverged), hist, edges, (floor, sd)


@reproduction("recipe-fig2-left", "Recipe paper Fig. 2 (left) and Fig. S.5: KL on two 1-D targets",
          "Ma, Chen & Fox 2015, Sec. 4.1, Fig. 2 left, Supplement F.1, Fig. S.5", RECIPE)
def fig2_left(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt
    chains, steps, burn = (10000, 4000, 1000) if full else (2000, 600, 500) if quick else (2000, 1500, 500)
    potentials = ["gaussian", "double-well"]
    jobs = [(n, p, seed, chains, steps, burn) for p in potentials for n in LEFT]
    results = parallel_map(_kl_job, jobs, Progress("recipe-fig2-left", len(jobs)))
    rows = [r for r, _, _, _ in results]
    err = {(r['sampler'], r['potential']): e for r, _, _, e in results}
    kl = {(r["sampler"], r["potential"]): r["kl"] for r in rows}

    fig = plt.figure(figsize=(13, 5.5))
    grid = fig.add_gridspec(2, 5, width_ratios=[1.4, 1, 1, 1, 1])
    ax = fig.add_subplot(grid[:, 0])
    width = 0.2
    for k, name in enumerate(LEFT):
        ax.bar(np.arange(2) + (k - 1.5) * width, [kl[(name, p)] for p in potentials], width, label=LABEL[name])
    ax.set_yscale("log")
    ax.set_xticks([0, 1], ["1: θ²/2", "2: θ⁴ − 2θ²"])
    ax.set_ylabel("KL(samples ‖ exact)")
    ax.legend(fontsize=8)
    ax.set_title("Fig. 2 (left)")
    for (r, hist, edges, _), job in zip(results, jobs):
        i, j = potentials.index(job[1]), LEFT.index(job[0])
        a = fig.add_subplot(grid[i, j + 1])
        centres = 0.5 * (edges[1:] + edges[:-1])
        pot = _make(job[0], job[1]).potential
        a.bar(centres, hist, width=edges[1] - edges[0], color="tab:blue", alpha=0.5)
        a.plot(centres, pot.density_xy(centres), "k", lw=1.2)
        a.set_title(f"{LABEL[job[0]]}\nKL {r['kl']:.4f}", fontsize=8)
        a.set_yticks([])
    fig.suptitle(f"V = 1 gradient noise, {chains} chains × {steps} kept steps (burn-in {burn}), seed {seed}")
    fig.tight_layout()

    claims = []
    for p in potentials:
        n, g = ("sgrhmc-naive", p), ("sgrhmc", p)
        tol = 2 * float(np.hypot(err[n][1], err[g][1]))
        claims.append(Claim(
            f"naive SGRHMC does not converge to the target ({p}): its KL is well above gSGRHMC's",
            outside(kl[n] - kl[g], tol),
            f"KL naive {kl[n]:.4f} vs gSGRHMC {kl[g]:.4f} (noise floors {err[n][0]:.2g} and {err[g][0]:.2g}; sd of "
            f"each KL's noise {err[n][1]:.2g} and {err[g][1]:.2g}, by resampling whole chains)",
            decides=decides("naive − gSGRHMC", tol, fmt=".2g", why="twice the difference's sd")))
    # "match": KL − floor below a tenth of naive SGRHMC's on the same target (MARGIN_SHARE), with twice its sd
    margin = {p: MARGIN_SHARE * (kl[("sgrhmc-naive", p)] - err[("sgrhmc-naive", p)][0]) for p in potentials}
    fit = [(n, p) for n in ("sgld", "sghmc", "sgrhmc") for p in potentials]

    def match(k):
        return matches(kl[k], *err[k], margin[k[1]])
    claims.append(Claim("gSGRHMC, SGLD and SGHMC match the target",
                        all_hold(match(k) for k in fit),
                        "KL (noise floor, sd): " + ", ".join(
                            f"{n}/{p} {kl[(n, p)]:.2g} ({err[(n, p)][0]:.2g}, {err[(n, p)][1]:.2g}): "
                            f"{verdict_word(match((n, p)))}" for n, p in fit),
                        decides="; ".join(f"{p}: " + decides_match(margin[p], against="naive SGRHMC's")
                                          for p in potentials)))
    settings = dict(V=1.0, chains=chains, steps=steps, burn=burn, seed=seed,
                    eps={n: _make(n, "gaussian").params["eps"] for n in LEFT},
                    metric="G^-1 = 1.5 sqrt|U + C|, C = 0.5 - min U (0.5 for θ²/2, 1.5 for the double well)")
    return Outcome(rows, claims, fig, settings, paper="bar heights only (no numbers given)")


def _explore_job(job):
    from samplers.run import Ensemble
    name, seed, chains, max_steps, left, right, eps = job
    s = _make(name, "banana", eps=eps)
    ens = Ensemble(s, chains, seed, theta0=np.array([0.0, -1.2]))
    seen_l = np.zeros(chains, bool)
    seen_r = np.zeros(chains, bool)
    both_at = np.full(chains, -1)
    path = [ens.theta[0].copy()]
    for t in range(1, max_steps + 1):
        ens.advance(1)
        th = ens.theta[:, 0]
        seen_l |= th < left
        seen_r |= th > right
        newly = seen_l & seen_r & (both_at < 0)
        both_at[newly] = t
        if t <= 500:
            path.append(ens.theta[0].copy())
        if (both_at >= 0).all() and t > 500:
            break
    done = both_at >= 0
    median = float(np.median(np.where(done, both_at, max_steps + 1)))
    return dict(sampler=name, median_steps_both_arms=median, fraction_done=float(done.mean()),
                eps=s.params["eps"]), np.array(path), np.where(done, both_at, max_steps + 1)


@reproduction("recipe-fig2-right", "Recipe paper Fig. 2 (right): exploring the banana",
          "Ma, Chen & Fox 2015, Sec. 4.1, Fig. 2 right", RECIPE)
def fig2_right(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt

    from samplers.targets.presets import get_potential
    chains, max_steps = (2000, 40000) if full else (150, 6000) if quick else (400, 8000)
    names = ["sgld", "sghmc", "sgrhmc"]
    eps = 0.02   # one step size for all: each step costs one gradient, so steps compare cost
    jobs = [(n, seed, chains, max_steps, -1.5, 1.5, eps) for n in names]
    results = parallel_map(_explore_job, jobs, Progress("recipe-fig2-right", len(jobs)))
    rows = [r for r, _, _ in results]
    times = {r['sampler']: t for r, _, t in results}
    pot = get_potential("banana")
    axes, dens = pot.grid(200)
    fig, axs = plt.subplots(1, 3, figsize=(13, 4.2), sharey=True)
    for a, (r, path, _) in zip(axs, results):
        a.contour(axes[0], axes[1], dens.T, levels=8, colors="0.6", linewidths=0.8)
        a.plot(path[:, 0], path[:, 1], "-", color="tab:blue", lw=0.6, alpha=0.7)
        pts = path[::50][:11]
        a.plot(pts[:, 0], pts[:, 1], "o-", color="tab:red", ms=3, lw=1)
        a.set_title(f"{LABEL[r['sampler']]}, ε = {r['eps']}\nmedian steps to visit both arms: "
                    f"{r['median_steps_both_arms']:.0f}", fontsize=9)
        a.set_xlim(*pot.box[0])
        a.set_ylim(*pot.box[1])
    fig.suptitle("first 500 steps of one chain (blue), every 50th step (red); V = 1 gradient noise")
    fig.tight_layout()
    med = {r["sampler"]: r["median_steps_both_arms"] for r in rows}
    # the medians' Monte Carlo error: resampling each sampler's (independent) chains, the sd of the median gap
    rng = np.random.default_rng(7 + seed)

    def median_gap_sd(other):
        boot = [np.median(rng.choice(times[other], chains)) - np.median(rng.choice(times["sgrhmc"], chains))
                for _ in range(BOOT)]
        return float(np.std(boot, ddof=1))
    evidence = ("median steps (one gradient each) until a chain has visited θ₁ < −1.5 and θ₁ > 1.5, "
                f"all at ε = {eps}, over {chains} chains: " + ", ".join(f"{LABEL[n]} {med[n]:.0f}" for n in names))
    claims = []
    for other, extra in (("sghmc", ""), ("sgld", " (at equal ε, SGLD's position moves by about sqrt(2ε) per step, "
                                                 "a Hamiltonian sampler's by about ε·r)")):
        tol = 2 * median_gap_sd(other)
        claims.append(Claim(f"gSGRHMC explores the banana faster than {LABEL[other]}",
                            outside(med[other] - med["sgrhmc"], tol),
                            evidence + f"; {LABEL[other]} − gSGRHMC {med[other] - med['sgrhmc']:+.0f} steps" + extra,
                            decides=decides(f"{LABEL[other]}'s median − gSGRHMC's", tol, " steps", ".0f",
                                            why=f"twice the gap's sd over {BOOT} resamples of the chains")))
    settings = dict(V=1.0, eps=eps, chains=chains, max_steps=max_steps, start=[0.0, -1.2], seed=seed,
                    arms="θ₁ < −1.5 and θ₁ > 1.5")
    return Outcome(rows, claims, fig, settings, paper="contour plots only (no numbers given)")
