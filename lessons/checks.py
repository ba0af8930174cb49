"""The numerical checks the lessons show: one function per check, named in a lesson's front matter.

Every check is `NAME(quick: bool = False) -> dict` with

    value      the number the page shows (float)
    tolerance  what it is held to (float); `passed` says which way
    passed     bool
    text       one line for the page, e.g. "residual 3e-9 (tolerance 1e-6)"

and, for a check that cannot run yet because a sampler it needs is not registered, an extra key
`skipped` with the reason (then `passed` is False and `value` is NaN). All checks use fixed
seeds and are vectorised over chains; their Monte Carlo tolerances come from the run itself
(standard errors between independent chains, or the KL noise floor of `samplers.accuracy`).
`quick=True` keeps each check to about a second or two (the app runs them on page load);
`quick=False` uses more chains for a sharper number.

`CHECKS` maps names to functions; `cached(name, quick)` memoises a result per process.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["CHECKS", "cached"]


# -- helpers ------------------------------------------------------------------------------------
def _result(value, tolerance, passed, text, **extra) -> dict:
    out = {"value": float(value), "tolerance": float(tolerance), "passed": bool(passed), "text": text}
    out.update(extra)
    return out


def _skip(reason: str) -> dict:
    return {"value": float("nan"), "tolerance": float("nan"), "passed": False, "skipped": reason,
            "text": f"not run: {reason}"}


def _g(x, digits: int = 2) -> str:
    """A short number for a page: 3e-09, 0.0123, 1.05."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e")
    return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{digits + 1}g}"


def _sampler(name, potential, V=None, batch=None, **params):
    from samplers.gradients import make_oracle
    from samplers.targets.presets import get_potential
    from samplers.registry import Sampler
    pot = get_potential(potential) if isinstance(potential, str) else potential
    return Sampler(name, pot, make_oracle(pot, V, batch), **params)


def _missing(*names) -> list[str]:
    from samplers.registry import sampler_names
    have = set(sampler_names())
    return [n for n in names if n not in have]


def _chain_mean_se(x):
    """Mean of x (steps, chains) and its standard error from the spread of the chains' own means.

    Chains are independent, so this accounts for the autocorrelation within each chain."""
    per_chain = np.asarray(x, float).mean(axis=0)
    return float(per_chain.mean()), float(per_chain.std(ddof=1) / np.sqrt(per_chain.size))


# -- 01 From dynamics to distributions ------------------------------------------------------------
def fokker_planck_residual(quick: bool = False) -> dict:
    """Langevin (z = theta) and SGHMC (z = (theta, r)) leave exp(-H) invariant: the Fokker-Planck
    right-hand side, evaluated at p = exp(-H), vanishes up to round-off (samplers.stationarity)."""
    from samplers.engine.stationarity import stationarity_residual
    n_grid = 101 if quick else 201
    out = {}
    for name in ("sgld", "sghmc"):
        s = _sampler(name, "double-well")
        out[name] = stationarity_residual(s.recipe, s.potential, n_grid=n_grid).relative
    value, tol = max(out.values()), 1e-6
    return _result(value, tol, value < tol,
                   f"relative Fokker–Planck residual at exp(−H) on the double well: Langevin {_g(out['sgld'])}, "
                   f"SGHMC (θ, r) {_g(out['sghmc'])} (tolerance {_g(tol)})")


def ensemble_kl(quick: bool = False) -> dict:
    """An ensemble of Langevin chains (SGLD with exact gradients, eps = 0.003, small enough that the
    discretisation bias is invisible at this sample size) started in a blob around theta = -1.5
    forgets it: the KL divergence of its histogram from exp(-U) falls to the Monte Carlo floor, what
    an exact sample of that size scores."""
    from samplers.accuracy import kl_noise_floor, score
    from samplers.run import Ensemble
    chains = 1000 if quick else 4000
    eps = 0.003
    s = _sampler("sgld", "double-well", eps=eps)
    ens = Ensemble(s, chains, seed=1, theta0=[-1.5])
    pot = s.potential
    kl0 = score(pot, ens.theta[None])["kl"]
    ens.advance(int(round(1 / eps)))                     # t = 1
    kl1 = score(pot, ens.theta[None])["kl"]
    # the wells exchange mass at a rate of about 0.7 per unit time (Kramers), so by t = 10 the
    # initial imbalance has decayed to ~1e-3
    ens.advance(int(round(9 / eps)))
    kept = np.empty((200, chains, 1))
    every = int(round(0.02 / eps))
    for k in range(200):                                 # t in (10, 14]
        ens.advance(every)
        kept[k] = ens.theta
    kl = score(pot, kept)["kl"]
    floor = kl_noise_floor(pot, kept)
    tol = 2.5 * floor   # the KL of an exact sample scatters around the floor by about 20 %
    return _result(kl, tol, kl < tol and kl0 > 10 * tol,
                   f"KL(histogram ‖ e^(−U)) = {_g(kl0)} at t = 0, {_g(kl1)} at t = 1, {_g(kl, 2)} for t ∈ (10, 14] "
                   f"(Monte Carlo floor {_g(floor)}, tolerance {_g(tol)})")


# -- 02 The recipe -------------------------------------------------------------------------------
LESSON2_D = [["1 + theta_1^2/2", "0"], ["0", "1"]]
LESSON2_Q = [["0", "theta_1*theta_2/2"], ["-theta_1*theta_2/2", "0"]]


def recipe_residual(quick: bool = False) -> dict:
    """Any PSD D and skew Q with Gamma leave exp(-H) invariant; without Gamma a state-dependent
    D(z), Q(z) does not. Here on the banana with D = diag(1 + theta_1^2/2, 1), Q_12 = theta_1 theta_2/2."""
    from samplers.engine.edit import edited_recipe
    from samplers.engine.stationarity import stationarity_residual
    s = _sampler("sgld", "banana")
    recipe = edited_recipe(s.recipe, LESSON2_D, LESSON2_Q)
    n_grid = 101 if quick else 201
    with_gamma = stationarity_residual(recipe, s.potential, n_grid=n_grid).relative
    without = stationarity_residual(recipe.with_drop({"gamma"}), s.potential, n_grid=n_grid).relative
    tol = 1e-6
    return _result(with_gamma, tol, with_gamma < tol and without > 1e3 * tol,
                   f"residual with Γ {_g(with_gamma)} (tolerance {_g(tol)}); Γ dropped: {_g(without)}")


