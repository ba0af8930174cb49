"""Lesson 11, SCIR: the exact CIR transition's moments and its lack of boundary bias, against SGRLD."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from samplers.families import simplex
from samplers.registry import build_sampler
from samplers.run import Ensemble, run
from samplers.targets.presets import get_potential

from .common import CheckResult, chain_mean_se, result

SPARSE_BATCH = 10   # the minibatch size n of the SCIR paper's sparse experiment (§1.3)


def scir_moment_formula(theta0, a, var_a, h, M):
    """Corollary 3.2: E and Var of SCIR after M steps of size h from theta0."""
    e1, e2 = math.exp(-M * h), math.exp(-2 * M * h)
    mean = theta0 * e1 + a * (1 - e1)
    var_cir = 2 * theta0 * (e1 - e2) + a * (1 - e1) ** 2
    return mean, var_cir + (1 - e2) * (1 - math.exp(-h)) / (1 + math.exp(-h)) * var_a


def scir_moments(quick: bool = False) -> CheckResult:
    """Theorem 3.1 / Corollary 3.2 on the sparse Dirichlet's gamma coordinates (minibatch n = 10 of
    N = 1000, drawn with replacement): after M = 20 steps of h = 0.05 from theta0 = 1, the mean and
    variance of the library's SCIR against the formula; the variance is the exact CIR's plus the
    minibatch term."""
    chains = 20000 if quick else 200000
    h, M, theta0 = 0.05, 20, 1.0
    s = build_sampler("scir", "sparse-dirichlet", batch=SPARSE_BATCH, h=h)
    ens = Ensemble(s, chains, seed=12)
    ens.z[:] = theta0
    theta = ens.advance(M)
    a, data = s.potential.shape, s.potential.data
    p = data.counts / data.n
    var_a = data.n ** 2 / SPARSE_BATCH * p * (1 - p)     # Var(a-hat): (N/n)^2 n p (1 - p)
    worst, parts = 0.0, []
    for j in (0, 1, 4):
        x = theta[:, j]
        mean, var = scir_moment_formula(theta0, a[j], var_a[j], h, M)
        m_hat, v_hat = x.mean(), x.var(ddof=1)
        se_m = math.sqrt(v_hat / chains)
        se_v = math.sqrt(max(((x - m_hat) ** 4).mean() - v_hat ** 2, 0.0) / chains)
        _, var_cir = scir_moment_formula(theta0, a[j], 0.0, h, M)
        worst = max(worst, abs(m_hat - mean) / se_m, abs(v_hat - var) / se_v)
        parts.append(f"a = {a[j]:g}: mean {m_hat:.4g} vs {mean:.4g}, var {v_hat:.4g} vs {var:.4g} "
                     f"(CIR alone {var_cir:.4g})")
    tol = 4.0
    return result(worst, tol, worst < tol, "; ".join(parts) + f" — largest gap {worst:.1f} s.e. (tolerance {tol:g})")


def scir_sparse_quantiles(quick: bool = False) -> CheckResult:
    """The SCIR paper's Fig. 1: log10-quantiles of a sparse component omega_5 of the sparse Dirichlet
    posterior (counts 800/100/100/0..., alpha = 0.1, minibatch 10): exact draws, SCIR with h = 0.05
    and SGRLD on the simplex with the same step of the diffusion (eps = 2h = 0.1)."""
    chains, burn, steps = (1000, 200, 200) if quick else (4000, 1000, 1000)
    h = 0.05
    pot = get_potential("sparse-dirichlet")
    exact = np.log10(pot.exact_sampler(200000, np.random.default_rng(13))[:, 4])
    runs = {}
    for label, name, params in (("SCIR", "scir", dict(h=h)), ("SGRLD", "sgrld-simplex", dict(eps=2 * h))):
        res = run(build_sampler(name, pot, batch=SPARSE_BATCH, **params), steps, chains, burn=burn, thin=10, seed=13)
        runs[label] = np.log10(res.theta[:, :, 4].ravel())
    qs = [10, 50, 90]
    q_exact, q_scir, q_sgrld = (np.percentile(x, qs) for x in (exact, runs["SCIR"], runs["SGRLD"]))
    gap = float(np.abs(q_scir - q_exact).max())
    tol = 0.5   # decades; the sampling error of these quantiles is ~0.1 decade
    fmt = lambda q: " / ".join(f"{v:.1f}" for v in q)   # noqa: E731
    return result(gap, tol, gap < tol and q_sgrld[0] - q_exact[0] > 5,
                  f"log₁₀ ω₅ at the 10 / 50 / 90 % quantiles: exact {fmt(q_exact)}, SCIR {fmt(q_scir)}, "
                  f"SGRLD {fmt(q_sgrld)} (SCIR within {gap:.2f} decades, tolerance {tol:g})")


def _time_average(name: str, a: float, chains: int, steps: int, seed: int, burn: int = 0,
                  **params) -> tuple[float, float]:
    """The mean of theta over `steps` steps, after `burn` steps, of a sampler on Gamma(a, 1), chains started at
    that law, and its standard error between chains."""
    s = build_sampler(name, f"gamma:{a:g}", **params)
    ens = Ensemble(s, chains, seed=seed)
    ens.z[:] = s.potential.exact_sampler(chains, ens.rng)
    if burn:
        ens.advance(burn)
    total = np.zeros(chains)
    for _ in range(steps):
        total += ens.advance(1)[:, 0]
    return chain_mean_se(total[None] / steps)


def sgrld_boundary_bias(quick: bool = False, hs: tuple = (0.04, 0.01)) -> CheckResult:
    """Proposition 1.1's bias at the boundary, on Gamma(a, 1) with a = 0.1 (a sparse coordinate): the long-run
    mean of the library's sgrld-simplex (a reflected Euler step of size h = eps/2), measured after 4 time units
    of burn-in (the mean relaxes at rate about 1) over the next 4, is far above a, and its bias shrinks more
    slowly than h: when h falls 4x the bias falls by less than 4x (the ratio must exceed 1/4 by four standard
    errors). SCIR's long-run mean equals a at any h. (Without reflection the Euler mean would be exactly a: the
    drift a - theta is linear; all of the mean's bias comes from the boundary.)"""
    chains = 20000 if quick else 100000
    a, burn, horizon = 0.1, 4.0, 4.0
    h_big, h_small = hs
    euler = {h: _time_average("sgrld-simplex", a, chains, int(round(horizon / h)), seed=14,
                              burn=int(round(burn / h)), eps=2 * h) for h in hs}
    m_s, se_s = _time_average("scir", a, chains, int(round(horizon / h_big)), seed=14,
                              burn=int(round(burn / h_big)), h=h_big)
    z_s = abs(m_s - a) / se_s
    z_e = min((m - a) / se for m, se in euler.values())
    (m_b, se_b), (m_f, se_f) = euler[h_big], euler[h_small]
    ratio = (m_f - a) / (m_b - a)
    se_ratio = abs(ratio) * math.hypot(se_f / (m_f - a), se_b / (m_b - a))
    linear = h_small / h_big
    tol = 4.0
    ok = z_s < tol and z_e > 20 and ratio > linear + tol * se_ratio
    return result(z_s, tol, ok,
                  f"long-run E[θ] for Gamma(0.1, 1): reflected Euler {m_b:.3f} at h = {h_big:g}, {m_f:.3f} at "
                  f"h = {h_small:g}; its bias fell to {ratio:.2f} ± {se_ratio:.2f} of itself while h fell to "
                  f"{linear:.2f} (more slowly than h); SCIR at h = {h_big:g}: {m_s:.4f} ± {se_s:.4f}, {z_s:.1f} s.e. "
                  f"from a = 0.1 (tolerance {tol:g})")


