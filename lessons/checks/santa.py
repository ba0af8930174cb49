"""Lesson 12, temperature and Santa: annealed Santa leaves the shallow mode of the tilted double well for the deeper
one; SGHMC at beta = 1 keeps exp(-U)'s two modes."""
from __future__ import annotations

import numpy as np

from samplers.registry import build_sampler
from samplers.run import Ensemble

from .common import CheckResult, result

BARRIER = 0.0754                                   # U'(theta) = 0 between the modes of tilted-double-well
ANNEAL = dict(eps=0.05, anneal_b=2000.0, anneal_c=1.0)   # beta_t = 1 + t/2000: 11 after the 20 000 steps


def _from_shallow(s, chains, seed):
    ens = Ensemble(s, chains, seed=seed)
    ens.z[:, 0] = s.potential.start[0]
    return ens


def _deep_mass(pot, beta=1.0):
    x = np.linspace(-3, 3, 60001)[:, None]
    w = np.exp(-beta * (pot.U(x) - pot.u_min))
    return float(w[x[:, 0] < BARRIER].sum() / w.sum())


def santa_annealing(quick: bool = False) -> CheckResult:
    """Every chain starts at the shallow mode (theta = 0.96). Annealed Santa (beta_t = 1 + t/2000, eps = 0.05,
    gradient noise V = 1) for 20 000 steps: the fraction in the deeper mode must reach 0.95 (exp(-11 U) puts 0.998
    there). SGHMC at beta = 1 (its defaults): its fraction over steps 2000 to 6000 must be exp(-U)'s 0.635 within
    four standard errors (between chains)."""
    chains, steps = (1000, 20_000) if quick else (4000, 20_000)
    santa = _from_shallow(build_sampler("santa", "tilted-double-well", V=1.0, **ANNEAL), chains, seed=0)
    santa.advance(steps)
    deep = float((santa.theta[:, 0] < BARRIER).mean())
    sghmc = _from_shallow(build_sampler("sghmc", "tilted-double-well", V=1.0), chains, seed=0)
    sghmc.advance(2000)
    per_chain = np.zeros(chains)
    for _ in range(200):
        sghmc.advance(20)
        per_chain += sghmc.theta[:, 0] < BARRIER
    per_chain /= 200
    exact = _deep_mass(sghmc.sampler.potential)
    mean, se = float(per_chain.mean()), float(per_chain.std(ddof=1) / np.sqrt(chains))
    z = abs(mean - exact) / se
    ok = deep >= 0.95 and z < 4
    return result(deep, 0.95, ok,
                  f"annealed Santa: {deep:.3f} of {chains} chains in the deeper mode after {steps} steps "
                  f"(at least 0.95); "
                  f"SGHMC at β = 1: {mean:.3f} ± {se:.3f} in the deeper mode, exp(−U) puts {exact:.3f} there "
                  f"({z:.1f} s.e.)")
