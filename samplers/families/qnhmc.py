"""Quasi-Newton HMC (Fu, Luo & Zhang), correct and naive: HMC's proposal (hmc.py) with a curvature
memory B in the state.

* ``qnhmc``: Fu, Luo & Zhang (2016), Algorithm 2. The dynamics are Eq. (7), theta' = C M^-1 p, p' = -C grad U,
  with C = B frozen for the whole proposal. B, an approximation of the inverse Hessian, is updated
  by BFGS (Eq. 1) from the leapfrog's (s, y) pairs (SR1 by default for a dense B, see below); on
  rejection it is reset to C (line 22).
  In the recipe this is D = 0, Q = [[0, -C], [C, 0]]: Theorem 3 is Theorem 1 of the recipe paper.
* ``qnhmc-naive``: Fu, Luo & Zhang (2016), Eq. (4), p' = -B grad U with the position update left unscaled.
  Its flow does not conserve H (dH/dt = p^T M^-1 (I - B) grad U), so exp(-H) is not invariant
  (Corollary 1). Without the Metropolis test (its default) it samples the wrong law.

The state of a quasi-Newton chain is (theta, p, curvature memory): B itself (dense BFGS, d*d
numbers) or the last m pairs (s, y) (L-BFGS). Keeping B in z makes it part of the Markov state,
which it is: it carries over from proposal to proposal, chain by chain, and the recipe engine,
the divergence guard and `run(..., keep_aux=True)` see it like any other auxiliary variable.

Each proposal reports its acceptances and energy error in its StepInfo. The choices the paper
leaves open (which pairs, B learnt only from exact or per-proposal minibatch gradients, B_CAP and restarts,
the initial scale, SR1 rather than BFGS for a dense B) and the measurements behind them: docs/notes/qnhmc.md.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Matrix, zeros

from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import names
from samplers.families.curvature import (
    LBFGSOperator,
    batched_matvec,
    bfgs_update,
    initial_scaling,
    lbfgs_append,
    sr1_update,
)
from samplers.families.hmc import (
    HMC_PARAMS,
    METROPOLIS,
    LeapfrogRecipe,
    init_momentum,
    proposal,
)
from samplers.sampler import Param, SamplerError, SamplerSpec, choice

AUTO_DENSE_MAX_DIM = 200   # dense BFGS up to this dimension (the paper's 100-d example uses BFGS)
AUTO_MEMORY = 7            # L-BFGS memory above it (the paper's choice for d = 784, §5.2)
QN_UPDATES = dict(bfgs=bfgs_update, sr1=sr1_update)
QN_UPDATE_CHOICES = ("auto", "sr1", "bfgs")   # auto: SR1 for a dense B, BFGS for L-BFGS
# B learns during the first ADAPT proposals (the lab's burn-in), then each chain keeps a fixed C and its
# kernel is exact; learning for ever (adapt = none, Algorithm 2 as printed) biases non-Gaussian targets
ADAPT = 100


def qn_memory(d: int, params: dict) -> int:
    """0 for dense BFGS, m > 0 for L-BFGS with m pairs (params['memory']: None = auto)."""
    m = params.get("memory")
    if m is None:
        return 0 if d <= AUTO_DENSE_MAX_DIM else AUTO_MEMORY
    return int(m)



def qn_layout(d, params) -> dict:
    """theta's momentum, then the curvature memory: B's d*d entries, or L-BFGS's m pairs (s, y)."""
    m = qn_memory(d, params)
    if m and params.get("update") == "sr1":
        raise SamplerError("update = sr1 needs the dense B (memory = 0); L-BFGS is BFGS only")
    if m == 0:
        b = ["B"] if d == 1 else [f"B_{i + 1}_{j + 1}" for i in range(d) for j in range(d)]
        return {"momentum": names("r", d), "curvature": b}
    return {"momentum": names("r", d),
            "curvature": [f"{w}{k + 1}_{i + 1}" for w in "sy" for k in range(m) for i in range(d)]}



def _init_qn(s, chains, rng):
    """p ~ N(0, M) and B = B0 I (Algorithm 2's input: B = I), or an empty L-BFGS memory."""
    return np.concatenate([init_momentum(s, chains, rng), initial_memory(s, chains)], axis=1)