# -- 03 Completeness -----------------------------------------------------------------------------
def _completeness_problem():
    """A sampler given only as (f, D, p_s): U = z1^4/4 + z2^2/2 + z1 z2/2, D = diag(1, (1 + z1^2)/2),
    f built from a hidden Q_12 = omega(z) = 1 + sin(z1) cos(z2)/2 by the recipe."""
    def grad_u(z1, z2):
        return z1 ** 3 + z2 / 2, z2 + z1 / 2

    def u(z1, z2):
        return z1 ** 4 / 4 + z2 ** 2 / 2 + z1 * z2 / 2

    def omega(z1, z2):
        return 1 + np.sin(z1) * np.cos(z2) / 2

    def d_entries(z1, z2):            # D11, D12, D22
        return np.ones_like(z1), np.zeros_like(z1), (1 + z1 ** 2) / 2

    def drift(z1, z2):
        # f = -(D + Q) grad U + Gamma, Q = [[0, omega], [-omega, 0]]
        u1, u2 = grad_u(z1, z2)
        d11, d12, d22 = d_entries(z1, z2)
        w = omega(z1, z2)
        dw1 = np.cos(z1) * np.cos(z2) / 2              # d omega / d z1
        dw2 = -np.sin(z1) * np.sin(z2) / 2             # d omega / d z2
        g1 = 0.0 + 0.0 + dw2                           # d1 D11 + d2 D12 + d2 Q12
        g2 = 0.0 + 0.0 - dw1                           # d1 D21 + d2 D22 + d1 Q21 (D22 depends on z1 only)
        f1 = -(d11 * u1 + (d12 + w) * u2) + g1
        f2 = -((d12 - w) * u1 + d22 * u2) + g2
        return f1, f2

    return u, grad_u, omega, d_entries, drift


def _cumulative_trapezoid(y, x, axis):
    from scipy.integrate import cumulative_trapezoid
    return cumulative_trapezoid(y, x, axis=axis, initial=0.0)


def _rebuild_q(n: int) -> dict:
    """The 2-D construction on an n x n grid; relative errors where p > 10^-3 max p."""
    u, grad_u, omega, d_entries, drift = _completeness_problem()
    x1 = np.linspace(-3.5, 3.5, n)
    x2 = np.linspace(-6.0, 6.0, n)
    z1, z2 = np.meshgrid(x1, x2, indexing="ij")
    p = np.exp(-(u(z1, z2) - u(z1, z2).min()))
    u1, u2 = grad_u(z1, z2)
    f1, f2 = drift(z1, z2)
    d11, d12, d22 = d_entries(z1, z2)
    h = 1e-5   # D is used as a black box: its derivatives by central differences
    dd11_1 = (d_entries(z1 + h, z2)[0] - d_entries(z1 - h, z2)[0]) / (2 * h)
    dd12_1 = (d_entries(z1 + h, z2)[1] - d_entries(z1 - h, z2)[1]) / (2 * h)
    dd12_2 = (d_entries(z1, z2 + h)[1] - d_entries(z1, z2 - h)[1]) / (2 * h)
    dd22_2 = (d_entries(z1, z2 + h)[2] - d_entries(z1, z2 - h)[2]) / (2 * h)
    # the probability current J_i = f_i p - sum_j d_j (D_ij p), with d_j p = -p d_j U
    j1 = p * (f1 - dd11_1 + d11 * u1 - dd12_2 + d12 * u2)
    j2 = p * (f2 - dd12_1 + d12 * u1 - dd22_2 + d22 * u2)
    with np.errstate(all="ignore"):
        q12 = _cumulative_trapezoid(j1, x2, axis=1) / p          # along z2, from the box's lower edge
        q21 = _cumulative_trapezoid(j2, x1, axis=0) / p          # along z1, from the box's lower edge
    core = p > 1e-3                                              # where 1/p does not amplify the grid error
    scale = np.abs(omega(z1, z2)[core]).max()
    q = 0.5 * (q12 - q21)
    # the drift of the rebuilt recipe, Gamma_Q by differences on the grid
    dq_2 = np.gradient(q, x2, axis=1)
    dq_1 = np.gradient(q, x1, axis=0)
    fscale = np.hypot(f1, f2)[core].max()

    def drift_error(sign):
        r1 = -(d11 * u1 + (d12 + sign * q) * u2) + dd11_1 + dd12_2 + sign * dq_2
        r2 = -((d12 - sign * q) * u1 + d22 * u2) + dd12_1 + dd22_2 - sign * dq_1
        return float(np.hypot(r1 - f1, r2 - f2)[core].max() / fscale)

    return dict(skew=float(np.abs(q12 + q21)[core].max() / scale),
                recover=float(np.abs(q12 - omega(z1, z2))[core].max() / scale),
                drift=drift_error(1.0), flipped=drift_error(-1.0))


