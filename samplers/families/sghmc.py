"""SGHMC and its naive form (no friction): z = (theta, r), H = U + r.r/2M."""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Matrix, eye, zeros

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import (
    constants,
    gradient,
    gradient_of,
    hamiltonian_blocks,
    init_momentum,
    kick,
    kicker,
    momentum_layout,
    names,
    noise_level,
    scalar_bhat,
)
from samplers.gradients import add_in_order
from samplers.sampler import BHAT, EPS, INTEGRATOR, RESAMPLE, C, M, SamplerSpec


# -- SGHMC and its naive form ------------------------------------------------------
def _sghmc_C(s) -> float:
    """Naive SGHMC injects no noise: its only diffusion is the gradient noise's, eps V / 2, which at inverse
    temperature beta is D / beta, so C = beta eps V / 2 (eps: the base step, not a scheduled one)."""
    if s["C"] is not None:
        return float(s["C"])
    return 0.5 * s.beta * s["eps"] * noise_level(s.oracle) if s.spec.naive else 1.0


def sghmc_recipe(s):
    d = s.dim
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    C, M = _sghmc_C(s), s["M"]
    D = sympy.diag(zeros(d, d), C * eye(d))
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -eye(d)], [eye(d), zeros(d, d)]]))
    return Recipe(s.name, sym, (r.T * r)[0] / (2 * M), D, Q, blocks=hamiltonian_blocks(d, 2 * d),
                  drop={"friction"} if s.spec.naive else (), aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d,
                  description="z = (theta, r), H = U + r.r/2M, D = diag(0, C), Q = [[0, -I], [I, 0]]")


def sghmc_fast(s, z, rng, t):
    if s["integrator"] == "splitting":
        d, eps = s.dim, s.step_size(t)
        C = _sghmc_C(s)
        return _sghmc_splitting(s, z[:, :d], z[:, d:], rng, eps, C, 0.0 if s.spec.naive else C, s["M"], s.beta)
    return sghmc_prepare(s, z.dtype, s.step_size(t))(z, rng, t)


def sghmc_prepare(s, dtype, eps):
    if s["integrator"] == "splitting":
        return None
    d, M, beta, grad = s.dim, s["M"], s.beta, gradient_of(s)
    C = _sghmc_C(s)
    friction = 0.0 if s.spec.naive else C
    decay, eps_, drift = constants(dtype, 1.0 - eps * friction / M, eps, eps / M)
    # with C = 0 the recipe has no diffusion and draws nothing (B-hat still asked for, as `gradient` does)
    noise = kicker(s, dtype, lambda b: eps * (2 * C / beta - eps * b)) if C else None
    auto = s.bhat is None

    def step(z, rng, t):
        theta, r = z[:, :d], z[:, d:]
        g = grad(theta, rng)
        # in place where possible: this is the path the speed benchmark holds to the RNG floor
        out = np.empty_like(z)
        theta_new, r_new = out[:, :d], out[:, d:]
        np.multiply(r, decay, out=r_new)
        g *= eps_
        r_new -= g
        if noise is not None:
            add_in_order(r_new, noise(theta, r.shape, rng))
        elif auto:
            scalar_bhat(s, theta)
        np.multiply(r_new, drift, out=theta_new)
        theta_new += theta   # on the view: out[:, :d] += theta would also write the view back into out
        return out, ONE_GRADIENT
    return step


def _sghmc_splitting(s, theta, r, rng, eps, C, friction, M, beta):
    """Symmetric splitting A(h/2) B(h/2) O(h) B(h/2) A(h/2) (Oono 2016, lecture notes; Chen, Ding & Carin 2015)."""
    damp = np.exp(-friction * eps / (2 * M))
    theta = theta + 0.5 * eps * r / M
    r = r * damp
    _, g, b = gradient(s, theta, rng)
    r = r - eps * g + (kick(eps * (2 * C / beta - eps * b), r.shape, rng) if C else 0.0)
    r = r * damp
    theta = theta + 0.5 * eps * r / M
    return np.concatenate([theta, r], axis=1), ONE_GRADIENT


SGHMC_DOC = ("Stochastic gradient HMC: z = (θ, r), H = U + rᵀr/2M, D = diag(0, C·I), Q = [[0, −I], [I, 0]]; "
             "noise N(0, ε(2C/β − εB̂)) at inverse temperature β, r ~ N(0, M/β). "
             "integrator: euler (momentum first) or splitting (ABOBA).")
# auto: 1 for SGHMC; for naive SGHMC the gradient noise's own, so that it injects nothing (_sghmc_C)
SGHMC_C = C.at(1.0, auto="1; in naive SGHMC the gradient noise's own, βεV/2")
SGHMC = SamplerSpec(
    name="sghmc", title="SGHMC", source="recipe paper Eq. (12) (Chen, Fox & Guestrin 2014)", doc=SGHMC_DOC,
    params=(EPS.at(0.05), SGHMC_C.at(1.0), M, BHAT, RESAMPLE, INTEGRATOR), layout=momentum_layout,
    recipe=sghmc_recipe, fast=sghmc_fast, prepare=sghmc_prepare, fast_only=dict(integrator="splitting"),
    init_aux=init_momentum, blockwise=True, family="hamiltonian")

SGHMC_NAIVE = SamplerSpec(
    name="sghmc-naive", title="naive SGHMC", source="recipe paper Eq. (11) (Chen, Fox & Guestrin 2014, Eq. 4)",
    doc="HMC with ∇U replaced by a noisy ∇Ũ and nothing else: the SGHMC recipe with the friction D∇H dropped. "
    "Its only diffusion is the gradient noise's, D = diag(0, εV/2) (C defaults to that, and Bhat to V, "
    "so nothing is injected). Momentum resampled every resample_every steps (Chen et al. use 50).",
    params=(EPS.at(0.1), SGHMC_C.at(None), M, BHAT.at(None), RESAMPLE.at(50), INTEGRATOR),
    layout=momentum_layout, recipe=sghmc_recipe, fast=sghmc_fast, prepare=sghmc_prepare,
    fast_only=dict(integrator="splitting"), init_aux=init_momentum, blockwise=True, corrected="sghmc",
    family="hamiltonian")

