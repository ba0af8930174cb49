"""Lesson 09, integrators: the order of Euler and of the symmetric splitting."""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from samplers.registry import build_sampler
from samplers.run import run

from .common import CheckResult, chain_mean_se, result, short


def _sghmc_linear_maps(eps: float, C: float = 1.0):
    """z = (theta, r) -> F z + G xi for one SGHMC step on U = theta^2/2 (M = 1, exact gradient):
    the library's Euler scheme (momentum first) and its symmetric splitting A B O B A."""
    a, s = 1 - eps * C, math.sqrt(2 * C * eps)
    euler = (np.array([[1 - eps ** 2, eps * a], [-eps, a]]), np.array([[eps * s], [s]]))
    half = np.array([[1.0, eps / 2], [0.0, 1.0]])                 # A(h/2): theta += h/2 r
    damp = np.diag([1.0, math.exp(-C * eps / 2)])                 # B(h/2): r *= e^{-C h/2}
    kick = np.array([[1.0, 0.0], [-eps, 1.0]])                    # O(h): r -= h theta + noise
    split = (half @ damp @ kick @ damp @ half, half @ damp @ np.array([[0.0], [s]]))
    return {"euler": euler, "splitting": split}


def stationary_covariance(F, G) -> np.ndarray:
    """Sigma = F Sigma F^T + G G^T (a discrete Lyapunov equation): the exact stationary covariance."""
    return solve_discrete_lyapunov(F, G @ G.T)


def integrator_order(quick: bool = False) -> CheckResult:
    """The bias of the stationary law against the step size, with no Monte Carlo at all: for a
    Gaussian target both schemes are linear recursions, so their stationary covariance solves a
    discrete Lyapunov equation. The log-log slope of ||Sigma_eps - I|| is 1 for Euler, 2 for the
    symmetric splitting (the BCH argument)."""
    eps = np.array([0.1, 0.05, 0.025, 0.0125])
    slopes, errs = {}, {}
    for name in ("euler", "splitting"):
        e = np.array([np.linalg.norm(stationary_covariance(*_sghmc_linear_maps(x)[name]) - np.eye(2))
                      for x in eps])
        slopes[name] = float(np.polyfit(np.log(eps), np.log(e), 1)[0])
        errs[name] = e
    gap = max(abs(slopes["euler"] - 1), abs(slopes["splitting"] - 2))
    tol = 0.05
    return result(gap, tol, gap < tol,
                  f"slope of ‖Σ_ε − I‖ over ε = 0.1 … 0.0125: Euler {slopes['euler']:.3f} (predicted 1), "
                  f"splitting {slopes['splitting']:.3f} (predicted 2); at ε = 0.1 the errors are "
                  f"{short(errs['euler'][0])} and {short(errs['splitting'][0])} (tolerance ±{tol:g} on the slopes)")


def integrator_simulation(quick: bool = False) -> CheckResult:
    """One point of integrator_order by simulation: the library's SGHMC (Euler and integrator=splitting)
    at eps = 0.2, C = 1, exact gradients on the standard normal; E[r^2] against the Lyapunov value."""
    chains = 2000 if quick else 8000
    eps, worst, parts = 0.2, 0.0, []
    for name in ("euler", "splitting"):
        exact = stationary_covariance(*_sghmc_linear_maps(eps)[name])
        s = build_sampler("sghmc", "gaussian", eps=eps, C=1.0, integrator=name)
        res = run(s, 400, chains, burn=100, seed=7, keep_aux=True)
        m, se = chain_mean_se(res.aux[:, :, 0] ** 2)
        z = abs(m - exact[1, 1]) / se
        worst = max(worst, z)
        parts.append(f"{name} {m:.4f} ± {se:.4f} vs {exact[1, 1]:.4f}")
    tol = 4.0
    return result(worst, tol, worst < tol,
                  "E[r²] at ε = 0.2: " + "; ".join(parts) + f" ({worst:.1f} s.e. at most, tolerance {tol:g})")