def completeness_q(quick: bool = False) -> dict:
    """Theorem 2, made concrete in 2-D (recipe paper, Supplement C, S.11): from the drift f, the
    diffusion D and the stationary density p alone, rebuild Q by integrating the probability
    current J = f p - div(D p) along one coordinate, Q_12 = p^-1 int^{z2} J_1 ds and
    Q_21 = p^-1 int^{z1} J_2 ds. Check that the two independent integrals are skew (Q_21 = -Q_12),
    that they recover the hidden Q, and that -(D + Q) grad U + Gamma reproduces f; and that what is
    left is grid error (it falls 4x when the grid spacing halves)."""
    n = 401 if quick else 801
    coarse, fine = _rebuild_q((n + 1) // 2), _rebuild_q(n)
    keys = ("skew", "recover", "drift")
    value = max(fine[k] for k in keys)
    ratio = min(coarse[k] / fine[k] for k in keys)
    tol = 5e-3 if quick else 1.5e-3
    return _result(value, tol, value < tol and ratio > 2.5,
                   f"{n}×{n} grid, where p > 10⁻³ max p: ‖Q₁₂ + Q₂₁‖ = {_g(fine['skew'])}, "
                   f"‖Q − Q_true‖ = {_g(fine['recover'])}, drift rebuilt to {_g(fine['drift'])} (relative; "
                   f"tolerance {_g(tol)}; each falls ≥ {ratio:.1f}× when the spacing halves: O(h²) grid error, which "
                   f"falls about 4×); with Q's sign flipped the drift is off by {fine['flipped']:.2f}")


# -- 04 Stochastic gradients ----------------------------------------------------------------------
def sgld_variance_exact(eps: float, V: float, bhat: float) -> float:
    """Stationary variance of SGLD on U = theta^2/2 with gradient noise N(0, V) and correction B^:

    theta' = (1 - eps) theta - eps xi_V + N(0, eps (2 - eps B^)), so
    Var = (2 eps + eps^2 (V - B^)) / (1 - (1 - eps)^2) = (2 + eps (V - B^)) / (2 - eps)."""
    return (2 + eps * (V - bhat)) / (2 - eps)


def sgld_noise_bias(quick: bool = False) -> dict:
    """Eq. (9) on the standard normal with simulated gradient noise V = 4: the stationary variance of
    SGLD measured over an ensemble against the exact (2 + eps (V - B^)) / (2 - eps), with and
    without the B^ correction, at two step sizes."""
    from samplers.run import run
    chains = 4000 if quick else 20000
    V = 4.0
    worst, parts = 0.0, []
    for eps in (0.1, 0.05):
        for bhat in (0.0, V):
            s = _sampler("sgld", "gaussian", V=V, eps=eps, Bhat=bhat)
            steps = int(round(20 / eps))
            res = run(s, steps, chains, burn=int(round(8 / eps)), seed=4)
            m, se = _chain_mean_se(res.theta[:, :, 0] ** 2)
            exact = sgld_variance_exact(eps, V, bhat)
            z = abs(m - exact) / se
            worst = max(worst, z)
            parts.append(f"ε={eps:g}, B̂={bhat:g}: {m:.3f} vs {exact:.3f}")
    tol = 4.0
    return _result(worst, tol, worst < tol,
                   "Var θ measured vs exact: " + "; ".join(parts) + f" (largest gap {worst:.1f} standard errors, "
                   f"tolerance {tol:g})")


@lru_cache(maxsize=1)
def logistic_posterior():
    """The `logistic` preset's posterior -- the same data set (samplers.data_posterior, same size and
    seed as the preset's defaults), the same U, gradient and box -- normalised on a 201 x 201 grid.

    `get_potential("logistic")` normalises on 501 x 501 points and builds two grid marginals, each a
    sum over all N = 500 examples: several seconds (tens under load), too slow for a page-load check.
    The KL check needs only the density, which this gives to ~1e-9."""
    import inspect

    from scipy.special import expit, log_expit, logsumexp

    from samplers.targets import data as dp
    from samplers.targets.potential import Potential

    class _Posterior(Potential):
        def __post_init__(self):   # normalised below, on a coarser grid; no grid marginals
            pass

    defaults = inspect.signature(dp.logistic).parameters
    data = dp.make_logistic_data(defaults["n"].default, defaults["seed"].default)

    def U(w):
        return -log_expit(data.y[None, :] * (w @ data.x.T)).sum(1) + data.prior_U(w)

    def grad(w):
        m = data.y[None, :] * (w @ data.x.T)
        return -(data.y[None, :] * expit(-m)) @ data.x + data.prior_grad(w)

    w = np.zeros((1, 2))
    for _ in range(30):   # Newton to the mode, as the preset does, for the same +-6 sd box
        p = expit(data.x @ w[0])
        hess = (data.x.T * (p * (1 - p))) @ data.x + np.eye(2) / data.prior_var
        w = w - np.linalg.solve(hess, grad(w)[0])[None]
    sd = np.sqrt(np.diag(np.linalg.inv(hess)))
    box = tuple((float(c - 6 * s), float(c + 6 * s)) for c, s in zip(w[0], sd))
    axes = [np.linspace(lo, hi, 201) for lo, hi in box]
    grid = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    u = np.concatenate([U(grid[i:i + 10000]) for i in range(0, len(grid), 10000)])
    weights = np.ones((201, 201))
    weights[[0, -1], :] *= 0.5
    weights[:, [0, -1]] *= 0.5
    cell = (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0])
    log_z = float(logsumexp(-u + np.log(weights.ravel() * cell)))
    return _Posterior("logistic", 2, U, grad, box, description="the logistic preset's posterior (checks)",
                      u_min=float(u.min()), log_z=log_z, data=data, start=w[0].copy())


@lru_cache(maxsize=1)
def _logistic_masses(bins: int = 20):
    """Exact bin masses of the logistic posterior on its box (Simpson, 4 nodes a bin: ~1e-6 accurate)."""
    from samplers import diagnostics as dg
    from samplers.accuracy import edges_for
    pot = logistic_posterior()
    edges = edges_for(pot, bins)
    return edges, dg.bin_masses_2d(pot.density_xy, *edges, oversample=4)


