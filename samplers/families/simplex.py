"""Samplers for the positive line and the probability simplex (Baker, Fearnhead, Fox & Nemeth 2018).

Both samplers follow the CIR diffusion d theta = (a - theta) dt + sqrt(2 theta) dW of Eq. (2.1), whose
stationary law is Gamma(a, 1); in the recipe it is z = theta, H = U, D = diag(theta), Q = 0
(`cir_recipe`). They differ in how they move along it:

* ``scir`` draws the exact transition over a step h (Eq. 2.2, docs/errata.md E6):
  theta' = W / (2c), c = 1 / (1 - e^{-h}), W ~ noncentral chi-square(df = 2 a-hat, nonc = 2 c theta e^{-h}),
  with a-hat = alpha + (N/n) sum_{i in S} z_i redrawn from a fresh minibatch every step (Eq. 2.3,
  Algorithm 1). No discretisation error, so no boundary bias (Theorem 3.1, Corollary 3.2).
* ``sgrld-simplex`` is Patterson & Teh's SGRLD in the expanded-mean parameterisation (mirrored
  gamma prior): theta <- |theta + (eps/2)(alpha - theta + (N/n) sum_{i in S}(z_i - omega)) + sqrt(eps theta) xi|,
  an Euler-Maruyama step with the reflection |.|; the comparator of the SCIR paper (§1.3, Fig. 1-2).

Targets are the `SimplexPotential`s of `dirichlet.py` (gamma:a, dirichlet:..., sparse-/dense-dirichlet).
The state is theta; what a run keeps is `potential.theta_view(theta)` = omega on the simplex.
Minibatches come from the oracle's batch size (`--batch n`): each chain draws its own n indices,
with replacement, every step. Without a minibatch oracle the full data are used.
"""
from __future__ import annotations

import numpy as np
from sympy import Abs, diag

from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.gradients import Minibatch
from samplers.sampler import SamplerError, SamplerSpec
from samplers.targets.simplex import SimplexPotential


def _target(s) -> SimplexPotential:
    pot = s.potential
    if not isinstance(pot, SimplexPotential):
        raise SamplerError(f"{s.name} samples Gamma and Dirichlet targets (gamma:a, dirichlet:c1,...,cd, "
                           f"sparse-dirichlet, dense-dirichlet), not '{pot.name}'")
    if getattr(s.oracle, "noisy", False) and not isinstance(s.oracle, Minibatch):
        raise SamplerError(f"{s.name} takes its noise from real minibatches of the data (--batch n), "
                           "not from simulated gradient noise")
    return pot


def _check_target(s, chains, rng):
    """init_aux hook: refuse a target the sampler cannot run on before any step is taken."""
    _target(s)
    return np.zeros((chains, 0))


def _batch_indices(s, chains, rng):
    """Each chain's minibatch (chains, n) drawn with replacement, or None for the full data."""
    if isinstance(s.oracle, Minibatch):
        return rng.integers(0, s.potential.data.n, size=(chains, s.oracle.batch))
    return None


def shape_estimate(s, chains, rng) -> np.ndarray:
    """a-hat per chain and coordinate (chains, d): alpha + (N/n) sum_{i in S} z_i, or the exact a."""
    pot = _target(s)
    idx = _batch_indices(s, chains, rng)
    if idx is None:
        return np.broadcast_to(pot.shape, (chains, pot.dim))
    return pot.data.shape_estimate(idx)


def cir_transition(theta, a, h, rng):
    """The exact CIR transition over time h (Eq. 2.2; docs/errata.md, E6): theta' = W / (2c), c = 1 / (1 - e^{-h}),
    W ~ noncentral chi-square(df = 2a, noncentrality = 2 c theta e^{-h})."""
    c = -1.0 / np.expm1(-h)                         # 1 / (1 - e^{-h}), accurate for small h
    return rng.noncentral_chisquare(2.0 * a, 2.0 * c * theta * np.exp(-h)) / (2.0 * c)


def scir_fast(s, z, rng, t):
    """One exact CIR transition over h with a-hat from a fresh minibatch (Eq. 2.3)."""
    theta = np.abs(z)   # a start drawn around the mean may be negative: the CIR is started at |theta|
    return cir_transition(theta, shape_estimate(s, z.shape[0], rng), s.step_size(t), rng), ONE_GRADIENT


