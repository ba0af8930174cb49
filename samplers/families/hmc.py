"""Hamiltonian Monte Carlo: L leapfrog steps and a Metropolis test per proposal, vectorised over chains
(Fu, Luo & Zhang 2016, Algorithm 1; Neal 2011), acceptance min{1, exp(H0 - H1)} (docs/errata.md, E4).

In the recipe HMC is D = 0, Q = [[0, -I], [I, 0]]; leapfrog, not the engine's Euler step, is the
integrator it is defined with, so `LeapfrogRecipe` steps any D = 0 recipe whose Q couples theta and p
that way. Quasi-Newton HMC (qnhmc.py) reuses the proposal with a curvature memory. Each proposal
reports its acceptances and energy error in its StepInfo.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Matrix, zeros

from samplers.engine.info import StepInfo
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import names
from samplers.sampler import EPS, M, Param, SamplerSpec, choice

DIVERGENT = 1000.0   # |H1 - H0| beyond which a trajectory counts as divergent (Stan's threshold)


def hmc_layout(d, params):
    return {"momentum": names("r", d)}


def init_momentum(s, chains, rng):
    """p ~ N(0, M / beta), the momentum's law under exp(-beta H)."""
    return np.sqrt(s["M"] / s.beta) * rng.standard_normal((chains, s.dim))




def proposal(s, z, rng, oracle, force, velocity, t: int, memory=None):
    """One leapfrog trajectory of L steps from z and a Metropolis test, for every chain.

    force(q, p, g, z) and velocity(q, p, z) are the p- and theta-components of the drift for the
    frozen curvature in z; the fast paths write them out, the recipe engine evaluates its (H, D, Q).
    memory: the curvature memory that follows z's momentum (QNHMC's B), or None.
    Random draws, in order: the momentum, the batch of an oracle that holds one per proposal, the
    oracle's noise at each of the L + 1 gradient evaluations, one uniform per chain (drawn with or
    without the Metropolis test).

    An oracle with `fresh_half_kicks = True` is asked again at each interior point, so every half-kick gets a
    noisy gradient of its own (2L evaluations): Chen, Fox & Guestrin's code for their Fig. 1 calls its noisy
    gradient once per half-kick, and with noise that halves the variance of each full kick's noise (two
    independent draws averaged), which decides how far noisy HMC without the test strays from the target.

    At inverse temperature beta the target is exp(-beta H): p ~ N(0, M / beta) and the test accepts with
    probability min{1, exp(beta (H0 - H1))}; the flow of H is the flow of beta H with time rescaled,
    so the leapfrog map itself (volume preserving, reversible) does not change.
    """
    with np.errstate(all="ignore"):   # a trajectory that blows up is rejected (or left to the guard)
        return _proposal(s, z, rng, oracle, force, velocity, t, memory)


def _proposal(s, z, rng, oracle, force, velocity, t, memory):
    d, eps, L, M, beta = s.dim, s.step_size(t), int(s["L"]), s["M"], s.beta
    c = z.shape[0]
    theta, rest = z[:, :d], z[:, 2 * d:]
    p0 = np.sqrt(M / beta) * rng.standard_normal((c, d))
    zc = z.copy()
    zc[:, d: 2 * d] = p0
    start = getattr(oracle, "start_proposal", None)
    if start is not None:   # a minibatch held for the whole trajectory draws it here
        start(c, rng)
    u0 = s.potential.U(theta)
    # a batch held for the trajectory: the integrator's stability is judged on the U_S it integrated, whose
    # energy the exact H misses by the batch's error (hundreds in d = 2500, on every trajectory)
    held = getattr(oracle, "consistent_pairs", False)
    us0, g = oracle(theta, rng, value=held)
    p = p0 + 0.5 * eps * force(theta, p0, g, zc)
    q = theta
    learn = memory is not None and memory.learns(s, t)
    fresh = getattr(oracle, "fresh_half_kicks", False)
    pairs = []
    for i in range(L):
        q_new = q + eps * velocity(q, p, zc)
        us1, g_new = oracle(q_new, rng, value=held and i == L - 1)
        if learn:
            pairs.append((q_new - q, g_new - g, True))
        if fresh and i < L - 1:   # this step's closing half-kick, then the next one's opening half-kick
            p = p + 0.5 * eps * force(q_new, p, g_new, zc)
            p = p + 0.5 * eps * force(q_new, p, oracle(q_new, rng)[1], zc)
        else:
            p = p + (eps if i < L - 1 else 0.5 * eps) * force(q_new, p, g_new, zc)
        q, g = q_new, g_new
    h0 = u0 + np.einsum("ci,ci->c", p0, p0) / (2 * M)
    h1 = s.potential.U(q) + np.einsum("ci,ci->c", p, p) / (2 * M)
    log_u = np.log(rng.random(c))
    if s["metropolis"] == "on":
        accept = log_u < beta * (h0 - h1)   # NaN energies compare False: rejected
    else:
        accept = np.ones(c, bool)         # the dynamics alone; a blow-up is left to the divergence guard
    a = accept[:, None]
    out = np.empty_like(z)
    out[:, :d] = np.where(a, q, theta)
    out[:, d: 2 * d] = np.where(a, p, p0)
    if memory is not None:
        error = (us1 - us0 + np.einsum("ci,ci->c", p, p) / (2 * M) - np.einsum("ci,ci->c", p0, p0) / (2 * M)
                 if held else h1 - h0)
        out[:, 2 * d:] = memory.after(s, rest, pairs, a, learn, ~(np.abs(error) < DIVERGENT))
    return out, StepInfo(grad_evals=2 * L if fresh else L + 1, accepted=accept, energy_error=h1 - h0)



