"""Every named sampler of the recipe paper and the notes, declared as (H, D, Q) with its fast path.

Each recipe is derived from the paper's (H, D, Q), never copied from an update rule; the
fast path beside it is the same Euler scheme written out by hand and must equal the
engine step for step (tests/test_fast_paths.py). Hamiltonian samplers update the momentum
first and then the position with the new momentum (as Chen et al. do), a valid Euler
discretisation that the engine reproduces with `blocks`.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Abs, Matrix, Rational, eye, sqrt, zeros

from samplers.engine.recipe import Recipe, StateSymbols, _scaled_noise
from samplers.registry import SamplerError, SamplerSpec, register

FAST_SCALAR_ONLY = "the fast path takes a scalar Bhat"


# -- shared pieces -------------------------------------------------------------------
def _names(prefix: str, d: int) -> list[str]:
    return [prefix] if d == 1 else [f"{prefix}_{i + 1}" for i in range(d)]


def momentum(d, p):
    return _names("r", d)


def _scalar_bhat(s, theta):
    b = s.current_bhat(theta)
    return float(b) if np.ndim(b) == 0 else None


def _kick(var, shape, rng):
    """sqrt(var) * N(0, 1); var is the per-coordinate variance eps (2D - eps B^)."""
    xi = rng.standard_normal(shape)
    if np.ndim(var) == 0 and var >= 0:   # the common case, without temporaries
        xi *= np.sqrt(var)
        return xi
    return _scaled_noise(np.broadcast_to(var, shape), xi)


def _noise_level(oracle) -> float:
    """A scalar gradient-noise variance V when the oracle knows one (simulated noise), else 0."""
    V = getattr(oracle, "V", None)
    if V is None:
        return 0.0
    V = np.asarray(V, float)
    return float(V) if V.ndim == 0 else float(np.trace(V) / V.shape[0])


def _hamiltonian_blocks(d: int, n: int):
    """Momentum (and thermostat) first, then position: [r], [theta], [rest]."""
    blocks = [list(range(d, 2 * d)), list(range(d))]
    if n > 2 * d:
        blocks.append(list(range(2 * d, n)))
    return blocks


def _level_metric(s, sym):
    """G(theta)^{-1} = metric_D sqrt|U + metric_C| (recipe paper, Supplement F.1)."""
    return s["metric_D"] * sqrt(Abs(sym.U + s.metric_C))


def _init_momentum(s, chains, rng):
    return np.sqrt(s.params.get("M", 1.0)) * rng.standard_normal((chains, s.dim))


# -- SGLD / SGRLD ----------------------------------------------------------------------
def sgld_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, [])
    return Recipe("sgld", sym, 0, eye(d), zeros(d, d), description="z = theta, H = U, D = I, Q = 0")


def sgld_fast(s, z, rng):
    eps = s["eps"]
    _, g = s.oracle(z, rng)
    b = _scalar_bhat(s, z)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    return z - eps * g + _kick(eps * (2.0 - eps * b), z.shape, rng)


register(SamplerSpec(
    "sgld", "SGLD", "recipe paper Eq. (13) (Welling & Teh 2011)",
    "Stochastic gradient Langevin dynamics: z = θ, H = U, D = I, Q = 0.",
    dict(eps=0.01, Bhat=0.0), lambda d, p: [], sgld_recipe, sgld_fast))


def sgrld_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, [])
    return Recipe("sgrld", sym, 0, _level_metric(s, sym) * eye(d), zeros(d, d),
                  description="z = theta, H = U, D = G(theta)^-1, Q = 0")


def sgrld_fast(s, z, rng):
    eps, mD = s["eps"], s["metric_D"]
    u, g = s.oracle(z, rng, value=True)
    b = _scalar_bhat(s, z)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    w = (u + s.metric_C)[:, None]
    ginv = mD * np.sqrt(np.abs(w))
    dginv = 0.5 * mD * np.sign(w) / np.sqrt(np.abs(w))   # d G^-1 / dU; Gamma_i = dginv * dU/dtheta_i
    return z + eps * (dginv * g - ginv * g) + _kick(eps * (2 * ginv - eps * b * ginv ** 2), z.shape, rng)


register(SamplerSpec(
    "sgrld", "SGRLD", "recipe paper Eq. (14) (Patterson & Teh 2013; Γ as in Xifara et al. 2014)",
    "Stochastic gradient Riemannian Langevin dynamics: D = G(θ)⁻¹ = metric_D·sqrt|U + metric_C|·I, "
    "Γ_i = Σ_j ∂_j G⁻¹_ij. metric_C defaults to 0.5 − min U, so U + C ≥ 0.5.",
    dict(eps=0.003, metric_D=1.5, metric_C=None, Bhat=0.0), lambda d, p: [], sgrld_recipe, sgrld_fast))


# -- SGHMC and its naive form ------------------------------------------------------
def _sghmc_C(s) -> float:
    """Naive SGHMC injects no noise: its only diffusion is the gradient noise's, eps V / 2."""
    if s["C"] is not None:
        return float(s["C"])
    return 0.5 * s["eps"] * _noise_level(s.oracle) if s.spec.naive else 1.0


