"""Lesson 08, SGRHMC: the naive sampler's bias against gSGRHMC, SGLD and SGHMC (the recipe paper's Fig. 2, left)."""
from __future__ import annotations

from samplers.accuracy import kl_noise_floor, score
from samplers.registry import build_sampler
from samplers.run import run

from .common import CheckResult, result, short


def sgrhmc_naive_kl(quick: bool = False) -> CheckResult:
    """The recipe paper's Fig. 2 (left) on the standard normal with V = 1, its four samplers at the lab's default
    steps: naive SGRHMC (Eq. 16, no grad G^{-1/2} term) has a KL divergence at least 10x that of gSGRHMC
    (Algorithm 1), while gSGRHMC, SGLD and SGHMC all stay within three times the Monte Carlo floor (the KL an
    exact sample of the same size scores, whose own scatter is about 20 %). Histograms of 50 bins over [-5, 5]."""
    chains, steps = (2000, 500) if quick else (4000, 1500)
    out = {}
    for name in ("sgrhmc", "sgrhmc-naive", "sgld", "sghmc"):
        s = build_sampler(name, "gaussian", V=1.0)
        res = run(s, steps, chains, burn=1000, seed=11)
        out[name] = (score(s.potential, res.theta, bins=50)["kl"], kl_noise_floor(s.potential, res.theta, bins=50))
    kl, floor = out["sgrhmc"]
    kl_n, _ = out["sgrhmc-naive"]
    ratio = kl_n / kl
    at_floor = all(out[n][0] < 3 * out[n][1] for n in ("sgrhmc", "sgld", "sghmc"))
    tol = 10.0
    return result(ratio, tol, ratio >= tol and at_floor,
                  f"KL naive {short(kl_n)} / gSGRHMC {short(kl)} = {ratio:.0f} (needs ≥ {tol:g}); SGLD "
                  f"{short(out['sgld'][0])}, SGHMC {short(out['sghmc'][0])}, gSGRHMC {short(kl)}, each within 3× "
                  f"its Monte Carlo floor (about {short(floor)}): {'yes' if at_floor else 'no'}")
