"""Lesson 10, quasi-Newton HMC: the naive flow against the skew one, and the gain in ESS."""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import expm

from samplers import diagnostics as dg
from samplers.families import curvature
from samplers.registry import build_sampler
from samplers.run import Ensemble
from samplers.targets.presets import gaussian_nd

from .common import CheckResult, chain_mean_se, result, short


def _gaussian_kl(S, T) -> float:
    """KL(N(0, S) || N(0, T))."""
    d = S.shape[0]
    Ti = np.linalg.inv(T)
    return 0.5 * float(np.trace(Ti @ S) - d + np.linalg.slogdet(T)[1] - np.linalg.slogdet(S)[1])


def flow_generators(A, B, C) -> tuple[np.ndarray, np.ndarray]:
    """The generators L (z' = L z, z = (theta, p), M = I) of Eq. (4) and Eq. (7) on U = theta^T A theta / 2."""
    d = A.shape[0]
    Z, I = np.zeros((d, d)), np.eye(d)  # noqa: E741  (the identity, as in the paper)
    naive = np.block([[Z, I], [-B @ A, Z]])          # theta' = p, p' = -B A theta
    skew = np.block([[Z, C], [-C @ A, Z]])           # theta' = C p, p' = -C A theta
    return naive, skew


def qnhmc_flow(quick: bool = False) -> CheckResult:
    """The continuous flows of Eq. (4) and Eq. (7) on a correlated Gaussian (Sigma = 11^T + 4I, d = 10,
    B = C = Sigma, the inverse Hessian the updates converge to, M = I), started at the target. Both flows
    are linear, z_t = e^{tL} z_0, so everything is exact: the naive flow keeps volume (entropy
    change log det e^{tL} = t tr L = 0) yet drives the law away from exp(-H) (KL > 0); the skew flow
    keeps KL = 0."""
    d = 10
    Sigma = np.ones((d, d)) + 4 * np.eye(d)
    Ainv, A = Sigma, np.linalg.inv(Sigma)
    B = C = Ainv
    Z = np.zeros((d, d))
    naive, skew = flow_generators(A, B, C)
    target = np.block([[Sigma, Z], [Z, np.eye(d)]])
    ts = np.linspace(0.0, 3.0, 31)
    kl_naive, kl_skew, dent = [], [], []
    for t in ts:
        for L, acc in ((naive, kl_naive), (skew, kl_skew)):
            Phi = expm(t * L)
            acc.append(_gaussian_kl(Phi @ target @ Phi.T, target))
            dent.append(abs(np.linalg.slogdet(Phi)[1]))
    worst_skew, worst_ent = max(abs(k) for k in kl_skew), max(dent)
    peak = int(np.argmax(kl_naive))
    tol = 1e-8
    value = max(worst_skew, worst_ent)
    return result(value, tol, value < tol and kl_naive[peak] > 1.0,
                  f"d = 10, t ∈ [0, 3]: entropy change ≤ {short(worst_ent)} for both flows; "
                  f"KL(p_t ‖ e^(−H)) of Eq. (4) reaches {kl_naive[peak]:.2f} at t = {ts[peak]:.1f}, "
                  f"of Eq. (7) stays ≤ {short(worst_skew)} (tolerance {short(tol)})")