def sghmc_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, momentum(d, s.params))
    r = Matrix(sym.aux)
    C, M = _sghmc_C(s), s["M"]
    D = sympy.diag(zeros(d, d), C * eye(d))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -eye(d)], [eye(d), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / (2 * M), D, Q, blocks=_hamiltonian_blocks(d, 2 * d),
                  drop={"friction"} if s.spec.naive else (), aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d,
                  description="z = (theta, r), H = U + r.r/2M, D = diag(0, C), Q = [[0, -I], [I, 0]]")


def sghmc_fast(s, z, rng):
    d, eps, M = s.dim, s["eps"], s["M"]
    C = _sghmc_C(s)
    friction = 0.0 if s.spec.naive else C
    theta, r = z[:, :d], z[:, d:]
    if s["integrator"] == "splitting":
        return _sghmc_splitting(s, theta, r, rng, eps, C, friction, M)
    _, g = s.oracle(theta, rng)
    b = _scalar_bhat(s, theta)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    # in place where possible: this is the path the speed benchmark holds to the RNG floor
    out = np.empty_like(z)
    r_new = out[:, d:]
    np.multiply(r, 1.0 - eps * friction / M, out=r_new)
    g *= eps
    r_new -= g
    if C:   # with C = 0 the recipe has no diffusion and draws nothing
        r_new += _kick(eps * (2 * C - eps * b), r.shape, rng)
    np.multiply(r_new, eps / M, out=out[:, :d])
    out[:, :d] += theta
    return out


def _sghmc_splitting(s, theta, r, rng, eps, C, friction, M):
    """Symmetric splitting A(h/2) B(h/2) O(h) B(h/2) A(h/2) (notes 003; Chen, Ding & Carin 2015)."""
    damp = np.exp(-friction * eps / (2 * M))
    theta = theta + 0.5 * eps * r / M
    r = r * damp
    _, g = s.oracle(theta, rng)
    b = _scalar_bhat(s, theta)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    r = r - eps * g + (_kick(eps * (2 * C - eps * b), r.shape, rng) if C else 0.0)
    r = r * damp
    theta = theta + 0.5 * eps * r / M
    return np.concatenate([theta, r], axis=1)


SGHMC_DOC = ("Stochastic gradient HMC: z = (θ, r), H = U + rᵀr/2M, D = diag(0, C·I), Q = [[0, −I], [I, 0]]; "
             "noise N(0, ε(2C − εB̂)). integrator: euler (momentum first) or splitting (ABOBA).")
register(SamplerSpec(
    "sghmc", "SGHMC", "recipe paper Eq. (12) (Chen, Fox & Guestrin 2014)", SGHMC_DOC,
    dict(eps=0.05, C=1.0, M=1.0, Bhat=0.0, resample_every=0, integrator="euler"), momentum,
    sghmc_recipe, sghmc_fast, fast_only=dict(integrator="splitting"), init_aux=_init_momentum,
    family="hamiltonian", choices=dict(integrator=("euler", "splitting"))))

