"""Lesson 04, stochastic gradients: the noise bias of SGLD and real minibatches."""
from __future__ import annotations

from functools import lru_cache

from samplers import diagnostics as dg
from samplers.accuracy import edges_for
from samplers.registry import build_sampler
from samplers.run import run
from samplers.targets.presets import get_potential

from .common import CheckResult, chain_mean_se, result, short


def sgld_variance_exact(eps: float, V: float, bhat: float) -> float:
    """Stationary variance of SGLD on U = theta^2/2 with gradient noise N(0, V) and correction B^:

    theta' = (1 - eps) theta - eps xi_V + N(0, eps (2 - eps B^)), so
    Var = (2 eps + eps^2 (V - B^)) / (1 - (1 - eps)^2) = (2 + eps (V - B^)) / (2 - eps)."""
    return (2 + eps * (V - bhat)) / (2 - eps)


def sgld_noise_bias(quick: bool = False) -> CheckResult:
    """Eq. (9) on the standard normal with simulated gradient noise V = 4: the stationary variance of
    SGLD measured over an ensemble against the exact (2 + eps (V - B^)) / (2 - eps), with and
    without the B^ correction, at two step sizes."""
    chains = 4000 if quick else 20000
    V = 4.0
    worst, parts = 0.0, []
    for eps in (0.1, 0.05):
        for bhat in (0.0, V):
            s = build_sampler("sgld", "gaussian", V=V, eps=eps, Bhat=bhat)
            steps = int(round(20 / eps))
            res = run(s, steps, chains, burn=int(round(8 / eps)), seed=4)
            m, se = chain_mean_se(res.theta[:, :, 0] ** 2)
            exact = sgld_variance_exact(eps, V, bhat)
            z = abs(m - exact) / se
            worst = max(worst, z)
            parts.append(f"ε={eps:g}, B̂={bhat:g}: {m:.3f} vs {exact:.3f}")
    tol = 4.0
    return result(worst, tol, worst < tol,
                  "Var θ measured vs exact: " + "; ".join(parts) + f" (largest gap {worst:.1f} standard errors, "
                  f"tolerance {tol:g})")


@lru_cache(maxsize=1)
def _logistic_masses(bins: int = 20):
    """Exact bin masses of the logistic posterior on its box (Simpson, 4 nodes a bin: ~1e-6 accurate)."""
    pot = get_potential("logistic")
    edges = edges_for(pot, bins)
    return edges, dg.bin_masses_2d(pot.density_xy, *edges, oversample=4)


def minibatch_kl(quick: bool = False) -> CheckResult:
    """Real minibatches (logistic posterior, n = 20 of N = 500): the KL divergence of SGLD's samples
    from the exact posterior (20 x 20 bins) falls when the step size falls, over the same simulated
    time (burn-in 0.1, then 0.2 time units; the posterior relaxes in about 0.01)."""
    chains = 300 if quick else 1000
    edges, masses = _logistic_masses(20)
    kls = {}
    for eps in (2e-3, 5e-4):
        s = build_sampler("sgld", "logistic", batch=20, eps=eps)
        burn, steps = int(round(0.1 / eps)), int(round(0.2 / eps))
        res = run(s, steps, chains, burn=burn, thin=max(1, steps // 100), seed=6)
        kls[eps] = dg.kl_divergence(res.theta, edges, masses)
    ratio = kls[5e-4] / kls[2e-3]
    floor = dg.kl_mc_bias(masses.size, 100 * chains)    # an exact sample of this size, as an upper bound
    tol = 0.5
    return result(ratio, tol, ratio < tol and kls[5e-4] > floor,
                  f"KL(samples ‖ posterior), 20×20 bins: {short(kls[2e-3])} at ε = 2·10⁻³, {short(kls[5e-4])} at "
                  f"ε = 5·10⁻⁴ (ratio {ratio:.2f}; must fall below {tol:g} when ε falls 4×; an exact sample "
                  f"of this size scores about {short(floor)})")
