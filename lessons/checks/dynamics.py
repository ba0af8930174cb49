"""Lesson 01, from dynamics to distributions: exp(-H) is invariant, and an ensemble forgets its start."""
from __future__ import annotations

import numpy as np

from samplers.accuracy import kl_noise_floor, score
from samplers.engine.stationarity import stationarity_residual
from samplers.registry import build_sampler
from samplers.run import Ensemble

from .common import CheckResult, result, short


def fokker_planck_residual(quick: bool = False, drop: tuple = ()) -> CheckResult:
    """Langevin (z = theta), SGHMC (z = (theta, r)) and gSGRHMC, whose D(theta) and Q(theta) both depend on the
    state, leave exp(-H) invariant: the Fokker-Planck right-hand side, evaluated at p = exp(-H), vanishes up to
    round-off (samplers.stationarity). With constant D and Q, Gamma is zero and a wrong Gamma would go
    unseen; gSGRHMC is the case that tests it. `drop` removes terms from every recipe (a mutation: with
    "gamma" dropped, gSGRHMC's residual is not zero)."""
    n_grid = 101 if quick else 201
    out = {}
    for name in ("sgld", "sghmc", "sgrhmc"):
        s = build_sampler(name, "double-well")
        recipe = s.recipe.with_drop(set(drop)) if drop else s.recipe
        out[name] = stationarity_residual(recipe, s.potential, n_grid=n_grid).relative
    value, tol = max(out.values()), 1e-6
    return result(value, tol, value < tol,
                  f"relative Fokker–Planck residual at exp(−H) on the double well: Langevin {short(out['sgld'])}, "
                  f"SGHMC (θ, r) {short(out['sghmc'])}, gSGRHMC with D(θ) and Q(θ) {short(out['sgrhmc'])} "
                  f"(tolerance {short(tol)})")


def ensemble_kl(quick: bool = False) -> CheckResult:
    """An ensemble of Langevin chains (SGLD with exact gradients, eps = 0.003, small enough that the
    discretisation bias is invisible at this sample size) started in a blob around theta = -1.5
    forgets it: the KL divergence of its histogram from exp(-U) falls to the Monte Carlo floor, what
    an exact sample of that size scores."""
    chains = 1000 if quick else 4000
    eps = 0.003
    s = build_sampler("sgld", "double-well", eps=eps)
    ens = Ensemble(s, chains, seed=1, theta0=[-1.5])
    pot = s.potential
    kl0 = score(pot, ens.theta[None])["kl"]
    ens.advance(int(round(1 / eps)))                     # t = 1
    kl1 = score(pot, ens.theta[None])["kl"]
    # the wells exchange mass at a rate of about 0.7 per unit time (Kramers), so by t = 10 the
    # initial imbalance has decayed to ~1e-3
    ens.advance(int(round(9 / eps)))
    kept = np.empty((200, chains, 1))
    every = int(round(0.02 / eps))
    for k in range(200):                                 # t in (10, 14]
        ens.advance(every)
        kept[k] = ens.theta
    kl = score(pot, kept)["kl"]
    floor = kl_noise_floor(pot, kept)
    tol = 2.5 * floor   # the KL of an exact sample scatters around the floor by about 20 %
    return result(kl, tol, kl < tol and kl0 > 10 * tol,
                  f"KL(histogram ‖ e^(−U)) = {short(kl0)} at t = 0, {short(kl1)} at t = 1, {short(kl, 2)} "
                  f"for t ∈ (10, 14] (Monte Carlo floor {short(floor)}, tolerance {short(tol)})")


def ergodic_time_average(quick: bool = False) -> CheckResult:
    """Ergodicity, the property that lets one long chain stand in for the ensemble: 100 SGHMC chains (C = 1, eps =
    0.1, exact gradients) on U = theta^2/2, started at rest at theta_0 from -3 to 3 (energies from 0 to 4.5). Each
    chain's own time average of theta^2 over 300 time units must equal the ensemble value Var theta of the Euler
    scheme, (4 - 2 C eps) / (4 - 2 C eps - eps^2) (lesson 9), within five of its own batch-means standard errors,
    whatever its start. Without friction and noise (C = 0) the flow keeps each chain's energy and its average
    stays where its start put it."""
    chains, eps, C = 100, 0.1, 1.0
    steps, burn, batches = (3000, 100, 20) if quick else (12000, 100, 40)
    s = build_sampler("sghmc", "gaussian", eps=eps, C=C)
    ens = Ensemble(s, chains, seed=23)
    ens.z[:, 0] = np.linspace(-3.0, 3.0, chains)
    ens.z[:, 1] = 0.0
    ens.advance(burn)
    x = np.empty((steps, chains))
    for k in range(steps):
        x[k] = ens.advance(1)[:, 0] ** 2
    means = x.mean(axis=0)
    batch = x[: steps // batches * batches].reshape(batches, -1, chains).mean(axis=1)
    se = batch.std(axis=0, ddof=1) / np.sqrt(batches)
    exact = (4 - 2 * C * eps) / (4 - 2 * C * eps - eps ** 2)
    z = np.abs(means - exact) / se
    worst, tol = float(z.max()), 5.0
    return result(worst, tol, worst < tol,
                  f"time averages of θ² over {steps * eps:g} time units, one per chain, started at rest at θ₀ from −3 "
                  f"to 3: from {means.min():.3f} to {means.max():.3f}, ensemble value {exact:.4f}; the farthest is "
                  f"{worst:.1f} of its own standard errors away (tolerance {tol:g})")