register(SamplerSpec(
    "sghmc-naive", "naive SGHMC", "recipe paper Eq. (11) (Chen, Fox & Guestrin 2014, Eq. 4)",
    "HMC with ∇U replaced by a noisy ∇Ũ and nothing else: the SGHMC recipe with the friction D∇H dropped. "
    "Its only diffusion is the gradient noise's, D = diag(0, εV/2) (C defaults to that, and Bhat to V, "
    "so nothing is injected). Momentum resampled every resample_every steps (Chen et al. use 50).",
    dict(eps=0.1, C=None, M=1.0, Bhat=None, resample_every=50, integrator="euler"), momentum,
    sghmc_recipe, sghmc_fast, fast_only=dict(integrator="splitting"), init_aux=_init_momentum,
    corrected="sghmc", family="hamiltonian", choices=dict(integrator=("euler", "splitting"))))


# -- thermostats ---------------------------------------------------------------------
def _thermostat_recipe(s, multivariate: bool):
    d, A = s.dim, s["A"]
    xi_names = _names("xi", d) if multivariate else ["xi"]
    sym = StateSymbols.make(d, momentum(d, s.params) + xi_names)
    r, xi = sym.aux[:d], sym.aux[d:]
    n = 2 * d + len(xi)
    Q = zeros(n, n)
    for i in range(d):
        Q[i, d + i], Q[d + i, i] = -1, 1
        k = 2 * d + (i if multivariate else 0)
        coupling = r[i] if multivariate else r[i] / d
        Q[d + i, k], Q[k, d + i] = coupling, -coupling
    D = sympy.diag(zeros(d, d), A * eye(d), zeros(len(xi), len(xi)))
    # erratum 2: with Q_{r,xi} = r/d the thermostat energy is (d/2)(xi - A)^2
    thermo = sum((x - A) ** 2 for x in xi) / 2 if multivariate else Rational(d, 2) * (xi[0] - A) ** 2
    kinetic = sum(v ** 2 for v in r) / 2 + thermo
    xi_sd = 1.0 if multivariate else 1.0 / np.sqrt(d)
    return Recipe(s.name, sym, kinetic, D, Q, blocks=_hamiltonian_blocks(d, n),
                  aux_box=[(-4.0, 4.0)] * d + [(A - 4 * xi_sd, A + 4 * xi_sd)] * len(xi),
                  description="z = (theta, r, xi), thermostat coupling through Q")


def _thermostat_fast(s, z, rng, multivariate: bool):
    d, eps, A = s.dim, s["eps"], s["A"]
    theta, r, xi = z[:, :d], z[:, d:2 * d], z[:, 2 * d:]
    if s.params.get("integrator") == "splitting":
        return _msgnht_splitting(s, theta, r, xi, rng, eps, A)
    _, g = s.oracle(theta, rng)
    b = _scalar_bhat(s, theta)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    r_new = r - eps * (g + xi * r) + _kick(eps * (2 * A - eps * b), r.shape, rng)
    theta_new = theta + eps * r_new
    heat = r_new ** 2 if multivariate else (r_new ** 2).mean(axis=1, keepdims=True)
    return np.concatenate([theta_new, r_new, xi + eps * (heat - 1.0)], axis=1)


def _msgnht_splitting(s, theta, r, xi, rng, eps, A):
    """A(h/2) B(h/2) O(h) B(h/2) A(h/2) for mSGNHT (notes 003, with the erratum xi <- xi + ...)."""
    theta = theta + 0.5 * eps * r
    xi = xi + 0.5 * eps * (r ** 2 - 1.0)
    r = r * np.exp(-0.5 * eps * xi)
    _, g = s.oracle(theta, rng)
    b = _scalar_bhat(s, theta)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    r = r - eps * g + _kick(eps * (2 * A - eps * b), r.shape, rng)
    r = r * np.exp(-0.5 * eps * xi)
    theta = theta + 0.5 * eps * r
    xi = xi + 0.5 * eps * (r ** 2 - 1.0)
    return np.concatenate([theta, r, xi], axis=1)


def _init_thermostat(s, chains, rng):
    n_xi = s.dim if s.name == "msgnht" else 1
    return np.concatenate([rng.standard_normal((chains, s.dim)), np.full((chains, n_xi), s["A"])], axis=1)


register(SamplerSpec(
    "sgnht", "SGNHT", "recipe paper Eq. (15) (Ding et al. 2014), H with (d/2)(ξ − A)² (seeds erratum 2)",
    "Stochastic gradient Nosé–Hoover thermostat: z = (θ, r, ξ), one scalar ξ that drives rᵀr/d to 1. "
    "D = diag(0, A·I, 0), Q couples r and ξ through r/d; Γ_ξ = −1.",
    dict(eps=0.02, A=1.0, Bhat=0.0), lambda d, p: momentum(d, p) + ["xi"],
    lambda s: _thermostat_recipe(s, False), lambda s, z, rng: _thermostat_fast(s, z, rng, False),
    init_aux=_init_thermostat, family="thermostat"))