def minibatch_kl(quick: bool = False) -> dict:
    """Real minibatches (logistic posterior, n = 20 of N = 500): the KL divergence of SGLD's samples
    from the exact posterior (20 x 20 bins) falls when the step size falls, over the same simulated
    time (burn-in 0.1, then 0.2 time units; the posterior relaxes in about 0.01)."""
    from samplers import diagnostics as dg
    from samplers.run import run
    chains = 300 if quick else 1000
    edges, masses = _logistic_masses(20)
    kls = {}
    for eps in (2e-3, 5e-4):
        s = _sampler("sgld", logistic_posterior(), batch=20, eps=eps)
        burn, steps = int(round(0.1 / eps)), int(round(0.2 / eps))
        res = run(s, steps, chains, burn=burn, thin=max(1, steps // 100), seed=6)
        kls[eps] = dg.kl_divergence(res.theta, edges, masses)
    ratio = kls[5e-4] / kls[2e-3]
    floor = dg.kl_mc_bias(masses.size, 100 * chains)    # an exact sample of this size, as an upper bound
    tol = 0.5
    return _result(ratio, tol, ratio < tol and kls[5e-4] > floor,
                   f"KL(samples ‖ posterior), 20×20 bins: {_g(kls[2e-3])} at ε = 2·10⁻³, {_g(kls[5e-4])} at "
                   f"ε = 5·10⁻⁴ (ratio {ratio:.2f}; must fall below {tol:g} when ε falls 4×; an exact sample "
                   f"of this size scores about {_g(floor)})")


# -- 05 SGHMC ----------------------------------------------------------------------------------------
EXACT_E_THETA2_DOUBLE_WELL = 0.8327454871   # quadrature of theta^2 exp(-(theta^4 - 2 theta^2))


def sghmc_friction(quick: bool = False) -> dict:
    """Chen et al.'s setting (double well, V = 4, eps = 0.1, C = 3, momentum resampled every 50
    steps): E[theta^2] of naive SGHMC (friction dropped) against SGHMC and the exact value, and the
    Fokker-Planck residual of both."""
    from samplers.run import run
    from samplers.engine.stationarity import stationarity_residual
    chains, steps = (1000, 1500) if quick else (4000, 3000)
    exact = EXACT_E_THETA2_DOUBLE_WELL
    stats = {}
    for name, params in (("sghmc-naive", dict(eps=0.1, resample_every=50)),
                         ("sghmc", dict(eps=0.1, C=3.0, resample_every=50))):
        s = _sampler(name, "double-well", V=4.0, **params)
        res = run(s, steps, chains, burn=500, seed=5)
        stats[name] = _chain_mean_se(res.theta[:, :, 0] ** 2) + (
            stationarity_residual(s.recipe, s.potential, n_grid=101).relative,)
    m_c, se_c, r_c = stats["sghmc"]
    m_n, se_n, r_n = stats["sghmc-naive"]
    z_c = abs(m_c - exact) / se_c
    z_n = (m_n - exact) / se_n
    tol = 4.0
    return _result(z_c, tol, z_c < tol and z_n > 10,
                   f"E[θ²] exact {exact:.4f}; SGHMC {m_c:.4f} ± {se_c:.4f} ({z_c:.1f} s.e., tolerance {tol:g}); "
                   f"naive {m_n:.4f} ± {se_n:.4f} ({z_n:.0f} s.e. off). Residual: SGHMC {_g(r_c)}, naive {_g(r_n)}")


def sghmc_friction_limit(quick: bool = False) -> dict:
    """SGLD as SGHMC's high-friction limit, exactly for U = theta^2/2 (unit mass): the integrated
    autocorrelation time of theta under SGHMC's SDE is A^-1 Sigma = C, under Langevin's 1, so in the
    time u = t / C SGHMC's theta moves like SGLD's at every C; for large C the whole path does."""
    from scipy.linalg import expm
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
    return _result(worst, tol, worst < tol,
                   "; ".join(rows) + f" (SGLD: τ = 1, ρ(u=1) = e⁻¹ = {math.exp(-1):.3f})")


# -- 06 SGRLD -----------------------------------------------------------------------------------------
def sgrld_law(which: str, potential: str = "gaussian", metric_D: float = 1.5, metric_C: float = 0.5):
    """E[theta^2] of the law 1-D SGRLD samples with D = g(theta) = metric_D sqrt|U + metric_C| and
    Gamma = g' ("recipe": exp(-U)), g'/2 (the older Riemannian term, "historical": exp(-U) g^-1/2)
    or no Gamma ("none": exp(-U) / g), by quadrature. From f p = (g p)': p'/p = -U' - (g' - Gamma)/g."""
    from scipy.integrate import quad
    from samplers.targets.presets import get_potential
    pot = get_potential(potential)
    power = {"recipe": 0.0, "historical": -0.5, "none": -1.0}[which]

    def weight(t):
        u = pot.U(np.array([[t]]))[0]
        return np.exp(-u) * (metric_D * np.sqrt(abs(u + metric_C))) ** power

    lo, hi = pot.box[0]
    z = quad(weight, lo, hi, limit=200)[0]
    return quad(lambda t: t * t * weight(t), lo, hi, limit=200)[0] / z


def sgrld_gamma(quick: bool = False) -> dict:
    """SGRLD on the standard normal (V = 1, eps = 0.003, G^-1 = 1.5 sqrt(theta^2/2 + 0.5)): with
    Gamma the histogram matches exp(-U); with Gamma dropped the chains sample exp(-U) / g instead,
    whose E[theta^2] = 0.715 (quadrature). KL of each, E[theta^2] against both predictions, and the
    Fokker-Planck residuals."""
    from samplers.accuracy import kl_noise_floor, score
    from samplers.run import run
    from samplers.engine.stationarity import stationarity_residual
    chains = 1000 if quick else 4000
    s = _sampler("sgrld", "gaussian", V=1.0)
    naive = s.with_recipe(s.recipe.with_drop({"gamma"}))
    out = {}
    for label, smp in (("with", s), ("without", naive)):
        res = run(smp, 300, chains, burn=2000, thin=2, seed=3)
        out[label] = (score(s.potential, res.theta)["kl"], kl_noise_floor(s.potential, res.theta),
                      stationarity_residual(smp.recipe, s.potential, n_grid=201).relative,
                      *_chain_mean_se(res.theta[:, :, 0] ** 2))
    kl, floor, res_w, m_w, se_w = out["with"]
    kl_n, _, res_n, m_n, se_n = out["without"]
    pred_n = sgrld_law("none")
    z_n = abs(m_n - pred_n) / se_n
    tol = 3 * floor + 1e-3    # the floor plus an allowance for the discretisation at eps = 0.003
    return _result(kl, tol, kl < tol and kl_n > 5 * tol and z_n < 4 and abs(m_w - 1) / se_w < 4,
                   f"KL with Γ {_g(kl)} (floor {_g(floor)}, tolerance {_g(tol)}), without Γ {_g(kl_n)}; "
                   f"E[θ²] with Γ {m_w:.3f} ± {se_w:.3f} (exact 1), without {m_n:.3f} ± {se_n:.3f} "
                   f"(predicted for e^(−U)/g: {pred_n:.3f}). Residual {_g(res_w)} vs {_g(res_n)}")


# -- 07 Thermostats ------------------------------------------------------------------------------------
def thermostat_equipartition(quick: bool = False) -> dict:
    """SGNHT with unknown gradient noise (V = 16, B^ = 0, eps = 0.02, A = 1) on the standard normal:
    the kinetic temperature r.r/d stays at 1 (exactly, at stationarity of the discrete xi update)
    while xi settles near A + eps V / 2; SGHMC with the same noise and C = A runs hot."""
    from samplers.run import run
    chains = 800 if quick else 3000
    eps, V, A = 0.02, 16.0, 1.0
    kw = dict(burn=2500, thin=2, seed=2, keep_aux=True)
    sg = _sampler("sgnht", "gaussian", V=V, eps=eps, A=A)
    res = run(sg, 1000, chains, **kw)
    T, se_T = _chain_mean_se(res.aux[:, :, 0] ** 2)
    xi, se_xi = _chain_mean_se(res.aux[:, :, 1])
    base = run(_sampler("sgnht", "gaussian", eps=eps, A=A), 1000, chains, **kw)   # V = 0: discretisation part
    xi0, se_xi0 = _chain_mean_se(base.aux[:, :, 1])
    hmc = run(_sampler("sghmc", "gaussian", V=V, eps=eps, C=A), 1000, chains, **kw)
    T_hmc, se_hmc = _chain_mean_se(hmc.aux[:, :, 0] ** 2)
    z_T = abs(T - 1) / se_T
    shift, pred = xi - xi0, eps * V / 2
    z_xi = abs(shift - pred) / math.hypot(se_xi, se_xi0)
    tol = 4.0
    return _result(z_T, tol, z_T < tol and z_xi < tol and (T_hmc - 1) / se_hmc > 10,
                   f"SGNHT: E[rᵀr/d] = {T:.3f} ± {se_T:.3f} ({z_T:.1f} s.e. from 1, tolerance {tol:g}); "
                   f"ξ moved by {shift:.3f} ± {math.hypot(se_xi, se_xi0):.3f} when V went 0 → {V:g} (εV/2 = {pred:.2f}); "
                   f"SGHMC: E[rᵀr/d] = {T_hmc:.3f}")


def _fp_residual(drift, D_diag, grad_h, lap_terms, z, log_p, delta=1e-5):
    """Fokker-Planck right-hand side at p = exp(-H), divided by p, for a constant diagonal D:
    R/p = -sum_i (d_i f_i - f_i d_i H) + sum_i D_ii ((d_i H)^2 - d_ii H). Returns the p-weighted
    relative residual sum p |R/p| / sum p (sum of the terms' magnitudes)."""
    f, gh = drift(z), grad_h(z)
    n = z.shape[1]
    terms = []
    for i in range(n):
        e = np.zeros(n)
        e[i] = delta
        div_i = (drift(z + e)[:, i] - drift(z - e)[:, i]) / (2 * delta)
        terms.append(-(div_i - f[:, i] * gh[:, i]))
        if D_diag[i]:
            terms.append(D_diag[i] * (gh[:, i] ** 2 - lap_terms[i]))
    terms = np.array(terms)
    w = np.exp(log_p - log_p.max())
    return float((w * np.abs(terms.sum(0))).sum() / (w * np.abs(terms).sum(0)).sum())


def sgnht_thermostat_energy(quick: bool = False) -> dict:
    """Erratum 2: SGNHT's dynamics (Eq. 15: r' = -grad U - xi r + noise, xi' = r.r/d - 1) with
    Q_{r,xi} = r/d leave exp(-H) invariant only if the thermostat energy in H is (d/2)(xi - A)^2.
    Symbolically, the recipe built with the printed (xi - A)^2/(2d) has a different drift; and the
    Fokker-Planck residual of Eq. (15)'s drift at exp(-H) vanishes for (d/2)(xi - A)^2 only.
    On the banana (d = 2; the state (theta, r, xi) has dimension 5), at random points of the box."""
    import sympy
    from samplers.engine.recipe import Recipe
    s = _sampler("sgnht", "banana")
    good = s.recipe
    d, A = s.dim, s["A"]
    sym = good.sym
    r, xi = sym.aux[:d], sym.aux[d]
    D, Q = good._raw
    printed = Recipe("sgnht-printed", sym, sum(v ** 2 for v in r) / 2 + (xi - A) ** 2 / (2 * d), D, Q,
                     blocks=good.blocks, aux_box=good.aux_box)
    eq15 = [sympy.expand(-sym.g[i] - xi * r[i]) for i in range(d)]   # the r rows of Eq. (15)
    sym_gap = [sympy.simplify(rec.drift_exprs()[d + i] - eq15[i]) for rec in (good, printed) for i in range(d)]
    good_exact = all(g == 0 for g in sym_gap[:d])
    printed_diff = sympy.sstr(sym_gap[d]).replace("**", "^")
    # numeric: Eq. (15)'s drift (the library's SGNHT) against both candidate densities
    pot = s.potential
    rng = np.random.default_rng(8)
    n = 4000 if quick else 20000
    lo, hi = np.array(list(pot.box) + list(good.aux_box)).T
    z = lo + (hi - lo) * rng.random((n, lo.size))

    def drift(zz):
        th = zz[:, :d]
        return good.drift(zz, pot.U(th), pot.grad(th))

    D_diag = [0.0] * d + [A] * d + [0.0]
    lap = [None] * d + [np.ones(n)] * d + [None]
    out = {}
    for label, c in (("good", d / 2), ("printed", 1 / (2 * d))):
        def grad_h(zz, c=c):
            return np.concatenate([pot.grad(zz[:, :d]), zz[:, d:2 * d], 2 * c * (zz[:, 2 * d:] - A)], axis=1)
        log_p = -(pot.U(z[:, :d]) + (z[:, d:2 * d] ** 2).sum(1) / 2 + c * (z[:, 2 * d] - A) ** 2)
        out[label] = _fp_residual(drift, D_diag, grad_h, lap, z, log_p)
    tol = 1e-6
    return _result(out["good"], tol, good_exact and out["good"] < tol and out["printed"] > 1e3 * tol,
                   f"Eq. (15)'s drift at exp(−H): residual {_g(out['good'])} with (d/2)(ξ−A)² (tolerance {_g(tol)}), "
                   f"{_g(out['printed'])} with the printed (ξ−A)²/(2d); the printed H's recipe drift differs from "
                   f"Eq. (15) by {printed_diff} in ṙ₁")


# -- 08 SGRHMC -----------------------------------------------------------------------------------------
def sgrhmc_naive_kl(quick: bool = False) -> dict:
    """The recipe paper's Fig. 2 (left) claim on the standard normal with V = 1: naive SGRHMC (Eq. 16,
    no grad G^{-1/2} term) has a KL divergence at least 10x that of gSGRHMC (Algorithm 1). Histograms
    of 50 bins over [-5, 5], so that gSGRHMC's KL, which sits at the Monte Carlo floor, is small."""
    from samplers.accuracy import kl_noise_floor, score
    from samplers.run import run
    chains, steps = (2000, 500) if quick else (4000, 1500)
    out = {}
    for name in ("sgrhmc", "sgrhmc-naive"):
        s = _sampler(name, "gaussian", V=1.0)
        res = run(s, steps, chains, burn=1000, seed=11)
        out[name] = (score(s.potential, res.theta, bins=50)["kl"], kl_noise_floor(s.potential, res.theta, bins=50))
    kl, floor = out["sgrhmc"]
    kl_n, _ = out["sgrhmc-naive"]
    ratio = kl_n / kl
    tol = 10.0
    return _result(ratio, tol, ratio >= tol,
                   f"KL naive {_g(kl_n)} / gSGRHMC {_g(kl)} = {ratio:.0f} (needs ≥ {tol:g}; "
                   f"the Monte Carlo floor is {_g(floor)})")


# -- 09 Integrators -------------------------------------------------------------------------------------
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
    from scipy.linalg import solve_discrete_lyapunov
    return solve_discrete_lyapunov(F, G @ G.T)


def integrator_order(quick: bool = False) -> dict:
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
    return _result(gap, tol, gap < tol,
                   f"slope of ‖Σ_ε − I‖ over ε = 0.1 … 0.0125: Euler {slopes['euler']:.3f} (predicted 1), "
                   f"splitting {slopes['splitting']:.3f} (predicted 2); at ε = 0.1 the errors are "
                   f"{_g(errs['euler'][0])} and {_g(errs['splitting'][0])} (tolerance ±{tol:g} on the slopes)")


def integrator_simulation(quick: bool = False) -> dict:
    """One point of integrator_order by simulation: the library's SGHMC (Euler and integrator=splitting)
    at eps = 0.2, C = 1, exact gradients on the standard normal; E[r^2] against the Lyapunov value."""
    from samplers.run import run
    chains = 2000 if quick else 8000
    eps, worst, parts = 0.2, 0.0, []
    for name in ("euler", "splitting"):
        exact = stationary_covariance(*_sghmc_linear_maps(eps)[name])
        s = _sampler("sghmc", "gaussian", eps=eps, C=1.0, integrator=name)
        res = run(s, 400, chains, burn=100, seed=7, keep_aux=True)
        m, se = _chain_mean_se(res.aux[:, :, 0] ** 2)
        z = abs(m - exact[1, 1]) / se
        worst = max(worst, z)
        parts.append(f"{name} {m:.4f} ± {se:.4f} vs {exact[1, 1]:.4f}")
    tol = 4.0
    return _result(worst, tol, worst < tol,
                   f"E[r²] at ε = 0.2: " + "; ".join(parts) + f" ({worst:.1f} s.e. at most, tolerance {tol:g})")


# -- 10 Quasi-Newton HMC --------------------------------------------------------------------------------
def _gaussian_kl(S, T) -> float:
    """KL(N(0, S) || N(0, T))."""
    d = S.shape[0]
    Ti = np.linalg.inv(T)
    return 0.5 * float(np.trace(Ti @ S) - d + np.linalg.slogdet(T)[1] - np.linalg.slogdet(S)[1])


def qnhmc_flow(quick: bool = False) -> dict:
    """The continuous flows of Eq. (4) and Eq. (7) on a correlated Gaussian (Sigma = 11^T + 4I, d = 10,
    B = C = Sigma, the inverse Hessian the updates converge to, M = I), started at the target. Both flows
    are linear, z_t = e^{tL} z_0, so everything is exact: the naive flow keeps volume (entropy
    change log det e^{tL} = t tr L = 0) yet drives the law away from exp(-H) (KL > 0); the skew flow
    keeps KL = 0."""
    from scipy.linalg import expm
    d = 10
    Sigma = np.ones((d, d)) + 4 * np.eye(d)
    Ainv, A = Sigma, np.linalg.inv(Sigma)
    B = C = Ainv
    Z, I = np.zeros((d, d)), np.eye(d)
    naive = np.block([[Z, I], [-B @ A, Z]])          # theta' = p, p' = -B A theta
    skew = np.block([[Z, C], [-C @ A, Z]])           # theta' = C p, p' = -C A theta
    target = np.block([[Sigma, Z], [Z, I]])
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
    return _result(value, tol, value < tol and kl_naive[peak] > 1.0,
                   f"d = 10, t ∈ [0, 3]: entropy change ≤ {_g(worst_ent)} for both flows; "
                   f"KL(p_t ‖ e^(−H)) of Eq. (4) reaches {kl_naive[peak]:.2f} at t = {ts[peak]:.1f}, "
                   f"of Eq. (7) stays ≤ {_g(worst_skew)} (tolerance {_g(tol)})")


def qnhmc_ess(quick: bool = False) -> dict:
    """Fu et al.'s comparison on a correlated Gaussian (d = 10, Sigma = 11^T + 4I), chains started at
    the target, B learnt from the pairs during a burn-in and then frozen (adapt): the ESS of theta projected
    on 1 (the long axis) per proposal for HMC and QNHMC at the paper's eps = 0.01, L = 10; HMC with a
    step size tuned to its own stability limit; and the law of naive QNHMC (Eq. 4 without Metropolis)."""
    missing = _missing("hmc", "qnhmc", "qnhmc-naive")
    if missing:
        return _skip(f"sampler(s) {', '.join(missing)} not registered yet")
    from samplers import diagnostics as dg
    from samplers.targets.presets import gaussian_nd
    from samplers.run import Ensemble
    d = 10
    Sigma = np.ones((d, d)) + 4 * np.eye(d)
    pot = gaussian_nd("gaussian-10d", Sigma, "10-d Gaussian with covariance 11ᵀ + 4I", "")
    chains, burn, steps = (100, 150, 300) if quick else (400, 300, 1000)
    var_1 = float(np.ones(d) @ Sigma @ np.ones(d) / d)           # Var(1^T theta / sqrt d) = 14
    out = {}
    for label, name, params in (("hmc", "hmc", dict(eps=0.01, L=10)),
                                ("qnhmc", "qnhmc", dict(eps=0.01, L=10, adapt=burn)),
                                ("naive", "qnhmc-naive", dict(eps=0.01, L=10, adapt=burn)),
                                ("hmc-tuned", "hmc", dict(eps=1.5, L=10))):
        s = _sampler(name, pot, **params)
        ens = Ensemble(s, chains, seed=9)
        ens.z[:, :d] = pot.exact_sampler(chains, np.random.default_rng(10))   # start at the target
        ens.advance(burn)
        proj = np.empty((steps, chains))
        for k in range(steps):
            ens.advance(1)
            proj[k] = ens.theta.sum(axis=1) / np.sqrt(d)
        m, se = _chain_mean_se(proj ** 2)
        out[label] = (dg.ess(proj) / proj.size, m, se)
    ratio = out["qnhmc"][0] / out["hmc"][0]
    _, var_n, se_n = out["naive"]
    z_n = abs(var_n - var_1) / se_n
    tol = 5.0
    return _result(ratio, tol, ratio >= tol and z_n > 10,
                   f"ESS per proposal along 1 at ε = 0.01, L = 10: QNHMC {_g(out['qnhmc'][0])}, HMC "
                   f"{_g(out['hmc'][0])} (ratio {ratio:.0f}, needs ≥ {tol:g}); HMC at ε = 1.5: "
                   f"{_g(out['hmc-tuned'][0])}. Naive QNHMC: Var(1ᵀθ/√d) = {var_n:.2f} ± {se_n:.2f} vs {var_1:g}")


# -- 11 SCIR ----------------------------------------------------------------------------------------------
SPARSE_COUNTS = np.array([800, 100, 100, 0, 0, 0, 0, 0, 0, 0], float)
SPARSE_N, SPARSE_ALPHA, SPARSE_BATCH = 1000, 0.1, 10


def cir_transition(theta, a, h, rng):
    """The exact CIR transition over time h (seeds erratum 6): theta' = W / (2c), c = 1 / (1 - e^{-h}),
    W ~ noncentral chi-square(df = 2a, noncentrality = 2 c theta e^{-h})."""
    c = -1.0 / np.expm1(-h)
    return rng.noncentral_chisquare(2.0 * a, 2.0 * c * theta * np.exp(-h)) / (2.0 * c)


def _a_hat(chains, rng):
    """a-hat = alpha + (N/n) * (category counts of a minibatch of n drawn with replacement)."""
    m = rng.multinomial(SPARSE_BATCH, SPARSE_COUNTS / SPARSE_N, size=chains)
    return SPARSE_ALPHA + (SPARSE_N / SPARSE_BATCH) * m


def scir_moment_formula(theta0, a, var_a, h, M):
    """Corollary 3.2: E and Var of SCIR after M steps of size h from theta0."""
    e1, e2 = math.exp(-M * h), math.exp(-2 * M * h)
    mean = theta0 * e1 + a * (1 - e1)
    var_cir = 2 * theta0 * (e1 - e2) + a * (1 - e1) ** 2
    return mean, var_cir + (1 - e2) * (1 - math.exp(-h)) / (1 + math.exp(-h)) * var_a


def _scir_after(chains, h, M, theta0, seed):
    """theta after M SCIR steps from theta0 on the sparse Dirichlet's gamma coordinates, minibatch
    n = 10: the library's `scir` when it is registered, else the transition above. (source, theta)"""
    if not _missing("scir"):
        from samplers.run import Ensemble
        s = _sampler("scir", "sparse-dirichlet", batch=SPARSE_BATCH, h=h)
        ens = Ensemble(s, chains, seed=seed)
        ens.z[:] = theta0
        ens.advance(M)
        return "the library's scir", ens.z.copy()
    rng = np.random.default_rng(seed)
    theta = np.full((chains, SPARSE_COUNTS.size), theta0)
    for _ in range(M):
        theta = cir_transition(theta, _a_hat(chains, rng), h, rng)
    return "cir_transition in lessons/checks.py", theta


def scir_moments(quick: bool = False) -> dict:
    """Theorem 3.1 / Corollary 3.2 on the sparse Dirichlet's gamma coordinates (minibatch n = 10 of
    N = 1000, drawn with replacement): after M = 20 steps of h = 0.05 from theta0 = 1, the mean and
    variance of SCIR against the formula; the variance is the exact CIR's plus the minibatch term."""
    chains = 20000 if quick else 200000
    h, M, theta0 = 0.05, 20, 1.0
    source, theta = _scir_after(chains, h, M, theta0, seed=12)
    a = SPARSE_ALPHA + SPARSE_COUNTS
    p = SPARSE_COUNTS / SPARSE_N
    var_a = SPARSE_N ** 2 / SPARSE_BATCH * p * (1 - p)     # Var(a-hat): (N/n)^2 n p (1 - p)
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
    return _result(worst, tol, worst < tol,
                   "; ".join(parts) + f" — largest gap {worst:.1f} s.e. (tolerance {tol:g}; {source})")


def _euler_reflected(theta, a, h, rng):
    """An Euler-Maruyama step of the same diffusion, reflected at 0 (what SGRLD does)."""
    return np.abs(theta + h * (a - theta) + np.sqrt(2 * h * theta) * rng.standard_normal(theta.shape))


def scir_sparse_quantiles(quick: bool = False) -> dict:
    """The SCIR paper's Fig. 1: log10-quantiles of a sparse component omega_5 of the sparse Dirichlet
    posterior (counts 800/100/100/0..., alpha = 0.1, minibatch 10): exact draws, SCIR with h = 0.05
    and SGRLD on the simplex with the same step of the diffusion (eps = 2h = 0.1). Uses the library's
    `scir` and `sgrld-simplex` when registered, else the transition above and a reflected Euler step."""
    chains, burn, steps = (1000, 200, 200) if quick else (4000, 1000, 1000)
    h = 0.05
    a = SPARSE_ALPHA + SPARSE_COUNTS
    exact = np.random.default_rng(13).gamma(a, size=(200000, a.size))
    exact = np.log10(exact[:, 4] / exact.sum(1))
    runs = {}
    if not _missing("scir", "sgrld-simplex"):
        from samplers.run import run
        source = "the library's scir and sgrld-simplex"
        for label, name, params in (("SCIR", "scir", dict(h=h)), ("SGRLD", "sgrld-simplex", dict(eps=2 * h))):
            res = run(_sampler(name, "sparse-dirichlet", batch=SPARSE_BATCH, **params), steps, chains,
                      burn=burn, thin=10, seed=13)
            runs[label] = np.log10(res.theta[:, :, 4].ravel())
    else:
        source = "local CIR transition and reflected Euler step"
        rng = np.random.default_rng(13)
        for label, step in (("SCIR", cir_transition), ("SGRLD", _euler_reflected)):
            theta = np.tile(a / a.sum() * 1000, (chains, 1))
            keep = []
            for m in range(burn + steps):
                theta = step(theta, _a_hat(chains, rng), h, rng)
                if m >= burn and m % 10 == 0:
                    keep.append(np.log10(theta[:, 4] / theta.sum(1)))
            runs[label] = np.concatenate(keep)
    qs = [10, 50, 90]
    q_exact, q_scir, q_sgrld = (np.percentile(x, qs) for x in (exact, runs["SCIR"], runs["SGRLD"]))
    gap = float(np.abs(q_scir - q_exact).max())
    tol = 0.5   # decades; the sampling error of these quantiles is ~0.1 decade
    fmt = lambda q: " / ".join(f"{v:.1f}" for v in q)   # noqa: E731
    return _result(gap, tol, gap < tol and q_sgrld[0] - q_exact[0] > 5,
                   f"log₁₀ ω₅ at the 10 / 50 / 90 % quantiles: exact {fmt(q_exact)}, SCIR {fmt(q_scir)}, "
                   f"SGRLD {fmt(q_sgrld)} (SCIR within {gap:.2f} decades, tolerance {tol:g}; {source})")


def sgrld_boundary_bias(quick: bool = False) -> dict:
    """Proposition 1.1's bias at the boundary, on Gamma(a, 1) with a = 0.1 (a sparse coordinate),
    chains started at the target: the time-averaged mean of the reflected Euler scheme (SGRLD's
    discretisation) is far above a, and shrinks only slowly with h; SCIR's equals a at any h.
    (Without reflection the Euler mean would be exactly a: the drift a - theta is linear; all of
    the mean's bias comes from the boundary.)"""
    chains = 20000 if quick else 100000
    a = 0.1
    rng = np.random.default_rng(14)

    def time_average(step, h, horizon=4.0):
        theta = rng.gamma(a, size=chains)
        total = np.zeros(chains)
        steps = int(round(horizon / h))
        for _ in range(steps):
            theta = step(theta, a, h, rng)
            total += theta
        per_chain = total / steps
        return per_chain.mean(), per_chain.std(ddof=1) / np.sqrt(chains)

    euler = {h: time_average(_euler_reflected, h) for h in (0.04, 0.01)}
    m_s, se_s = time_average(cir_transition, 0.04)
    z_s = abs(m_s - a) / se_s
    z_e = min((m - a) / se for m, se in euler.values())
    tol = 4.0
    rel = {h: (m - a) / a for h, (m, _) in euler.items()}
    return _result(z_s, tol, z_s < tol and z_e > 20,
                   f"E[θ] for Gamma(0.1, 1): reflected Euler {euler[0.04][0]:.3f} at h = 0.04 (+{100 * rel[0.04]:.0f} %), "
                   f"{euler[0.01][0]:.3f} at h = 0.01 (+{100 * rel[0.01]:.0f} %); SCIR at h = 0.04: {m_s:.4f} ± "
                   f"{se_s:.4f}, {z_s:.1f} s.e. from a = 0.1 (tolerance {tol:g})")


# -- registry --------------------------------------------------------------------------------------------
CHECKS = {f.__name__: f for f in (
    fokker_planck_residual, ensemble_kl, recipe_residual, completeness_q, sgld_noise_bias, minibatch_kl,
    sghmc_friction, sghmc_friction_limit, sgrld_gamma, thermostat_equipartition, sgnht_thermostat_energy,
    sgrhmc_naive_kl, integrator_order, integrator_simulation, qnhmc_flow, qnhmc_ess, scir_moments,
    scir_sparse_quantiles, sgrld_boundary_bias)}


@lru_cache(maxsize=None)
def cached(name: str, quick: bool = True) -> dict:
    """CHECKS[name](quick), computed once per process (checks are deterministic)."""
    if name not in CHECKS:
        raise KeyError(f"no check named '{name}' (known: {', '.join(CHECKS)})")
    return CHECKS[name](quick=quick)
