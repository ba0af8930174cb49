"""Pieces the Langevin, SGHMC, thermostat and SGRHMC families share: state names, the noisy
gradient with its scalar B-hat, the injected noise, the Hamiltonian update order, the level metric."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from sympy import Abs, sqrt

from samplers.engine.noise import scaled_noise
from samplers.sampler import SamplerError, scalar

FAST_SCALAR_ONLY = "the fast path takes a scalar Bhat"


def names(prefix: str, d: int) -> list[str]:
    return [prefix] if d == 1 else [f"{prefix}_{i + 1}" for i in range(d)]


def momentum_layout(d, p) -> dict:
    return {"momentum": names("r", d)}


def gradient(s, theta, rng, value: bool = False):
    """The oracle's (U, grad U~) at theta and the scalar B-hat of that draw (a per-chain or matrix
    B-hat goes through the engine instead)."""
    u, g = s.oracle(theta, rng, value=value)
    return u, g, scalar_bhat(s, theta)


def gradient_of(s) -> Callable:
    """(theta, rng) -> grad U~ for a prepared step: the oracle's own lean call where it has one."""
    lean = getattr(s.oracle, "gradient", None)
    if lean is not None:
        return lean()
    oracle = s.oracle
    return lambda theta, rng: oracle(theta, rng)[1]


def value_gradient_of(s) -> Callable:
    """(theta, rng) -> (U~, grad U~) for a prepared step: the oracle's own lean call where it has one."""
    lean = getattr(s.oracle, "value_gradient", None)
    if lean is not None:
        return lean()
    oracle = s.oracle
    return lambda theta, rng: oracle(theta, rng, value=True)


def scalar_bhat(s, theta) -> float:
    """B-hat for the gradient the oracle just drew at theta, which a fast path needs to be one number."""
    b = s.current_bhat(theta)
    if not scalar(b):
        raise SamplerError(FAST_SCALAR_ONLY)
    return float(b)


def fixed_bhat(s) -> bool:
    """Whether B-hat is the same number at every step: given as a parameter, or the oracle's estimate where the
    oracle's is a constant (simulated noise: its V), which a prepared step then reads once."""
    return s.bhat is not None or getattr(s.oracle, "constant_bhat", False)


def constants(dtype, *values) -> list:
    """A prepared step's coefficients as 0-d arrays of the state's dtype: numpy converts a Python float
    operand again on every call (0.3 us of a 0.4 us multiply at 10^3 float32 chains), a 0-d array of the
    operand's own dtype not at all. The same bits: a Python float is rounded to the array's dtype anyway."""
    return [np.array(v, dtype) for v in values]


def kicker(s, dtype, var_of) -> Callable:
    """The injected noise of a prepared step, kick(theta, shape, rng) = sqrt(var_of(b)) N(0, 1) with b the
    B-hat of the gradient just drawn at theta (called right after the oracle, as `gradient` asks for it); for a
    fixed B-hat (`fixed_bhat`) its scale is made once."""
    if not fixed_bhat(s):   # the oracle's estimate, from the draw it just made
        return lambda theta, shape, rng: kick(var_of(scalar_bhat(s, theta)), shape, rng)
    var = var_of(scalar_bhat(s, None))
    if not var >= 0:     # kick's checks, every step as before
        return lambda theta, shape, rng: kick(var, shape, rng)
    (scale,) = constants(dtype, math.sqrt(var))

    def kick_fixed(theta, shape, rng):
        xi = rng.standard_normal(shape)
        xi *= scale
        return xi
    return kick_fixed


def kick(var, shape, rng):
    """sqrt(var) * N(0, 1); var is the per-coordinate variance eps (2D - eps B^)."""
    xi = rng.standard_normal(shape)
    if scalar(var) and var >= 0:   # the common case, without temporaries
        xi *= math.sqrt(var)
        return xi
    return scaled_noise(np.broadcast_to(var, shape), xi)


def noise_level(oracle) -> float:
    """A scalar gradient-noise variance V when the oracle knows one (simulated noise), else 0."""
    V = getattr(oracle, "V", None)
    if V is None:
        return 0.0
    V = np.asarray(V, float)
    return float(V) if V.ndim == 0 else float(np.trace(V) / V.shape[0])


def hamiltonian_blocks(d: int, n: int):
    """Momentum (and thermostat) first, then position: [r], [theta], [rest]."""
    blocks = [list(range(d, 2 * d)), list(range(d))]
    if n > 2 * d:
        blocks.append(list(range(2 * d, n)))
    return blocks


def level_metric(s, sym):
    """G(theta)^{-1} = metric_D sqrt|U + metric_C| (recipe paper, Supplement F.1)."""
    return s["metric_D"] * sqrt(Abs(sym.U + s.metric_C))


def init_momentum(s, chains, rng):
    """r ~ N(0, M / beta), the momentum's law under exp(-beta H)."""
    return np.sqrt(s.params.get("M", 1.0) / s.beta) * rng.standard_normal((chains, s.dim))