register(SamplerSpec(
    "msgnht", "mSGNHT", "notes 003, mSGNHT (Ding et al. 2014; Gan et al. 2015)",
    "Multivariate SGNHT: one thermostat ξ_i per coordinate, ξ̇_i = r_i² − 1; H with Σ(ξ_i − A)²/2. "
    "integrator: euler or splitting (ABOBA, notes 003).",
    dict(eps=0.02, A=1.0, Bhat=0.0, integrator="euler"), lambda d, p: momentum(d, p) + _names("xi", d),
    lambda s: _thermostat_recipe(s, True), lambda s, z, rng: _thermostat_fast(s, z, rng, True),
    fast_only=dict(integrator="splitting"), init_aux=_init_thermostat, family="thermostat",
    choices=dict(integrator=("euler", "splitting"))))


# -- SGRHMC, corrected and naive -----------------------------------------------------
def sgrhmc_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, momentum(d, s.params))
    r = Matrix(sym.aux)
    ginv = _level_metric(s, sym)
    half = sqrt(ginv)   # G^{-1/2}
    D = sympy.diag(zeros(d, d), ginv * eye(d))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -half * eye(d)], [half * eye(d), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / 2, D, Q, blocks=_hamiltonian_blocks(d, 2 * d),
                  drop={"gamma"} if s.spec.naive else (), aux_box=[(-4.0, 4.0)] * d,
                  description="z = (theta, r), H = U + r.r/2, D = diag(0, G^-1), Q = [[0, -G^-1/2], [G^-1/2, 0]]")


def sgrhmc_fast(s, z, rng):
    d, eps, mD = s.dim, s["eps"], s["metric_D"]
    theta, r = z[:, :d], z[:, d:]
    u, g = s.oracle(theta, rng, value=True)
    b = _scalar_bhat(s, theta)
    if b is None:
        raise SamplerError(FAST_SCALAR_ONLY)
    w = (u + s.metric_C)[:, None]
    half = np.sqrt(mD) * np.abs(w) ** 0.25                       # G^{-1/2}
    drift = -half * g - half ** 2 * r
    if not s.spec.naive:   # Gamma_r = grad_theta G^{-1/2} = (dG^{-1/2}/dU) grad U
        drift += 0.25 * np.sqrt(mD) * np.sign(w) * np.abs(w) ** -0.75 * g
    r_new = r + eps * drift + _kick(eps * (2 - eps * b) * half ** 2, r.shape, rng)
    return np.concatenate([theta + eps * half * r_new, r_new], axis=1)


SGRHMC_PARAMS = dict(eps=0.02, metric_D=1.5, metric_C=None, Bhat=0.0, resample_every=0)
register(SamplerSpec(
    "sgrhmc", "gSGRHMC", "recipe paper Eq. (17) / Algorithm 1 (seeds erratum 1: Algorithm 1's signs)",
    "Generalised stochastic gradient Riemann HMC: D = diag(0, G⁻¹), Q = [[0, −G^{-1/2}], [G^{-1/2}, 0]] with "
    "G⁻¹ = metric_D·sqrt|U + metric_C| (Supplement F.1); Γ_r = ∇_θ G^{-1/2}. metric_C defaults to 0.5 − min U "
    "(the paper's 0.5 for U ≥ 0; for the double well the paper's C = 0.5 makes G singular near the modes).",
    dict(SGRHMC_PARAMS), momentum, sgrhmc_recipe, sgrhmc_fast, init_aux=_init_momentum, family="hamiltonian"))

register(SamplerSpec(
    "sgrhmc-naive", "naive SGRHMC", "recipe paper Eq. (16)",
    "SGRHMC without the correction Γ_r = ∇_θ G^{-1/2}: preconditioned HMC plus state-dependent friction, "
    "which leaves the target.",
    dict(SGRHMC_PARAMS), momentum, sgrhmc_recipe, sgrhmc_fast, init_aux=_init_momentum,
    corrected="sgrhmc", family="hamiltonian"))