class Curvature:
    """The frozen C of one proposal and the memory update after it, for a chain block of z."""

    def __init__(self, s, rest):
        d = s.dim
        self.d, self.m = d, qn_memory(d, s.params)
        self.auto = s["B0"] is None
        c = rest.shape[0]
        if self.m == 0:
            update = s.params.get("update", "auto")
            self.update = QN_UPDATES["sr1" if update == "auto" else update]   # L-BFGS below is BFGS only
            self.B = rest.reshape(c, d, d)
            self.apply = lambda v: batched_matvec(self.B, v)
        else:
            self.S = rest[:, : self.m * d].reshape(c, self.m, d)
            self.Y = rest[:, self.m * d:].reshape(c, self.m, d)
            self.apply = LBFGSOperator(self.S, self.Y, initial_b0(s))

    def updated(self, pairs) -> np.ndarray:
        """The memory after the proposal's pairs (every chain: the caller keeps it only on acceptance)."""
        if self.m == 0:
            B = self.B
            # B still exactly I has learnt nothing yet (no pair kept, or a restart), so its next pair scales it
            fresh = np.all(B == np.eye(self.d), axis=(1, 2)) if self.auto else np.zeros(B.shape[0], bool)
            for s_k, y_k, ok in pairs:
                if fresh.any():
                    B, fresh = initial_scaling(B, s_k, y_k, ok, fresh)
                B = self.update(B, s_k, y_k, ok)
            return B.reshape(B.shape[0], -1)
        S, Y = self.S, self.Y
        for s_k, y_k, ok in pairs:
            S, Y = lbfgs_append(S, Y, s_k, y_k, ok)
        return np.concatenate([S.reshape(S.shape[0], -1), Y.reshape(Y.shape[0], -1)], axis=1)

    def matrix(self) -> np.ndarray:
        return self.B if self.m == 0 else self.apply.dense()


def current_B(s, z) -> np.ndarray:
    """The inverse-Hessian approximation each chain would use next, (chains, d, d)."""
    if not s.layout.has("curvature"):
        return np.broadcast_to(np.eye(s.dim), (z.shape[0], s.dim, s.dim))
    return Curvature(s, z[:, 2 * s.dim:]).matrix()



def _learns(s, t: int) -> bool:
    """Whether this proposal refreshes B.

    Curvature pairs need the gradients of one function: a difference of two independently noisy gradients
    is mostly noise, and BFGS fed noise shrinks B towards zero. Exact gradients qualify, and so does a
    minibatch held for the whole proposal (`Minibatch(per="proposal")`): its pairs see the curvature of
    one sub-posterior, an unbiased estimate of the full one.
    With `adapt` set, B learns during the first `adapt` proposals only, after which every chain
    runs a fixed kernel (Theorem 4's argument needs C independent of the chain's past).
    """
    if not s.layout.has("curvature"):
        return False
    if getattr(s.oracle, "noisy", False) and not getattr(s.oracle, "consistent_pairs", False):
        return False
    adapt = s.params.get("adapt")
    return adapt is None or t - 1 < adapt   # t counts proposals from 1


def initial_b0(s) -> float:
    """The scale of B before any pair: B0, or Algorithm 2's 1 when B0 is automatic (None)."""
    return 1.0 if s["B0"] is None else s["B0"]


def initial_memory(s, chains: int) -> np.ndarray:
    """B = B0 I (Algorithm 2's input is B = I), or an empty L-BFGS memory (C = B0 I until a pair arrives)."""
    d, m = s.dim, qn_memory(s.dim, s.params)
    return np.tile(initial_b0(s) * np.eye(d).ravel(), (chains, 1)) if m == 0 else np.zeros((chains, 2 * m * d))



class CurvatureMemory:
    """B (or L-BFGS's pairs) across proposals: learnt from each trajectory's pairs, kept on acceptance."""

    learns = staticmethod(_learns)

    @staticmethod
    def after(s, rest, pairs, accepted, learned, diverged):
        # Algorithm 2, line 22: a rejected proposal leaves B = C
        mem = np.where(accepted, Curvature(s, rest).updated(pairs), rest) if pairs else rest
        if learned:
            # A divergent trajectory means C itself is unstable for this step size: keeping it (line 22)
            # would reject every later proposal and freeze the chain, so the memory restarts from B0 I.
            mem = np.where(diverged[:, None], initial_memory(s, rest.shape[0]), mem)
        return mem


MEMORY = CurvatureMemory()