def qnhmc_ess(quick: bool = False, tuned_eps: float = 1.5) -> CheckResult:
    """Fu et al.'s comparison on a correlated Gaussian (d = 10, Sigma = 11^T + 4I), chains started at
    the target, B learnt from the pairs during a burn-in and then frozen (adapt): the ESS of theta projected
    on 1 (the long axis) per proposal for HMC and QNHMC at the paper's eps = 0.01, L = 10, where QNHMC must win
    at least 5x; HMC with a step tuned to its own stability limit (tuned_eps), which must close the gap (its ESS
    at least QNHMC's, by four standard errors); and the law of naive QNHMC (Eq. 4 without Metropolis). Standard
    errors of the ESS from its spread over four groups of chains."""
    d = 10
    Sigma = np.ones((d, d)) + 4 * np.eye(d)
    pot = gaussian_nd("gaussian-10d", Sigma, "10-d Gaussian with covariance 11ᵀ + 4I", "")
    chains, burn, steps = (100, 150, 300) if quick else (400, 300, 1000)
    var_1 = float(np.ones(d) @ Sigma @ np.ones(d) / d)           # Var(1^T theta / sqrt d) = 14
    out = {}
    for label, name, params in (("hmc", "hmc", dict(eps=0.01, L=10)),
                                ("qnhmc", "qnhmc", dict(eps=0.01, L=10, adapt=burn)),
                                ("naive", "qnhmc-naive", dict(eps=0.01, L=10, adapt=burn)),
                                ("hmc-tuned", "hmc", dict(eps=tuned_eps, L=10))):
        s = build_sampler(name, pot, **params)
        ens = Ensemble(s, chains, seed=9)
        ens.z[:, :d] = pot.exact_sampler(chains, np.random.default_rng(10))   # start at the target
        ens.advance(burn)
        proj = np.empty((steps, chains))
        for k in range(steps):
            ens.advance(1)
            proj[k] = ens.theta.sum(axis=1) / np.sqrt(d)
        m, se = chain_mean_se(proj ** 2)
        groups = [dg.ess(g) / g.size for g in np.array_split(proj, 4, axis=1)]
        out[label] = (dg.ess(proj) / proj.size, float(np.std(groups, ddof=1) / 2), m, se)
    ratio = out["qnhmc"][0] / out["hmc"][0]
    _, _, var_n, se_n = out["naive"]
    z_n = abs(var_n - var_1) / se_n
    (e_t, se_t), (e_q, se_q) = out["hmc-tuned"][:2], out["qnhmc"][:2]
    closes = e_t - e_q > 4 * math.hypot(se_t, se_q)
    tol = 5.0
    return result(ratio, tol, ratio >= tol and z_n > 10 and closes,
                  f"ESS per proposal along 1 at ε = 0.01, L = 10: QNHMC {short(e_q)} ± {short(se_q)}, HMC "
                  f"{short(out['hmc'][0])} (ratio {ratio:.0f}, needs ≥ {tol:g}); HMC at ε = {tuned_eps:g}: "
                  f"{short(e_t)} ± {short(se_t)} (must exceed QNHMC's by 4 s.e.: "
                  f"{'it does' if closes else 'it does not'}). "
                  f"Naive QNHMC: Var(1ᵀθ/√d) = {var_n:.2f} ± {se_n:.2f} vs {var_1:g}")


def qnhmc_lbfgs(quick: bool = False, d: int = 50, m: int = 7) -> CheckResult:
    """L-BFGS is BFGS without the matrix: m pairs (s, y) from a quadratic U = theta^T A theta / 2 (y = A s), pushed
    into the library's L-BFGS memory, give through its two-loop product C v exactly what m BFGS updates of the
    dense matrix (Eq. 1, the library's bfgs_update) give from the same start gamma I; and C y = s holds for the
    newest pair (the secant condition). The cost, counted: a product C v takes 4md + d multiplications against d^2
    for a dense B, and the memory 2md numbers against d^2 (the paper's d = 784, m = 7: 22 736 multiplications and
    10 976 numbers against 614 656)."""
    rng = np.random.default_rng(31)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = (Q * np.linspace(0.5, 5.0, d)) @ Q.T
    pairs = [(s, A @ s) for s in rng.standard_normal((m, d))]
    S, Y = np.zeros((1, m, d)), np.zeros((1, m, d))
    for s, y in pairs:
        S, Y = curvature.lbfgs_append(S, Y, s[None], y[None], np.array([True]))
    op = curvature.LBFGSOperator(S, Y)
    B = op.gamma[0] * np.eye(d)[None]
    for s, y in pairs:
        B = curvature.bfgs_update(B, s[None], y[None], np.array([True]))
    v = rng.standard_normal((3, d))
    lb = np.stack([op(v[k:k + 1])[0] for k in range(3)])
    dense = v @ B[0].T
    gap = float(np.abs(lb - dense).max() / np.abs(dense).max())
    s_new, y_new = pairs[-1]
    secant = float(np.abs(op(y_new[None])[0] - s_new).max() / np.abs(s_new).max())
    value, tol = max(gap, secant), 1e-10
    cost = lambda dd, mm: (4 * mm * dd + dd, dd * dd, 2 * mm * dd)   # noqa: E731
    lb_mul, dense_mul, memory = cost(784, 7)
    return result(value, tol, value < tol,
                  f"d = {d}, m = {m}: L-BFGS's two-loop 𝒞v against m dense BFGS updates, relative gap {short(gap)}; "
                  f"secant 𝒞y = s off by {short(secant)} (tolerance {short(tol)}). Per product at d = 784, m = 7: "
                  f"{lb_mul:,} multiplications against {dense_mul:,}; memory {memory:,} numbers against {dense_mul:,}")