# -- fast paths: the vector fields written out ------------------------------------------------
def hmc_fast(s, z, rng, t):
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -g, lambda q, p, zc: p / M, t)



# -- the recipe view, and a generic leapfrog engine over it -------------------------------------
class LeapfrogRecipe(Recipe):
    """A D = 0 recipe whose Q couples theta and p only, stepped by leapfrog and a Metropolis test.

    The generic engine's Euler step would not conserve H; leapfrog is the integrator these
    samplers are defined with. `step` takes the theta- and p-rows of this recipe's own drift
    (so an edited (H, D, Q) changes the dynamics) and must equal the fast path step for step.
    """

    def __init__(self, *args, sampler=None, memory=None, **kwargs):
        self.sampler, self.memory = sampler, memory
        super().__init__(*args, **kwargs)

    def latex_update(self) -> str:
        return (r"\begin{aligned}&p \sim \mathcal N(0, M)\\ "
                r"&p \leftarrow p + \tfrac{\epsilon}{2} f_p,\ \ "
                r"(\theta \leftarrow \theta + \epsilon f_\theta,\ p \leftarrow p + \epsilon f_p)^{L},\ "
                r"\text{last kick } \tfrac{\epsilon}{2}\\ "
                r"&\text{accept with probability } \min\{1, e^{H_0 - H_1}\}\end{aligned}")

    def step(self, z, rng, oracle, eps, bhat=0.0, beta: float = 1.0):
        return self.advance(z, rng, oracle, eps, bhat)[0]

    def advance(self, z, rng, oracle, eps, bhat=0.0, t: int = 1, beta: float = 1.0):
        """The sampler's proposal at step t (its step size and beta are the sampler's: D = 0 and Gamma = 0,
        so beta enters only through the momentum's law and the test)."""
        s, d = self.sampler, self.dim
        p_rows, t_rows = np.arange(d, 2 * d), np.arange(d)

        def assemble(q, p, zc):
            zz = zc.copy()
            zz[:, :d], zz[:, d: 2 * d] = q, p
            return zz

        def force(q, p, g, zc):
            return self.drift(assemble(q, p, zc), None, g, p_rows)

        def velocity(q, p, zc):
            return self.drift(assemble(q, p, zc), None, np.zeros_like(q), t_rows)

        return proposal(s, z, rng, oracle, force, velocity, t, self.memory)



def hmc_recipe(s):
    d, M = s.dim, s["M"]
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -sympy.eye(d)], [sympy.eye(d), zeros(d, d)]]))
    return LeapfrogRecipe("hmc", sym, (r.T * r)[0] / (2 * M), zeros(2 * d, 2 * d), Q, sampler=s,
                          aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d,
                          description="z = (theta, p), H = U + p.p/2M, D = 0, Q = [[0, -I], [I, 0]]")



# -- registry ------------------------------------------------------------------------------------
L = Param("L", 10, "leapfrog steps per proposal", type=int, lo=1, hi=1000, unit="leapfrog steps")
METROPOLIS = choice("metropolis", "on", ("on", "off"), "the Metropolis test min{1, exp(H₀ − H₁)} of each proposal")
HMC_PARAMS = (EPS.at(0.1), L, M, METROPOLIS)

HMC = SamplerSpec(
    name="hmc", title="HMC",
    source="Fu, Luo & Zhang (2016) Algorithm 1 / Eq. (3) (Neal 2011); acceptance min{1, exp(H0 − H1)}",
    doc="Hamiltonian Monte Carlo: p ~ N(0, M), L leapfrog steps of θ̇ = M⁻¹p, ṗ = −∇U, then accept with "
    "probability min{1, exp(H₀ − H₁)}, H = U + pᵀp/2M evaluated with the exact U (errata E4). One step "
    "is one proposal. In the recipe: D = 0, Q = [[0, −I], [I, 0]]. With a noisy gradient oracle the leapfrog "
    "map stays volume preserving and reversible in law, so the test with the exact U keeps it exact. "
    "Each proposal reports its acceptances in its StepInfo; runs keep the acceptance rate.",
    params=HMC_PARAMS, layout=hmc_layout, recipe=hmc_recipe, fast=hmc_fast, init_aux=init_momentum,
    family="hamiltonian", exact=True)