class NaiveLeapfrogRecipe(LeapfrogRecipe):
    """Eq. (4)'s drift, theta' = M^-1 p, p' = -B grad U, which no (H, D, Q) produces, on QNHMC's state."""

    def drift(self, z, u, g, rows=None, beta: float = 1.0):
        d, M = self.dim, self.sampler["M"]
        rows = np.arange(self.n) if rows is None else np.asarray(rows)
        f = np.zeros((z.shape[0], self.n))
        f[:, :d] = z[:, d: 2 * d] / M                                  # theta' = M^-1 p: not scaled by B
        f[:, d: 2 * d] = -Curvature(self.sampler, z[:, 2 * d:]).apply(g)   # p' = -B grad U
        return f[:, rows]

    def drift_exprs(self, dropped: bool = True, beta=None):   # no Gamma: beta leaves the drift alone
        if self.numeric:
            return super().drift_exprs(dropped, beta)
        d, sym = self.dim, self.sym
        r, b = sym.aux[:d], sym.aux[d:]
        M = self.sampler["M"]
        out = [ri / M for ri in r]
        out += [-sum(b[i * d + j] * sym.g[j] for j in range(d)) for i in range(d)]
        return out + [sympy.Integer(0)] * (self.n - 2 * d)


def qnhmc_fast(s, z, rng, t):
    C = Curvature(s, z[:, 2 * s.dim:]).apply
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -C(g), lambda q, p, zc: C(p) / M, t, MEMORY)


def qnhmc_naive_fast(s, z, rng, t):
    B = Curvature(s, z[:, 2 * s.dim:]).apply
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -B(g), lambda q, p, zc: p / M, t, MEMORY)



def qn_recipe(s):
    """z = (theta, p, B): D = 0 and Q = [[0, -B, 0], [B^T, 0, 0], [0, 0, 0]] (Eq. 7 / Eq. 17).

    B enters z as state variables that the dynamics leave alone, so the recipe holds for every
    B at once: Gamma = 0 because Q's theta-p block does not depend on theta or p, and the
    stationarity residual is ~0 over any box of B values (Theorem 3). The naive entry uses the same
    state and Eq. (4)'s drift instead.
    """
    d, M = s.dim, s["M"]
    if qn_memory(d, s.params) != 0:
        return _lbfgs_recipe(s)
    b_names = qn_layout(d, s.params)["curvature"]
    sym = StateSymbols.make(d, names("r", d) + b_names)
    r = Matrix(sym.aux[:d])
    B = Matrix(d, d, sym.aux[d:])
    n = 2 * d + d * d
    Q = zeros(n, n)
    Q[:d, d: 2 * d] = -B
    Q[d: 2 * d, :d] = B.T
    box_b = [(0.25, 4.0) if i == j else (-0.5, 0.5) for i in range(d) for j in range(d)]
    naive = s.spec.naive
    desc = ("z = (theta, p, B), H = U + p.p/2M; naive Eq. (4): theta' = p/M, p' = -B grad U (no (H, D, Q))"
            if naive else "z = (theta, p, B), H = U + p.p/2M, D = 0, Q = [[0, -B], [B, 0]] (Eq. 7)")
    kind = NaiveLeapfrogRecipe if naive else LeapfrogRecipe
    return kind(s.name, sym, (r.T * r)[0] / (2 * M), zeros(n, n), Q, sampler=s, memory=MEMORY,
                          aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d + box_b, description=desc)


def _lbfgs_recipe(s):
    """z = (theta, p, S, Y) with C the L-BFGS operator of the stored pairs: Q = [[0, -C], [C, 0]] as a
    function of the state (the engine takes Gamma by differences; it is 0, as for dense B)."""
    d, M = s.dim, s["M"]
    layout = qn_layout(d, s.params)
    names = layout["momentum"] + layout["curvature"]
    sym = StateSymbols.make(d, names)
    r = Matrix(sym.aux[:d])
    n = d + len(names)

    def Q(z):
        C = Curvature(s, z[:, 2 * d:]).matrix()
        out = np.zeros((z.shape[0], n, n))
        out[:, :d, d: 2 * d] = -C
        out[:, d: 2 * d, :d] = np.swapaxes(C, 1, 2)
        return out

    desc = ("z = (theta, p, L-BFGS pairs), naive Eq. (4) drift" if s.spec.naive else
            "z = (theta, p, L-BFGS pairs), H = U + p.p/2M, D = 0, Q = [[0, -C], [C, 0]], C from the pairs")
    kind = NaiveLeapfrogRecipe if s.spec.naive else LeapfrogRecipe
    # Gamma = 0: C depends only on the pairs, whose rows of Q are zero, and each row's entries do not
    # depend on their own column's coordinate (differencing it cost 2n evaluations of C per drift)
    return kind(s.name, sym, (r.T * r)[0] / (2 * M), np.zeros((n, n)), Q, sampler=s, memory=MEMORY,
                          aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d
                          + [(-1.0, 1.0)] * (n - 2 * d), description=desc, gamma_zero=True)


