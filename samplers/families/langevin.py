"""SGLD and SGRLD: z = theta, H = U, D = I or G(theta)^-1, Q = 0."""
from __future__ import annotations

import numpy as np
from sympy import eye, zeros

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import (
    constants,
    gradient,
    gradient_of,
    kick,
    kicker,
    level_metric,
)
from samplers.gradients import add_in_order
from samplers.sampler import BHAT, EPS, METRIC_C, METRIC_D, SamplerSpec


def sgld_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, [])
    return Recipe("sgld", sym, 0, eye(d), zeros(d, d), description="z = theta, H = U, D = I, Q = 0")


def sgld_fast(s, z, rng, t):
    return sgld_prepare(s, z.dtype, s.step_size(t))(z, rng, t)


def sgld_prepare(s, dtype, eps):
    beta, grad = s.beta, gradient_of(s)
    (minus_eps,) = constants(dtype, -eps)
    noise = kicker(s, dtype, lambda b: eps * (2.0 / beta - eps * b))

    def step(z, rng, t):
        g = grad(z, rng)
        xi = noise(z, z.shape, rng)
        g *= minus_eps   # the oracle's fresh array becomes the new state, without temporaries
        g += z
        add_in_order(g, xi)
        return g, ONE_GRADIENT
    return step


SGLD = SamplerSpec(
    name="sgld", title="SGLD", source="recipe paper Eq. (13) (Welling & Teh 2011)",
    doc="Stochastic gradient Langevin dynamics: z = θ, H = U, D = I, Q = 0; at inverse temperature β, "
    "θ ← θ − ε∇Ũ + N(0, ε(2/β − εB̂)).",
    params=(EPS.at(0.01), BHAT), layout=lambda d, p: {}, recipe=sgld_recipe, fast=sgld_fast, prepare=sgld_prepare,
    blockwise=True)


def sgrld_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, [])
    return Recipe("sgrld", sym, 0, level_metric(s, sym) * eye(d), zeros(d, d),
                  description="z = theta, H = U, D = G(theta)^-1, Q = 0")


def sgrld_fast(s, z, rng, t):
    eps, mD, beta = s.step_size(t), s["metric_D"], s.beta
    u, g, b = gradient(s, z, rng, value=True)
    w = (u + s.metric_C)[:, None]
    ginv = mD * np.sqrt(np.abs(w))
    dginv = 0.5 * mD * np.sign(w) / np.sqrt(np.abs(w))   # d G^-1 / dU; Gamma_i = dginv * dU/dtheta_i
    drift = dginv * g / beta - ginv * g                   # -D grad U + Gamma / beta
    return z + eps * drift + kick(eps * (2 * ginv / beta - eps * b * ginv ** 2), z.shape, rng), ONE_GRADIENT


SGRLD = SamplerSpec(
    name="sgrld", title="SGRLD", source="recipe paper Eq. (14) (Patterson & Teh 2013; Γ as in Xifara et al. 2014)",
    doc="Stochastic gradient Riemannian Langevin dynamics: D = G(θ)⁻¹ = metric_D·sqrt|U + metric_C|·I, "
    "Γ_i = Σ_j ∂_j G⁻¹_ij. metric_C defaults to 0.5 − min U, so U + C ≥ 0.5.",
    params=(EPS.at(0.003), METRIC_D, METRIC_C, BHAT), layout=lambda d, p: {}, recipe=sgrld_recipe,
    fast=sgrld_fast, blockwise=True)

