"""Chen, Fox & Guestrin (2014), Fig. 1: naive stochastic-gradient HMC leaves the target, SGHMC does not.

The demonstration the recipe paper builds on (its Eq. 11 is Chen et al.'s naive SGHMC). Target
U(θ) = −2θ² + θ⁴ (the `double-well` preset), noisy gradients ∇U + N(0, 4), ε = 0.1, momentum
resampled every 50 steps in every Hamiltonian variant. Six samplers:

* HMC with exact gradients, L = 50 leapfrog steps per proposal, with and without the Metropolis test;
* the same HMC fed the noisy gradients (Chen et al.'s "naive stochastic gradient HMC"), with the MH
  test on the exact energy and without any test. As in the authors' code (matlab/figure1/hmc.m of
  their ML-SGHMC repository, whose gradU adds a fresh randn * 2 at each call), every half-kick draws its
  own noisy gradient, 2L per proposal: a full kick's noise is then the mean of two draws (variance V/2),
  and noisy HMC without the test strays less than with one draw shared across the two half-kicks
  (E[θ²] 0.89 against 0.97 here);
* the registry's `sghmc-naive` (Eq. 11: no friction, nothing injected, Euler steps, momentum
  resampled every 50 steps), which is the no-MH variant with the lab's integrator;
* `sghmc` with C = 3 and B̂ = V = 4 (noise N(0, ε(2C − εB̂))), momentum also resampled every 50 steps.

Every sampler covers the same simulated time per chain: one HMC proposal (L = 50 leapfrog steps; L + 1 = 51
gradients with exact gradients, 2L = 100 with noisy ones) per 50 SGHMC steps, end points kept.
Chen et al. give no sample sizes; ours are in the settings.
"""
from __future__ import annotations

import numpy as np

from samplers.reproduce.base import (
    MARGIN_SHARE,
    SGHMC,
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
)

V = 4.0          # gradient-noise variance
EPS = 0.1
L = 50           # leapfrog steps per momentum resample
C = 3.0

# key -> (label, registry name, gradient-noise variance or None, parameters)
VARIANTS = {
    "hmc-mh": ("HMC, exact ∇U, with MH", "hmc", None, dict(eps=EPS, L=L)),
    "hmc-nomh": ("HMC, exact ∇U, no MH", "hmc", None, dict(eps=EPS, L=L, metropolis="off")),
    "sg-hmc-mh": ("naive SG-HMC (noisy ∇U) with MH", "hmc", V, dict(eps=EPS, L=L)),
    "sg-hmc-nomh": ("naive SG-HMC (noisy ∇U), no MH", "hmc", V, dict(eps=EPS, L=L, metropolis="off")),
    "sghmc-naive": ("naive SGHMC (sghmc-naive, Eq. 11)", "sghmc-naive", V, dict(eps=EPS, resample_every=L)),
    "sghmc": ("SGHMC, C = 3", "sghmc", V, dict(eps=EPS, C=C, Bhat=V, resample_every=L)),
}


def exact_second_moment() -> float:
    """E[θ²] under exp(2θ² − θ⁴) by quadrature (0.8327)."""
    from scipy import integrate

    def w(t):
        return np.exp(2 * t * t - t ** 4)
    return integrate.quad(lambda t: t * t * w(t), -np.inf, np.inf)[0] / integrate.quad(w, -np.inf, np.inf)[0]


