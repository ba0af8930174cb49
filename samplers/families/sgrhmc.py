"""gSGRHMC and naive SGRHMC (without Gamma): z = (theta, r), D = diag(0, G^-1)."""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Matrix, eye, sqrt, zeros

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.noise import scaled_noise
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import (
    constants,
    fixed_bhat,
    gradient,
    hamiltonian_blocks,
    init_momentum,
    kick,
    level_metric,
    momentum_layout,
    names,
    scalar_bhat,
    value_gradient_of,
)
from samplers.sampler import BHAT, EPS, METRIC_C, METRIC_D, RESAMPLE, SamplerSpec


# -- SGRHMC, corrected and naive -----------------------------------------------------
def sgrhmc_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    ginv = level_metric(s, sym)
    half = sqrt(ginv)   # G^{-1/2}
    D = sympy.diag(zeros(d, d), ginv * eye(d))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -half * eye(d)], [half * eye(d), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / 2, D, Q, blocks=hamiltonian_blocks(d, 2 * d),
                  drop={"gamma"} if s.spec.naive else (), aux_box=[(-4.0, 4.0)] * d,
                  description="z = (theta, r), H = U + r.r/2, D = diag(0, G^-1), Q = [[0, -G^-1/2], [G^-1/2, 0]]")


def sgrhmc_fast(s, z, rng, t):
    d, eps, mD, beta = s.dim, s.step_size(t), s["metric_D"], s.beta
    theta, r = z[:, :d], z[:, d:]
    u, g, b = gradient(s, theta, rng, value=True)
    w = (u + s.metric_C)[:, None]
    half = np.sqrt(mD) * np.abs(w) ** 0.25                       # G^{-1/2}
    drift = -half * g - half ** 2 * r
    if not s.spec.naive:   # Gamma_r / beta, Gamma_r = grad_theta G^{-1/2} = (dG^{-1/2}/dU) grad U
        drift += (0.25 / beta) * np.sqrt(mD) * np.sign(w) * np.abs(w) ** -0.75 * g
    r_new = r + eps * drift + kick(eps * (2 / beta - eps * b) * half ** 2, r.shape, rng)
    return np.concatenate([theta + eps * half * r_new, r_new], axis=1), ONE_GRADIENT


def sgrhmc_prepare(s, dtype, eps):
    """`sgrhmc_fast` for a run of steps at a constant eps, its coefficients made once: the same operations in the
    same order, so the same bits (at 10^3 chains a step is mostly its Python; the lab steps the double well so)."""
    d, beta, oracle, naive = s.dim, s.beta, s.oracle, s.spec.naive
    root_mD, metric_C = np.sqrt(s["metric_D"]), s.metric_C
    gamma = (0.25 / beta) * np.sqrt(s["metric_D"])
    fixed = fixed_bhat(s)
    scale = eps * (2 / beta - eps * scalar_bhat(s, None)) if fixed else None

    def step(z, rng, t):
        theta, r = z[:, :d], z[:, d:]
        u, g = oracle(theta, rng, value=True)
        return finish(theta, r, u, g, rng)

    def finish(theta, r, u, g, rng):
        c = scale if fixed else eps * (2 / beta - eps * scalar_bhat(s, theta))
        w = (u + metric_C)[:, None]
        aw = np.abs(w)
        half = root_mD * aw ** 0.25
        half2 = half ** 2
        drift = -half * g - half2 * r
        if not naive:
            drift += gamma * np.sign(w) * aw ** -0.75 * g
        var = c * half2
        xi = rng.standard_normal(r.shape)
        if np.minimum.reduce(var, axis=None, initial=0.0) < 0:   # kick's check and message
            noise = scaled_noise(np.broadcast_to(var, r.shape), xi)
        else:   # kick's sqrt(clip(var, 0)) * xi: np.clip with no upper bound is np.maximum
            noise = np.sqrt(np.maximum(var, 0.0)) * xi
        r_new = r + eps * drift + noise
        return np.concatenate([theta + eps * half * r_new, r_new], axis=1), ONE_GRADIENT

    if np.dtype(dtype) == np.float64 and fixed and scale >= 0:
        return _sgrhmc_step64(d, value_gradient_of(s), naive, root_mD, metric_C, gamma, scale, eps, finish)
    return step