def sgrhmc_simplex_boundary(quick: bool = False) -> CheckResult:
    """The recipe paper's gSGRHMC in the expanded mean (G = diag(theta)^-1, its Gamma restored; the splitting
    integrator) and its naive form (Gamma dropped) on one sparse coordinate, Gamma(0.1, 1): chains started at the
    target, 1000 steps of eps = 0.1 (100 time units), then the KS distance of theta to Gamma(0.1) against its
    critical value (level 0.001). The corrected sampler stays; the naive one collapses towards 0."""
    chains = 2000 if quick else 10000
    a = 0.1
    law = stats.gamma(a)
    ks, median = {}, {}
    for name in ("sgrhmc-simplex", "sgrhmc-simplex-naive"):
        s = build_sampler(name, f"gamma:{a:g}", eps=0.1, integrator="splitting")
        ens = Ensemble(s, chains, seed=9)
        ens.z[:, 0] = np.random.default_rng(5).gamma(a, size=chains)
        ens.advance(1000)
        theta = ens.z[:, 0]
        ks[name] = stats.kstest(theta, law.cdf).statistic
        median[name] = np.median(theta) / law.median()
    critical = stats.kstwobign.isf(1e-3) / math.sqrt(chains)
    good, naive = ks["sgrhmc-simplex"], ks["sgrhmc-simplex-naive"]
    return result(good, critical, good < critical and naive > 2 * critical,
                  f"KS to Gamma(0.1) after 100 time units: gSGRHMC {good:.3f}, naive {naive:.3f} (critical "
                  f"{critical:.3f}); median over the exact median: gSGRHMC {median['sgrhmc-simplex']:.2f}, naive "
                  f"{median['sgrhmc-simplex-naive']:.2f}")


