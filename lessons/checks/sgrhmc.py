"""Lesson 08, SGRHMC: the naive sampler's bias against gSGRHMC."""
from __future__ import annotations

from samplers.accuracy import kl_noise_floor, score
from samplers.registry import build_sampler
from samplers.run import run

from .common import CheckResult, result, short


def sgrhmc_naive_kl(quick: bool = False) -> CheckResult:
    """The recipe paper's Fig. 2 (left) claim on the standard normal with V = 1: naive SGRHMC (Eq. 16,
    no grad G^{-1/2} term) has a KL divergence at least 10x that of gSGRHMC (Algorithm 1). Histograms
    of 50 bins over [-5, 5], so that gSGRHMC's KL, which sits at the Monte Carlo floor, is small."""
    chains, steps = (2000, 500) if quick else (4000, 1500)
    out = {}
    for name in ("sgrhmc", "sgrhmc-naive"):
        s = build_sampler(name, "gaussian", V=1.0)
        res = run(s, steps, chains, burn=1000, seed=11)
        out[name] = (score(s.potential, res.theta, bins=50)["kl"], kl_noise_floor(s.potential, res.theta, bins=50))
    kl, floor = out["sgrhmc"]
    kl_n, _ = out["sgrhmc-naive"]
    ratio = kl_n / kl
    tol = 10.0
    return result(ratio, tol, ratio >= tol,
                  f"KL naive {short(kl_n)} / gSGRHMC {short(kl)} = {ratio:.0f} (needs ≥ {tol:g}; "
                  f"the Monte Carlo floor is {short(floor)})")
