"""Pieces the Langevin, SGHMC, thermostat and SGRHMC families share: state names, the noisy
gradient with its scalar B-hat, the injected noise, the Hamiltonian update order, the level metric."""
from __future__ import annotations

import math

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
    b = s.current_bhat(theta)
    if not scalar(b):
        raise SamplerError(FAST_SCALAR_ONLY)
    return u, g, float(b)


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
