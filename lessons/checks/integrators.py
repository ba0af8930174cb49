"""Lesson 09, integrators: the order of Euler and of the symmetric splitting."""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from samplers.registry import build_sampler
from samplers.run import run

from .common import CheckResult, affine_step_maps, chain_mean_se, result, short

EPS_LADDER = (0.1, 0.05, 0.025, 0.0125)


def library_maps(integrator: str, eps: float, C: float = 1.0, V: float = 0.0, Bhat: float = 0.0):
    """(F, G) of the library's SGHMC step on U = theta^2/2 (M = 1), z = (theta, r) -> F z + G xi: read off the
    step itself (common.affine_step_maps), so the check sees whatever the library does."""
    s = build_sampler("sghmc", "gaussian", eps=eps, C=C, integrator=integrator, V=V or None, Bhat=Bhat)
    return affine_step_maps(s, 2)


def derived_maps(integrator: str, eps: float, C: float = 1.0):
    """The same maps derived by hand, independently of the library (exact gradient, M = 1): the Euler scheme
    (momentum first) and the splitting A R K R A of the lesson."""
    a, s = 1 - eps * C, math.sqrt(2 * C * eps)
    if integrator == "euler":
        return np.array([[1 - eps ** 2, eps * a], [-eps, a]]), np.array([[eps * s], [s]])
    half = np.array([[1.0, eps / 2], [0.0, 1.0]])                 # A(h/2): theta += h/2 r
    relax = np.diag([1.0, math.exp(-C * eps / 2)])                # R(h/2): r *= e^{-C h/2}
    kick = np.array([[1.0, 0.0], [-eps, 1.0]])                    # K(h): r -= h theta + noise
    return half @ relax @ kick @ relax @ half, half @ relax @ np.array([[0.0], [s]])


def stationary_covariance(F, G) -> np.ndarray:
    """Sigma = F Sigma F^T + G G^T (a discrete Lyapunov equation): the exact stationary covariance."""
    return solve_discrete_lyapunov(F, G @ G.T)


def _slope(integrator: str, **noise) -> tuple[float, np.ndarray]:
    eps = np.array(EPS_LADDER)
    errs = np.array([np.linalg.norm(stationary_covariance(*library_maps(integrator, x, **noise)) - np.eye(2))
                     for x in eps])
    return float(np.polyfit(np.log(eps), np.log(errs), 1)[0]), errs


def integrator_order(quick: bool = False) -> CheckResult:
    """The bias of the stationary law against the step size, with no Monte Carlo at all: on a Gaussian target
    the library's SGHMC step is linear in the state and its draws, so its maps are read off the step and the
    stationary covariance solves a discrete Lyapunov equation. The log-log slope of ||Sigma_eps - I|| is 1 for
    Euler and 2 for the symmetric splitting (the BCH argument) with exact gradients, and also with gradient
    noise V = 4 when B^ = V; with B^ = 0 the splitting's slope drops to 1 (an O(eps V) bias)."""
    slopes, errs = {}, {}
    for label, integrator, noise in (("euler", "euler", {}), ("splitting", "splitting", {}),
                                     ("splitting, V = B̂ = 4", "splitting", dict(V=4.0, Bhat=4.0)),
                                     ("splitting, V = 4, B̂ = 0", "splitting", dict(V=4.0, Bhat=0.0))):
        slopes[label], errs[label] = _slope(integrator, **noise)
    predicted = {"euler": 1, "splitting": 2, "splitting, V = B̂ = 4": 2, "splitting, V = 4, B̂ = 0": 1}
    gap = max(abs(slopes[k] - v) for k, v in predicted.items())
    tol = 0.1   # the fit over a factor 8 in eps: the next order shifts the slopes by a few hundredths
    return result(gap, tol, gap < tol,
                  "slope of ‖Σ_ε − I‖ over ε = 0.1 … 0.0125, the library's own steps: "
                  + "; ".join(f"{k} {slopes[k]:.2f} (predicted {v})" for k, v in predicted.items())
                  + f"; at ε = 0.1 the errors are Euler {short(errs['euler'][0])}, splitting "
                  f"{short(errs['splitting'][0])} (tolerance ±{tol:g} on the slopes)")


def integrator_simulation(quick: bool = False) -> CheckResult:
    """One point of integrator_order by simulation: the library's SGHMC (Euler and integrator=splitting)
    at eps = 0.2, C = 1, exact gradients on the standard normal; E[r^2] against the Lyapunov value of the maps
    derived by hand (not read off the library, so that a wrong step cannot agree with itself)."""
    chains = 2000 if quick else 8000
    eps, worst, parts = 0.2, 0.0, []
    for name in ("euler", "splitting"):
        exact = stationary_covariance(*derived_maps(name, eps))
        s = build_sampler("sghmc", "gaussian", eps=eps, C=1.0, integrator=name)
        res = run(s, 400, chains, burn=100, seed=7, keep_aux=True)
        m, se = chain_mean_se(res.aux[:, :, 0] ** 2)
        z = abs(m - exact[1, 1]) / se
        worst = max(worst, z)
        parts.append(f"{name} {m:.4f} ± {se:.4f} vs {exact[1, 1]:.4f}")
    tol = 4.0
    return result(worst, tol, worst < tol,
                  "E[r²] at ε = 0.2: " + "; ".join(parts) + f" ({worst:.1f} s.e. at most, tolerance {tol:g})")


def _theta2_bias(integrator: str, eps: float, chains: int) -> tuple[float, float]:
    s = build_sampler("msgnht", "gaussian", eps=eps, A=1.0, integrator=integrator)
    res = run(s, int(round(60 / eps)), chains, burn=int(round(20 / eps)), thin=5, seed=4)
    m, se = chain_mean_se(res.theta[:, :, 0] ** 2)
    return m - 1.0, se


def msgnht_splitting(quick: bool = False) -> CheckResult:
    """The same order argument for mSGNHT, whose friction is its thermostat xi (the notes' splitting, corrected:
    errata E5): exact gradients on the standard normal, A = 1, E[theta^2] - 1 by simulation. Euler's bias must be of
    first order (it halves when eps halves: the ratio 2 within four standard errors), and the splitting's at
    eps = 0.2, even at four standard errors above its estimate, must be under half of Euler's there."""
    chains = 2000 if quick else 8000
    (b2, se2), (b1, se1) = _theta2_bias("euler", 0.2, chains), _theta2_bias("euler", 0.1, chains)
    bs, ses = _theta2_bias("splitting", 0.2, chains)
    ratio = b2 / b1
    se_ratio = abs(ratio) * math.hypot(se2 / b2, se1 / b1)
    first_order = abs(ratio - 2) < 4 * se_ratio
    bound = abs(bs) + 4 * ses
    ok = first_order and bound < abs(b2) / 2
    return result(bound, abs(b2) / 2, ok,
                  f"E[θ²] − 1: Euler {b2:+.3f} ± {se2:.3f} at ε = 0.2, {b1:+.3f} ± {se1:.3f} at ε = 0.1 (ratio "
                  f"{ratio:.2f} ± {se_ratio:.2f}, first order: 2); splitting {bs:+.3f} ± {ses:.3f} at ε = 0.2 (with "
                  f"4 s.e. {bound:.3f}, must stay under half of Euler's, {abs(b2) / 2:.3f})")
