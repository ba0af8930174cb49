"""SGNHT and mSGNHT: z = (theta, r, xi), the thermostat coupled through Q."""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Rational, eye, zeros

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import (
    constants,
    gradient,
    gradient_of,
    hamiltonian_blocks,
    kick,
    kicker,
    names,
)
from samplers.gradients import add_in_order
from samplers.sampler import BHAT, EPS, INTEGRATOR, A, SamplerSpec


# -- thermostats ---------------------------------------------------------------------
def _thermostat_recipe(s, multivariate: bool):
    d, A = s.dim, s["A"]
    xi_names = names("xi", d) if multivariate else ["xi"]
    sym = StateSymbols.make(d, names("r", d) + xi_names)
    r, xi = sym.aux[:d], sym.aux[d:]
    n = 2 * d + len(xi)
    Q = zeros(n, n)
    for i in range(d):
        Q[i, d + i], Q[d + i, i] = -1, 1
        k = 2 * d + (i if multivariate else 0)
        coupling = r[i] if multivariate else r[i] / d
        Q[d + i, k], Q[k, d + i] = coupling, -coupling
    D = sympy.diag(zeros(d, d), A * eye(d), zeros(len(xi), len(xi)))
    # errata E2 (docs/errata.md): with Q_{r,xi} = r/d the thermostat energy is (d/2)(xi - A)^2, and with
    # Q_{r_i,xi_i} = r_i (mSGNHT) it is sum_i (xi_i - A)^2 / 2
    thermo = sum((x - A) ** 2 for x in xi) / 2 if multivariate else Rational(d, 2) * (xi[0] - A) ** 2
    kinetic = sum(v ** 2 for v in r) / 2 + thermo
    xi_sd = 1.0 if multivariate else 1.0 / np.sqrt(d)
    return Recipe(s.name, sym, kinetic, D, Q, blocks=hamiltonian_blocks(d, n),
                  aux_box=[(-4.0, 4.0)] * d + [(A - 4 * xi_sd, A + 4 * xi_sd)] * len(xi),
                  description="z = (theta, r, xi), thermostat coupling through Q")


def _thermostat_fast(s, z, rng, multivariate: bool, t: int = 1):
    d, eps = s.dim, s.step_size(t)
    if s.params.get("integrator") == "splitting":
        return _msgnht_splitting(s, z[:, :d], z[:, d:2 * d], z[:, 2 * d:], rng, eps, s["A"], s.beta)
    return _thermostat_prepare(s, z.dtype, eps, multivariate)(z, rng, t)


def _thermostat_prepare(s, dtype, eps, multivariate: bool):
    if s.params.get("integrator") == "splitting":
        return None
    d, A, beta, grad = s.dim, s["A"], s.beta, gradient_of(s)
    minus_eps, eps_, temperature = constants(dtype, -eps, eps, 1.0 / beta)
    noise = kicker(s, dtype, lambda b: eps * (2 * A / beta - eps * b))
    one_xi = multivariate or d == 1

    def step(z, rng, t):
        theta, r, xi = z[:, :d], z[:, d:2 * d], z[:, 2 * d:]
        g = grad(theta, rng)
        # r <- r - eps (g + xi r) + noise, theta <- theta + eps r_new, written into one new array in place
        out = np.empty_like(z)
        theta_new, r_new, xi_new = out[:, :d], out[:, d:2 * d], out[:, 2 * d:]
        np.multiply(xi, r, out=r_new)
        r_new += g
        r_new *= minus_eps
        r_new += r
        add_in_order(r_new, noise(theta, r.shape, rng))
        np.multiply(r_new, eps_, out=theta_new)
        theta_new += theta
        if one_xi:
            np.square(r_new, out=xi_new)
        else:
            np.mean(np.square(r_new), axis=1, keepdims=True, out=xi_new)
        # Gamma_xi = -1 enters as -1/beta: the thermostat drives the kinetic temperature to 1/beta
        xi_new -= temperature
        xi_new *= eps_
        xi_new += xi
        return out, ONE_GRADIENT
    return step


def _msgnht_splitting(s, theta, r, xi, rng, eps, A, beta):
    """A(h/2) B(h/2) O(h) B(h/2) A(h/2) for mSGNHT (Oono 2016, lecture notes, corrected: errata E5), at
    inverse temperature beta (noise 2A/beta, the thermostat's target r^2 = 1/beta)."""
    theta = theta + 0.5 * eps * r
    xi = xi + 0.5 * eps * (r ** 2 - 1.0 / beta)
    r = r * np.exp(-0.5 * eps * xi)
    _, g, b = gradient(s, theta, rng)
    r = r - eps * g + kick(eps * (2 * A / beta - eps * b), r.shape, rng)
    r = r * np.exp(-0.5 * eps * xi)
    theta = theta + 0.5 * eps * r
    xi = xi + 0.5 * eps * (r ** 2 - 1.0 / beta)
    return np.concatenate([theta, r, xi], axis=1), ONE_GRADIENT


def _init_thermostat(s, chains, rng):
    n_xi = len(s.aux_names) - s.dim   # one thermostat, or one per coordinate
    r = rng.standard_normal((chains, s.dim)) / np.sqrt(s.beta)   # r ~ N(0, 1/beta) under exp(-beta H)
    return np.concatenate([r, np.full((chains, n_xi), s["A"])], axis=1)


SGNHT = SamplerSpec(
    name="sgnht", title="SGNHT",
    source="recipe paper Eq. (15) (Ding et al. 2014), H with (d/2)(ξ − A)² (errata E2)",
    doc="Stochastic gradient Nosé–Hoover thermostat: z = (θ, r, ξ), one scalar ξ that drives rᵀr/d to 1. "
    "D = diag(0, A·I, 0), Q couples r and ξ through r/d; Γ_ξ = −1.",
    params=(EPS.at(0.02), A, BHAT), layout=lambda d, p: {"momentum": names("r", d), "thermostat": ["xi"]},
    recipe=lambda s: _thermostat_recipe(s, False), fast=lambda s, z, rng, t: _thermostat_fast(s, z, rng, False, t),
    prepare=lambda s, dtype, eps: _thermostat_prepare(s, dtype, eps, False), init_aux=_init_thermostat,
    blockwise=True, family="thermostat")

MSGNHT = SamplerSpec(
    name="msgnht", title="mSGNHT", source="Oono (2016) lecture notes, mSGNHT (Ding et al. 2014; Gan et al. 2015)",
    doc="Multivariate SGNHT: one thermostat ξ_i per coordinate, ξ̇_i = r_i² − 1; H with Σ(ξ_i − A)²/2. "
    "integrator: euler or splitting (ABOBA, Oono 2016; errata E5).",
    params=(EPS.at(0.02), A, BHAT, INTEGRATOR),
    layout=lambda d, p: {"momentum": names("r", d), "thermostat": names("xi", d)},
    recipe=lambda s: _thermostat_recipe(s, True), fast=lambda s, z, rng, t: _thermostat_fast(s, z, rng, True, t),
    prepare=lambda s, dtype, eps: _thermostat_prepare(s, dtype, eps, True), fast_only=dict(integrator="splitting"),
    init_aux=_init_thermostat, blockwise=True, family="thermostat")

