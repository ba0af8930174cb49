"""Lesson 05, SGHMC: the friction term, and SGLD as its high-friction limit."""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import expm, solve_discrete_lyapunov

from samplers.engine.stationarity import stationarity_residual
from samplers.registry import build_sampler
from samplers.run import Ensemble, run

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


def _theta_autocorrelation(C: float, eps: float, chains: int, seed: int) -> tuple[float, float]:
    """The library's SGHMC on U = theta^2/2 (exact gradients), chains started at the target: the autocorrelation
    of theta at the lag t = C (SGLD's time u = 1), from the products theta_k theta_(k+lag) over a window of
    lags, as a ratio of means over chains, and its standard error between chains (delta method)."""
    lag, window, every = int(round(C / eps)), int(round(1.0 / eps)), max(1, int(round(0.1 / eps)))
    s = build_sampler("sghmc", "gaussian", eps=eps, C=C)
    ens = Ensemble(s, chains, seed=seed)
    ens.z[:] = ens.rng.standard_normal(ens.z.shape)           # (theta, r) ~ N(0, I), the target
    kept = [ens.z[:, 0].copy()]
    for _ in range((lag + window) // every):
        ens.advance(every)
        kept.append(ens.z[:, 0].copy())
    kept = np.array(kept)                                      # (snapshots, chains)
    shift = lag // every
    prod = (kept[:-shift] * kept[shift:]).mean(axis=0)
    var = (kept ** 2).mean(axis=0)
    rho = prod.mean() / var.mean()
    se = (prod - rho * var).std(ddof=1) / np.sqrt(chains) / var.mean()
    return float(rho), float(se)


def _euler_autocorrelation(C: float, eps: float) -> float:
    """The same autocorrelation, exactly, for the Euler scheme (momentum first) derived by hand."""
    a, s = 1 - eps * C, math.sqrt(2 * C * eps)
    F = np.array([[1 - eps ** 2, eps * a], [-eps, a]])
    G = np.array([[eps * s], [s]])
    sigma = solve_discrete_lyapunov(F, G @ G.T)
    return float((np.linalg.matrix_power(F, int(round(C / eps))) @ sigma)[0, 0] / sigma[0, 0])


def sghmc_friction_limit(quick: bool = False, eps: float = 0.01) -> CheckResult:
    """SGLD as SGHMC's high-friction limit, run: the library's SGHMC on U = theta^2/2 at friction C = 1 and
    C = 10; the autocorrelation of theta at the lag t = C (one unit of SGLD's time u = t / C) against SGLD's
    e^-1. At C = 10 it must be e^-1 within its standard error plus the gap the SDE itself still has at that
    friction (exp(-A C)_11 - e^-1, exact); at C = 1 it must be far from e^-1. Each measurement must also match
    the exact value of the Euler scheme (derived by hand) within four standard errors."""
    chains = 10000 if quick else 40000
    target = math.exp(-1)
    rows, ok = [], True
    measured = {}
    for C in (1.0, 10.0):
        rho, se = _theta_autocorrelation(C, eps, chains, seed=21)
        A = np.array([[0.0, -1.0], [1.0, C]])                 # dz = -A z dt + noise, z = (theta, r)
        rho_sde = float(expm(-A * C)[0, 0])
        rho_euler = _euler_autocorrelation(C, eps)
        ok &= abs(rho - rho_euler) < 4 * se
        measured[C] = (rho, se, rho_sde)
        rows.append(f"C = {C:g}: ρ(u=1) = {rho:.3f} ± {se:.3f} (Euler scheme {rho_euler:.3f}, SDE {rho_sde:.3f})")
    rho10, se10, sde10 = measured[10.0]
    rho1, se1, _ = measured[1.0]
    tol = 4 * se10 + abs(sde10 - target)
    gap = abs(rho10 - target)
    ok &= gap < tol and abs(rho1 - target) > 10 * se1
    return result(gap, tol, ok,
                  "; ".join(rows) + f" — SGLD: e⁻¹ = {target:.3f}; at C = 10 off by {gap:.3f} "
                  f"(tolerance {tol:.3f}: 4 s.e. plus the SDE's own gap at C = 10)")