def scir_mgf_formula(s: float, theta0: float, a: float, a_hats, h: float) -> float:
    """Theorem 3.1: the MGF of SCIR after M steps with shape estimates a_hats (the first step's first), from theta0.
    The exact CIR's MGF over time M h times one factor per step; the factor of the step taken j steps before the
    end is [(1 - s(1 - e^{-jh})) / (1 - s(1 - e^{-(j-1)h}))]^{-(a_hat - a)}."""
    M = len(a_hats)
    w = lambda j: 1 - s * (1 - math.exp(-j * h))   # noqa: E731
    exact = w(M) ** (-a) * math.exp(theta0 * s * math.exp(-M * h) / w(M))
    factor = math.prod((w(j) / w(j - 1)) ** (-(a_hat - a)) for j, a_hat in zip(range(M, 0, -1), a_hats))
    return exact * factor


def scir_mgf(quick: bool = False) -> CheckResult:
    """Theorem 3.1 itself: SCIR from theta0 = 1 with a fixed sequence of minibatch estimates a_hat_m around a = 0.5
    (h = 0.1, M = 10 steps of the library's CIR transition): the empirical MGF E[exp(s theta_M)] at s = -1, -0.3, 0.3
    against the theorem, within four standard errors at each s; and against the exact CIR's MGF alone (the
    estimates' noise dropped), which must miss by more than ten at some s."""
    chains = 100_000 if quick else 1_000_000
    a, h, theta0 = 0.5, 0.1, 1.0
    a_hats = [a * (1 + 0.8 * math.sin(3.0 * m)) for m in range(1, 11)]
    rng = np.random.default_rng(17)
    theta = np.full(chains, theta0)
    for a_hat in a_hats:
        theta = simplex.cir_transition(theta, a_hat, h, rng)
    worst, missed, parts = 0.0, 0.0, []
    for s in (-1.0, -0.3, 0.3):
        e = np.exp(s * theta)
        m, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(chains))
        pred = scir_mgf_formula(s, theta0, a, a_hats, h)
        cir_only = scir_mgf_formula(s, theta0, a, [a] * len(a_hats), h)
        worst = max(worst, abs(m - pred) / se)
        missed = max(missed, abs(m - cir_only) / se)
        parts.append(f"s = {s:g}: {m:.4f} ± {se:.4f} vs {pred:.4f} (CIR alone {cir_only:.4f})")
    tol = 4.0
    return result(worst, tol, worst < tol and missed > 10,
                  "E[exp(sθ_M)]: " + "; ".join(parts) + f" — largest gap {worst:.1f} s.e. (tolerance {tol:g}); "
                  f"the CIR's MGF alone misses by up to {missed:.0f} s.e.")


def scir_ks_batch(quick: bool = False) -> CheckResult:
    """The SCIR paper's Fig. 2 at two of its minibatch sizes, n = 1 and n = 100 (sparse Dirichlet, h = 0.1, SGRLD
    with the same diffusion step eps = 2h; 10 time units from the sampler's start, one state per chain so that the
    samples are independent): the two-sample KS distance to exact draws, for the dense component omega_1 (800
    counts), where the minibatch noise lives, and for a sparse one, omega_5. SCIR's distance on omega_1 must fall
    from n = 1 to n = 100, and on omega_5 be below SGRLD's at both sizes, each by more than the KS critical value
    at level 0.001 for these sample sizes."""
    chains = 3000 if quick else 12000
    pot = get_potential("sparse-dirichlet")
    exact = pot.exact_sampler(100_000, np.random.default_rng(13))
    ks = {}
    for label, name, params in (("SCIR", "scir", dict(h=0.1)), ("SGRLD", "sgrld-simplex", dict(eps=0.2))):
        for n in (1, 100):
            ens = Ensemble(build_sampler(name, pot, batch=n, **params), chains, seed=13)
            ens.advance(100)
            theta = ens.theta                                  # omega, on the simplex
            ks[label, n] = {j: stats.ks_2samp(theta[:, j], exact[:, j]).statistic for j in (0, 4)}
    critical = stats.kstwobign.isf(1e-3) * math.sqrt((chains + len(exact)) / (chains * len(exact)))
    falls = ks["SCIR", 1][0] - ks["SCIR", 100][0]
    below = min(ks["SGRLD", n][4] - ks["SCIR", n][4] for n in (1, 100))
    value = min(falls, below)
    return result(value, critical, value > critical,
                  f"KS to exact draws, ω₁ (dense): SCIR {ks['SCIR', 1][0]:.3f} at n = 1, {ks['SCIR', 100][0]:.3f} at "
                  f"n = 100 (SGRLD {ks['SGRLD', 1][0]:.3f}, {ks['SGRLD', 100][0]:.3f}); ω₅ (sparse): SCIR "
                  f"{ks['SCIR', 1][4]:.3f}, {ks['SCIR', 100][4]:.3f}, SGRLD {ks['SGRLD', 1][4]:.3f}, "
                  f"{ks['SGRLD', 100][4]:.3f} (each gap must exceed the critical value {critical:.3f})")