def sgrld_simplex_fast(s, z, rng, t):
    """Patterson & Teh (2013), expanded mean: an Euler-Maruyama step of the mirrored CIR-type diffusion."""
    pot = _target(s)
    eps = s.step_size(t)
    theta = np.abs(z)
    c = z.shape[0]
    if pot.data is None:                            # gamma:a, no data: drift a - theta
        drift = pot.shape - theta
    else:
        data = pot.data
        omega = theta / theta.sum(1, keepdims=True)
        idx = _batch_indices(s, c, rng)
        counts = data.counts if idx is None else (data.n / idx.shape[1]) * data.batch_counts(idx)
        drift = data.alpha - theta + counts - data.n * omega
    noise = np.sqrt(eps * theta) * rng.standard_normal(theta.shape)
    return np.abs(theta + 0.5 * eps * drift + noise), ONE_GRADIENT


def _positive(name):
    def aux(d, params):
        if not params[name] > 0:
            raise SamplerError(f"{name} must be > 0, got {params[name]}")
        return {}
    return aux


def cir_recipe(potential: SimplexPotential) -> Recipe:
    """The continuous dynamics both samplers follow, as a recipe: H = U, D = diag(|theta|), Q = 0.

    Gamma_j = d|theta_j|/d theta_j = 1, so on theta > 0 the drift is -theta (1 - (a - 1)/theta) + 1 = a - theta:
    Eq. (2.1). |theta| (the mirrored form of Patterson & Teh) keeps D positive semidefinite on the
    engine's probe points; on the target's support it is theta.
    """
    d = potential.dim
    sym = StateSymbols.make(d, [])
    return Recipe("cir", sym, 0, diag(*[Abs(t) for t in sym.theta]), diag(*([0] * d)),
                  description="z = theta, H = U, D = diag(theta), Q = 0 (CIR, SCIR paper Eq. 2.1)")


def omega(s, z) -> np.ndarray:
    """The simplex point of each chain (or theta itself on the positive line)."""
    return _target(s).theta_view(z[:, : s.dim])


SCIR = SamplerSpec(
    name="scir", title="SCIR", source="Baker, Fearnhead, Fox & Nemeth (2018) Eq. (2.2)-(2.3), Algorithm 1 (errata E6)",
    doc="Stochastic Cox-Ingersoll-Ross: each coordinate moves by the exact CIR transition over a step h, "
    "θ' = W/(2c), c = 1/(1 − e^{−h}), W ~ χ²'(2â, 2cθe^{−h}), with â = α + (N/n)Σ_{i∈S} z_i from a fresh "
    "minibatch each step (--batch n; full data without). Stationary law Gamma(a, 1) per coordinate, and "
    "ω = θ/Σθ ~ Dir(a): no discretisation error, no boundary bias. Runs keep ω on simplex targets. "
    "Targets: gamma:a, dirichlet:c1,...,cd, sparse-dirichlet, dense-dirichlet.",
    defaults=dict(h=0.1), layout=_positive("h"), fast=scir_fast, init_aux=_check_target, family="simplex",
    exact=True)

SGRLD_SIMPLEX = SamplerSpec(
    name="sgrld-simplex", title="SGRLD (simplex)",
    source="Patterson & Teh (2013), expanded-mean SGRLD, as compared in Baker et al. (2018) §1.3",
    doc="SGRLD on the simplex, expanded-mean parameterisation with a mirrored gamma prior: "
    "θ ← |θ + (ε/2)(α − θ + (N/n)Σ_{i∈S}(z_i − ω)) + sqrt(εθ)·ξ|, ω = θ/Σθ, ξ ~ N(0, I): an Euler-Maruyama "
    "step (of size ε/2) of the diffusion SCIR simulates exactly, reflected at 0. Its discretisation error "
    "biases small ω_j upwards (Proposition 1.1, Fig. 1). On gamma:a the drift is a − θ.",
    defaults=dict(eps=1e-3), layout=_positive("eps"), fast=sgrld_simplex_fast, init_aux=_check_target,
    family="simplex")
