"""Lesson 05, SGHMC: the friction term, and SGLD as its high-friction limit."""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import expm

from samplers.engine.stationarity import stationarity_residual
from samplers.registry import build_sampler
from samplers.run import run

from .common import CheckResult, chain_mean_se, result, short

EXACT_E_THETA2_DOUBLE_WELL = 0.8327454871   # quadrature of theta^2 exp(-(theta^4 - 2 theta^2))


def sghmc_friction(quick: bool = False) -> CheckResult:
    """Chen et al.'s setting (double well, V = 4, eps = 0.1, C = 3, momentum resampled every 50
    steps): E[theta^2] of naive SGHMC (friction dropped) against SGHMC and the exact value, and the
    Fokker-Planck residual of both."""
    chains, steps = (1000, 1500) if quick else (4000, 3000)
    exact = EXACT_E_THETA2_DOUBLE_WELL
    stats = {}
    for name, params in (("sghmc-naive", dict(eps=0.1, resample_every=50)),
                         ("sghmc", dict(eps=0.1, C=3.0, resample_every=50))):
        s = build_sampler(name, "double-well", V=4.0, **params)
        res = run(s, steps, chains, burn=500, seed=5)
        stats[name] = chain_mean_se(res.theta[:, :, 0] ** 2) + (
            stationarity_residual(s.recipe, s.potential, n_grid=101).relative,)
    m_c, se_c, r_c = stats["sghmc"]
    m_n, se_n, r_n = stats["sghmc-naive"]
    z_c = abs(m_c - exact) / se_c
    z_n = (m_n - exact) / se_n
    tol = 4.0
    return result(z_c, tol, z_c < tol and z_n > 10,
                  f"E[θ²] exact {exact:.4f}; SGHMC {m_c:.4f} ± {se_c:.4f} ({z_c:.1f} s.e., tolerance {tol:g}); "
                  f"naive {m_n:.4f} ± {se_n:.4f} ({z_n:.0f} s.e. off). Residual: SGHMC {short(r_c)}, "
                  f"naive {short(r_n)}")


def sghmc_friction_limit(quick: bool = False) -> CheckResult:
    """SGLD as SGHMC's high-friction limit, exactly for U = theta^2/2 (unit mass): the integrated
    autocorrelation time of theta under SGHMC's SDE is A^-1 Sigma = C, under Langevin's 1, so in the
    time u = t / C SGHMC's theta moves like SGLD's at every C; for large C the whole path does."""
    worst = 0.0
    rows = []
    for C in (1.0, 10.0, 100.0):
        A = np.array([[0.0, -1.0], [1.0, C]])          # dz = -A z dt + noise, z = (theta, r)
        tau = np.linalg.solve(A, np.eye(2))[0, 0]       # int_0^inf e^{-At} dt Sigma, Sigma = I
        # autocorrelation of theta at the Langevin-time lag u = 1 (t = C u) against SGLD's e^{-u}
        rho = expm(-A * C)[0, 0]
        worst = max(worst, abs(tau / C - 1))
        rows.append(f"C = {C:g}: τ/C = {tau / C:.3f}, ρ(u=1) = {rho:.3f}")
    tol = 1e-12
    return result(worst, tol, worst < tol,
                  "; ".join(rows) + f" (SGLD: τ = 1, ρ(u=1) = e⁻¹ = {math.exp(-1):.3f})")