def fixed_c_recipe(C, M: float = 1.0, dim: int = 1):
    """Eq. (7) with a constant symmetric positive definite C, z = (theta, p): D = 0, Q = [[0, -C], [C, 0]]."""
    C = Matrix(np.atleast_2d(C).tolist())
    d = dim
    sym = StateSymbols.make(d, names("r", d))
    r = Matrix(sym.aux)
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -C], [C.T, zeros(d, d)]]))
    return Recipe("qnhmc-fixed-C", sym, (r.T * r)[0] / (2 * M), zeros(2 * d, 2 * d), Q,
                  aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d)



QN_DOC = ("B is refreshed from the L (s, y) pairs of the leapfrog's consecutive positions and gradients; kept if "
          "the proposal is accepted, reset to C if it is rejected (Algorithm 2, line 22). update: bfgs = Eq. (1) as in "
          "Algorithm 2; sr1 = symmetric rank one (Nocedal & Wright Eq. 6.25), which on a quadratic removes an error of "
          "B the pairs see instead of rotating it into the directions the chain moves along (with BFGS the 100-d "
          "Gaussian's burn-in is ~10x longer: docs/notes/qnhmc.md); auto = sr1 for a dense B, bfgs for L-BFGS. "
          "memory: 0 = dense B (chains × d × d), m > 0 = L-BFGS with the last m pairs, auto = dense up to "
          f"d = {AUTO_DENSE_MAX_DIM}, else m = {AUTO_MEMORY}. B0: auto = B starts at I and, before its first "
          "update, becomes (sᵀy / yᵀy)·I from that pair (Nocedal & Wright Eq. 6.20), the target's scale instead of "
          "the units'; a number b = B starts at b·I (1 with update = bfgs: Algorithm 2 as printed). B is learnt only "
          "from exact gradients or a minibatch held for the whole proposal (another noisy oracle leaves B at its "
          "initial I or B0·I). adapt: B learns during the first "
          f"adapt proposals (default {ADAPT}), after which every chain keeps a fixed C and samples the target exactly; "
          "none = learn for ever (Algorithm 2 as printed), which tracks the local curvature and biases a non-Gaussian "
          "target.")
QN_PARAMS = (
    # a whole float, as sample files have always recorded it (memory=3.0: tests/golden)
    Param("memory", None, "0: a dense B (chains × d × d); m > 0: L-BFGS with the last m pairs", whole=True, lo=0,
          hi=50, unit="pairs", auto=f"dense up to d = {AUTO_DENSE_MAX_DIM}, else {AUTO_MEMORY} pairs"),
    Param("B0", None, "the initial B = B0·I", lo=1e-6, hi=1e6,
          auto="B = I, rescaled to (sᵀy / yᵀy)·I by the first pair"),
    Param("adapt", ADAPT, "B learns during the first adapt proposals, then every chain keeps it", type=int, lo=0,
          hi=10 ** 7, unit="proposals", auto="learn for ever (Algorithm 2 as printed)"),
    choice("update", "auto", QN_UPDATE_CHOICES, "the quasi-Newton update (auto: SR1 for a dense B, BFGS for L-BFGS)"))
QNHMC = SamplerSpec(
    name="qnhmc", title="QNHMC", source="Fu, Luo & Zhang (2016) Algorithm 2 with the dynamics of Eq. (7) (Theorem 3)",
    doc="Quasi-Newton HMC: θ̇ = C M⁻¹p, ṗ = −C∇U with C = B frozen during a proposal, leapfrog and a "
    "Metropolis test min{1, exp(H₀ − H₁)}. In the recipe: D = 0, Q = [[0, −C], [C, 0]]. " + QN_DOC,
    params=(*HMC_PARAMS, *QN_PARAMS), layout=qn_layout, recipe=qn_recipe, fast=qnhmc_fast, init_aux=_init_qn,
    family="hamiltonian", exact=True)

QNHMC_NAIVE = SamplerSpec(
    name="qnhmc-naive", title="naive QNHMC", source="Fu, Luo & Zhang (2016) Eq. (4) (Theorem 1 / Corollary 1)",
    doc="HMC with ∇U replaced by B∇U and the position update left alone: θ̇ = M⁻¹p, ṗ = −B∇U. Its flow does not "
    "conserve H (dH/dt = pᵀM⁻¹(I − B)∇U), so exp(−H) is not invariant. Runs without the Metropolis test by "
    "default (the dynamics the paper's Corollary 1 is about); metropolis=on repairs it, because the frozen-B "
    "leapfrog map is still volume preserving and reversible, at the price of a lower acceptance. " + QN_DOC,
    params=(*HMC_PARAMS[:3], METROPOLIS.at("off"), *QN_PARAMS), layout=qn_layout, recipe=qn_recipe,
    fast=qnhmc_naive_fast, init_aux=_init_qn, corrected="qnhmc", family="hamiltonian", exact=True)