F64 = np.dtype(np.float64)


def _sgrhmc_step64(d, value_gradient, naive, root_mD, metric_C, gamma, scale, eps, finish):
    """`sgrhmc_prepare`'s step for a float64 state and a fixed scale c >= 0: each value is the same operation on the
    same operands (products turned around, which IEEE arithmetic leaves the same), computed in place and written
    into the new state, and without kick's check: c times a square is never below 0 (a NaN stays one). Its
    constants are 0-d float64 arrays (families.common.constants), which is the same only for a float64 U: another
    (a potential's own) goes on as `sgrhmc_prepare`'s step, `finish`."""
    eps_, c_, root_mD, metric_C, gamma = constants(np.float64, eps, scale, root_mD, metric_C, gamma)

    def step(z, rng, t):
        theta, r = z[:, :d], z[:, d:]
        u, g = value_gradient(theta, rng)
        if u.dtype is not F64:
            return finish(theta, r, u, g, rng)
        w = (u + metric_C)[:, None]
        aw = np.abs(w)
        half = aw ** 0.25
        half *= root_mD                          # root_mD * aw ** 0.25
        half2 = half * half                      # half ** 2 (numpy's square)
        drift = np.negative(half) * g            # -half * g - half2 * r
        drift -= half2 * r
        if not naive:
            corr = np.sign(w)
            corr *= gamma
            aw **= -0.75
            corr *= aw                           # gamma * sign(w) * aw ** -0.75
            drift += corr * g
        noise = rng.standard_normal(r.shape)
        half2 *= c_                              # var = c * half2 >= 0: kick's sqrt(max(var, 0)) is sqrt(var)
        np.sqrt(half2, out=half2)
        noise *= half2                           # sqrt(var) * xi
        out = np.empty_like(z)
        theta_new, r_new = out[:, :d], out[:, d:]
        drift *= eps_
        np.add(r, drift, out=r_new)              # r + eps * drift + noise
        r_new += noise
        half *= eps_                             # theta + eps * half * r_new
        np.multiply(half, r_new, out=theta_new)
        theta_new += theta
        return out, ONE_GRADIENT
    return step


SGRHMC_PARAMS = (EPS.at(0.02), METRIC_D, METRIC_C, BHAT, RESAMPLE)
SGRHMC = SamplerSpec(
    name="sgrhmc", title="gSGRHMC", source="recipe paper Eq. (17) / Algorithm 1 (with Algorithm 1's signs: errata E1)",
    doc="Generalised stochastic gradient Riemann HMC: D = diag(0, G⁻¹), Q = [[0, −G^{-1/2}], [G^{-1/2}, 0]] with "
    "G⁻¹ = metric_D·sqrt|U + metric_C| (Supplement F.1); Γ_r = ∇_θ G^{-1/2}. metric_C defaults to 0.5 − min U "
    "(the paper's 0.5 for U ≥ 0; for the double well the paper's C = 0.5 makes G singular near the modes).",
    params=SGRHMC_PARAMS, layout=momentum_layout, recipe=sgrhmc_recipe, fast=sgrhmc_fast,
    prepare=sgrhmc_prepare, init_aux=init_momentum, blockwise=True, family="hamiltonian")

SGRHMC_NAIVE = SamplerSpec(
    name="sgrhmc-naive", title="naive SGRHMC", source="recipe paper Eq. (16)",
    doc="SGRHMC without the correction Γ_r = ∇_θ G^{-1/2}: preconditioned HMC plus state-dependent friction, "
    "which leaves the target.",
    params=SGRHMC_PARAMS, layout=momentum_layout, recipe=sgrhmc_recipe, fast=sgrhmc_fast,
    prepare=sgrhmc_prepare, init_aux=init_momentum, blockwise=True, corrected="sgrhmc", family="hamiltonian")