def _job(job):
    from samplers.accuracy import edges_for, kl_error, score
    from samplers.registry import build_sampler
    from samplers.run import run
    from samplers.targets.presets import get_potential
    key, seed, chains, sg_steps, sg_burn, thin = job
    label, name, noise, params = VARIANTS[key]
    pot = get_potential("double-well")
    s = build_sampler(name, pot, noise, **params)
    if name == "hmc" and noise is not None:
        s.oracle.fresh_half_kicks = True    # a fresh noisy gradient at every half-kick, as the authors' code
    if name == "hmc":   # one proposal per L steps: the same gradient budget, end points kept
        res = run(s, sg_steps // L, chains, burn=sg_burn // L, seed=seed)
        acc = res.stats.acceptance_rate if params.get("metropolis", "on") == "on" else ""
    else:
        res = run(s, sg_steps, chains, burn=sg_burn, thin=thin, seed=seed)
        acc = ""    # no accept step
    theta = res.theta[..., 0]
    edges = edges_for(pot, 80)
    hist, _ = np.histogram(theta.ravel(), bins=edges, density=True)
    sc = score(pot, res.theta)
    row = dict(variant=label, sampler=name, gradient="exact" if noise is None else f"∇U + N(0, {noise:g})",
               metropolis=params.get("metropolis", "on") if name == "hmc" else "none",
               E_theta2=float(np.mean(theta ** 2)), kl=sc["kl"], ks=sc["ks"],
               outside_box=float(np.mean(np.abs(theta) > 3.0)), acceptance=acc,
               samples=int(theta.size), diverged=res.diverged)
    # the Monte Carlo error the verdicts are decided on: the KL's noise floor and sd, and E[θ²]'s standard error
    # from the spread of the (independent) chains' own means
    floor, sd = kl_error(pot, res.theta)
    err = dict(floor=floor, sd=sd, se_theta2=float((theta ** 2).mean(0).std(ddof=1) / np.sqrt(theta.shape[1])))
    return key, row, hist, edges, err


@reproduction("chen-fig1", "Chen, Fox & Guestrin 2014 Fig. 1: naive SGHMC vs SGHMC on θ⁴ − 2θ²",
          "Chen, Fox & Guestrin 2014, Sec. 3.1 and Fig. 1 (recipe paper Eq. 11 vs Eq. 12)", SGHMC)
def chen_fig1(seed: int = 0, full: bool = False, quick: bool = False) -> Outcome:
    import matplotlib.pyplot as plt

    from samplers.targets.presets import get_potential
    chains, steps, burn, thin = ((10000, 20000, 2000, 20) if full else (1000, 2000, 500, 5) if quick
                                 else (4000, 10000, 1000, 10))
    jobs = [(k, seed, chains, steps, burn, thin) for k in VARIANTS]
    results = parallel_map(_job, jobs, Progress("chen-fig1", len(jobs)))
    rows = [r for _, r, _, _, _ in results]
    by = {k: r for k, r, _, _, _ in results}
    err = {k: e for k, _, _, _, e in results}
    truth = exact_second_moment()
    for r in rows:
        r["exact_E_theta2"] = truth

    pot = get_potential("double-well")
    fig = plt.figure(figsize=(14, 6))
    grid = fig.add_gridspec(2, 4, width_ratios=[1.5, 1, 1, 1])
    ax = fig.add_subplot(grid[:, 0])
    xs = np.linspace(-3, 3, 400)
    ax.plot(xs, pot.density_xy(xs), "k", lw=2.2, label="true distribution")
    styles = {"hmc-mh": ("tab:blue", "-"), "hmc-nomh": ("tab:cyan", "--"), "sg-hmc-mh": ("tab:green", "-"),
              "sg-hmc-nomh": ("tab:red", "--"), "sghmc-naive": ("tab:orange", ":"), "sghmc": ("tab:purple", "-.")}
    for (key, _, hist, edges, _) in results:
        centres = 0.5 * (edges[1:] + edges[:-1])
        color, ls = styles[key]
        ax.plot(centres, hist, color=color, ls=ls, lw=1.4, label=VARIANTS[key][0])
    ax.set_xlabel("θ")
    ax.set_ylabel("density")
    ax.set_xlim(-2.5, 2.5)
    ax.set_ylim(0, 0.8)
    ax.legend(fontsize=7.5, loc="upper center", frameon=False)
    ax.set_title("all samplers against the true density\n(Chen et al. Fig. 1)", fontsize=10)
    for i, (key, r, hist, edges, _) in enumerate(results):
        a = fig.add_subplot(grid[i // 3, 1 + i % 3])
        centres = 0.5 * (edges[1:] + edges[:-1])
        a.bar(centres, hist, width=edges[1] - edges[0], color=styles[key][0], alpha=0.45)
        a.plot(xs, pot.density_xy(xs), "k", lw=1.1)
        a.set_xlim(-2.5, 2.5)
        a.set_ylim(0, 0.85)
        a.set_yticks([])
        extra = f", acc {r['acceptance']:.2f}" if r["acceptance"] != "" else ""
        a.set_title(f"{VARIANTS[key][0]}\nE[θ²] {r['E_theta2']:.3f} (exact {truth:.3f}), KL {r['kl']:.2g}{extra}",
                    fontsize=8)
    fig.suptitle(f"U(θ) = −2θ² + θ⁴, noisy gradient ∇U + N(0, {V:g}) (noisy HMC: a fresh draw at every half-kick, "
                 f"as the authors' code), ε = {EPS}, momentum resampled every {L} steps;\n{chains} chains, {steps} "
                 f"steps each after {burn}; seed {seed}", fontsize=10)
    fig.tight_layout()

    naive, corr, mh, nomh = by["sghmc-naive"], by["sghmc"], by["sg-hmc-mh"], by["sg-hmc-nomh"]
    fmt = "E[θ²] {E_theta2:.4f}, KL {kl:.2g}".format

    # "matches": KL − floor below a tenth of naive SGHMC's (MARGIN_SHARE), decided with twice its sd
    margin = MARGIN_SHARE * (naive["kl"] - err["sghmc-naive"]["floor"])

    def match(key):
        return matches(by[key]["kl"], err[key]["floor"], err[key]["sd"], margin)

    def kl_of(key):
        return (f"KL {by[key]['kl']:.2g} against its noise floor {err[key]['floor']:.2g} (sd "
                f"{err[key]['sd']:.2g})")
    wide = naive["E_theta2"] - truth
    tol_wide = 2 * err["sghmc-naive"]["se_theta2"]
    against = "naive SGHMC's"
    claims = [
        Claim("naive SGHMC (no friction, no MH) does not sample the target: its histogram is too wide",
              outside(wide, tol_wide),
              f"sghmc-naive {fmt(**naive)} vs exact E[θ²] {truth:.4f} (standard error {tol_wide / 2:.2g} over its "
              f"{chains} chains); {kl_of('sghmc-naive')}; SGHMC's KL {corr['kl']:.2g}; leapfrog form "
              f"(noisy HMC without MH): {fmt(**nomh)}",
              decides=decides("E[θ²] − exact", tol_wide, fmt=".3g", why="twice its standard error over chains")),
        Claim("SGHMC with friction C = 3 matches the target",
              match("sghmc"),
              f"sghmc {fmt(**corr)} (exact E[θ²] {truth:.4f}); {kl_of('sghmc')}",
              decides=decides_match(margin, against=against)),
        Claim("HMC with noisy gradients is repaired by the MH step on the exact energy (at a lower acceptance)",
              all_hold([match("sg-hmc-mh"), {True: False, False: True, None: None}[match("sg-hmc-nomh")]]),
              f"with MH {fmt(**mh)}, acceptance {mh['acceptance']:.3f}, {kl_of('sg-hmc-mh')}; without MH "
              f"{fmt(**nomh)}, {kl_of('sg-hmc-nomh')}",
              decides="with MH: " + decides_match(margin, against=against) + "; without MH the reverse"),
        Claim("HMC with exact gradients matches the target with or without the MH step at ε = 0.1",
              all_hold([match("hmc-mh"), match("hmc-nomh")]),
              f"with MH {fmt(**by['hmc-mh'])}, acceptance {by['hmc-mh']['acceptance']:.3f}, {kl_of('hmc-mh')}; "
              f"without MH {fmt(**by['hmc-nomh'])}, {kl_of('hmc-nomh')}",
              decides="each: " + decides_match(margin, against=against)),
    ]
    settings = dict(potential="double-well (U = θ⁴ − 2θ²)", V=V, eps=EPS, L=L, C=C, Bhat=V, chains=chains,
                    gradient_evaluations=steps, burn=burn, thin=thin, seed=seed,
                    hmc="one proposal per L SGHMC steps, end points kept",
                    noisy_hmc="a fresh noisy gradient at every half-kick (2L per proposal), as the authors' "
                              "code (hmc.m) draws them",
                    sghmc_resample_every=L)
    return Outcome(rows, claims, fig, settings,
                   paper="histograms only (no numbers given); exact E[θ²] = 0.8327 by quadrature")
