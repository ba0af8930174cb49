"""Hamiltonian Monte Carlo with a Metropolis test, and quasi-Newton HMC (Fu, Luo & Zhang), naive and correct.

Three registry entries, all one proposal per registry step (L leapfrog steps and an
accept/reject), vectorised over chains:

* ``hmc``: seed 002, Algorithm 1 (Neal 2011), acceptance min{1, exp(H0 - H1)} (seeds erratum 4).
* ``qnhmc``: seed 002, Algorithm 2. The dynamics are Eq. (7), theta' = C M^-1 p, p' = -C grad U,
  with C = B frozen for the whole proposal. B, an approximation of the inverse Hessian, is updated
  by BFGS (Eq. 1) from the leapfrog's (s, y) pairs (SR1 by default for a dense B, see below); on
  rejection it is reset to C (line 22).
  In the recipe this is D = 0, Q = [[0, -C], [C, 0]]: Theorem 3 is Theorem 1 of the recipe paper.
* ``qnhmc-naive``: seed 002, Eq. (4), p' = -B grad U with the position update left unscaled.
  Its flow does not conserve H (dH/dt = p^T M^-1 (I - B) grad U), so exp(-H) is not invariant
  (Corollary 1). Without the Metropolis test (its default) it samples the wrong law.

The state of a quasi-Newton chain is (theta, p, curvature memory): B itself (dense BFGS, d*d
numbers) or the last m pairs (s, y) (L-BFGS). Keeping B in z makes it part of the Markov state,
which it is: it carries over from proposal to proposal, chain by chain, and the recipe engine,
the divergence guard and `run(..., keep_aux=True)` see it like any other auxiliary variable.

Each proposal reports its acceptances and energy error in its StepInfo. The choices the paper
leaves open (which pairs, B learnt only from exact gradients, B_CAP and restarts, the initial scale,
SR1 rather than BFGS for a dense B) and the measurements behind them: docs/notes/qnhmc.md.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy import Matrix, zeros

from samplers.engine.info import StepInfo
from samplers.engine.recipe import Recipe, StateSymbols
from samplers.sampler import SamplerError, SamplerSpec

AUTO_DENSE_MAX_DIM = 200   # dense BFGS up to this dimension (the paper's 100-d example uses BFGS)
AUTO_MEMORY = 7            # L-BFGS memory above it (the paper's choice for d = 784, §5.2)
B_CAP = 1e4                # largest inverse curvature one pair may put into B (bfgs_update, sr1_update)
SR1_SKIP = 1e-8            # N&W's threshold for a vanishing SR1 denominator


# -- the curvature memory -----------------------------------------------------------------
def qn_memory(d: int, params: dict) -> int:
    """0 for dense BFGS, m > 0 for L-BFGS with m pairs (params['memory']: None = auto)."""
    m = params.get("memory")
    if m is None:
        return 0 if d <= AUTO_DENSE_MAX_DIM else AUTO_MEMORY
    if m < 0 or m != int(m):
        raise SamplerError(f"memory must be 0 (dense BFGS) or a positive number of L-BFGS pairs, got {m}")
    return int(m)


def _names(prefix: str, d: int) -> list[str]:
    return [prefix] if d == 1 else [f"{prefix}_{i + 1}" for i in range(d)]


def hmc_layout(d, params):
    _check_common(params)
    return {"momentum": _names("r", d)}


def qn_layout(d, params) -> dict:
    """theta's momentum, then the curvature memory: B's d*d entries, or L-BFGS's m pairs (s, y)."""
    _check_common(params)
    if params["B0"] is not None and not params["B0"] > 0:
        raise SamplerError(f"B0 must be > 0 (the initial B is B0 I) or auto (B = I, rescaled to "
                           f"(s^T y / y^T y) I by the first BFGS pair), got {params['B0']}")
    if params.get("adapt") is not None and params["adapt"] < 0:
        raise SamplerError(f"adapt must be a number of proposals >= 0 (none: adapt forever), got {params['adapt']}")
    m = qn_memory(d, params)
    if m and params.get("update") == "sr1":
        raise SamplerError("update = sr1 needs the dense B (memory = 0); L-BFGS is BFGS only")
    if m == 0:
        b = ["B"] if d == 1 else [f"B_{i + 1}_{j + 1}" for i in range(d) for j in range(d)]
        return {"momentum": _names("r", d), "curvature": b}
    return {"momentum": _names("r", d),
            "curvature": [f"{w}{k + 1}_{i + 1}" for w in "sy" for k in range(m) for i in range(d)]}


def _check_common(params):
    if params["L"] < 1:
        raise SamplerError(f"L must be a positive number of leapfrog steps, got {params['L']}")


def _init_momentum(s, chains, rng):
    """p ~ N(0, M)."""
    return np.sqrt(s["M"]) * rng.standard_normal((chains, s.dim))


def _init_qn(s, chains, rng):
    """p ~ N(0, M) and B = B0 I (Algorithm 2's input: B = I), or an empty L-BFGS memory."""
    return np.concatenate([_init_momentum(s, chains, rng), initial_memory(s, chains)], axis=1)


def batched_matvec(B, v):
    """B v per chain, (c, d, d) x (c, d): einsum is faster for tiny d, batched matmul (BLAS) for large d."""
    if B.shape[-1] <= 8:
        return np.einsum("cij,cj->ci", B, v)
    return (B @ v[:, :, None])[:, :, 0]


def _bfgs_terms(B, s, y, ok):
    """Which chains' pairs Eq. (1) may use, with rho = 1 / s^T y, c = rho^2 y^T B y + rho and B y."""
    sy = np.einsum("ci,ci->c", s, y)
    By = batched_matvec(B, y)
    yBy = np.einsum("ci,ci->c", y, By)
    ok = ok & (sy > 0) & np.isfinite(sy) & np.isfinite(yBy)     # NaN anywhere in s or y fails here
    rho = np.where(ok, 1.0 / np.where(ok, sy, 1.0), 0.0)
    coef = rho ** 2 * np.where(ok, yBy, 0.0) + rho
    # A pair from a nearly flat stretch of U (an inflection point) has s^T y ~ 0+ and would blow B up;
    # past B_CAP every later trajectory diverges, so such a pair is skipped (coef |s|^2 bounds the
    # largest entry of the rho s s^T part).
    ok &= coef * np.einsum("ci,ci->c", s, s) < B_CAP
    return ok, rho, coef, By


def bfgs_update(B, s, y, ok):
    """Eq. (1) for every chain where `ok`: B <- (I - rho s y^T) B (I - rho y s^T) + rho s s^T.

    B (chains, d, d) symmetric; s, y (chains, d). Expanded as a rank-two correction,
    B + s (c s - rho By)^T - rho By s^T with c = rho^2 y^T B y + rho, so one batched matmul with an
    inner dimension of 2 does the O(d^2) work.
    """
    ok, rho, coef, By = _bfgs_terms(B, s, y, ok)
    # a skipped pair may hold NaN (a trajectory that blew up): zero it so that nothing reaches B
    s0 = np.where(ok[:, None], s, 0.0)
    By0 = np.where(ok[:, None], By, 0.0)
    rho, coef = np.where(ok, rho, 0.0)[:, None], np.where(ok, coef, 0.0)[:, None]
    left = np.stack([s0, By0], axis=2)                               # (c, d, 2)
    right = np.stack([coef * s0 - rho * By0, -rho * s0], axis=1)     # (c, 2, d)
    return B + left @ right


def sr1_update(B, s, y, ok):
    """Symmetric rank one for the inverse (Nocedal & Wright Eq. 6.25): B <- B + r r^T / r^T y, r = s - B y.

    On a quadratic with exact pairs the error E = B - Sigma becomes E - (E y)(E y)^T / (y^T E y): E loses the
    part that y sees and nothing else moves, whereas Eq. (1) maps E to P^T E P and can rotate an unseen
    deficit into the directions the chain is moving along (see the module docstring). r^T y may have either
    sign, so B may be indefinite; C^2 is what the dynamics feel, and any symmetric C keeps Eq. (7) exact.
    Skipped: |r^T y| < SR1_SKIP |r| |y| (N&W Eq. 6.26), a non-finite pair, and a correction above B_CAP.
    """
    By = batched_matvec(B, y)
    r = s - By
    ry = np.einsum("ci,ci->c", r, y)
    rr = np.einsum("ci,ci->c", r, r)
    yy = np.einsum("ci,ci->c", y, y)
    ok = (ok & np.isfinite(ry) & np.isfinite(rr)
          & (np.abs(ry) > SR1_SKIP * np.sqrt(rr * yy)) & (rr < B_CAP * np.abs(ry)))
    r0 = np.where(ok[:, None], r, 0.0)
    coef = np.where(ok, 1.0 / np.where(ok, ry, 1.0), 0.0)
    return B + coef[:, None, None] * r0[:, :, None] * r0[:, None, :]


QN_UPDATES = dict(bfgs=bfgs_update, sr1=sr1_update)
QN_UPDATE_CHOICES = ("auto", "sr1", "bfgs")   # auto: SR1 for a dense B, BFGS for L-BFGS


def initial_scaling(B, s, y, ok, fresh):
    """Nocedal & Wright Eq. (6.20): B = (s^T y / y^T y) I before the first update of a `fresh` chain.

    On a quadratic s^T y / y^T y is a Rayleigh quotient of the inverse Hessian, so B starts at the
    target's scale instead of the units' (Algorithm 2's I). Only a pair that passes Eq. (1)'s checks
    (s^T y > 0, B_CAP) sets the scale, whichever update follows (an s^T y ~ 0+ pair would make B huge;
    SR1 then skips that same pair, whose r^T y is 0). Returns B and which chains are still fresh.
    """
    sy = np.einsum("ci,ci->c", s, y)
    yy = np.einsum("ci,ci->c", y, y)
    valid = fresh & (sy > 0) & (yy > 0) & np.isfinite(sy) & np.isfinite(yy)
    gamma = np.where(valid, sy / np.where(valid, yy, 1.0), 1.0)
    scaled = gamma[:, None, None] * np.eye(B.shape[-1])
    use = valid & _bfgs_terms(scaled, s, y, ok)[0]
    return np.where(use[:, None, None], scaled, B), fresh & ~use


class LBFGSOperator:
    """C v for the frozen memory of a proposal: Nocedal & Wright's two-loop recursion, per chain.

    S, Y (chains, m, d), oldest pair first; unused slots are zero and drop out (rho = 0).
    H0 = gamma I with gamma = s^T y / y^T y of the newest pair (N&W Eq. 7.20), b0 I when empty.
    """

    def __init__(self, S, Y, b0: float = 1.0):
        self.S, self.Y = S, Y
        sy = np.einsum("cmd,cmd->cm", S, Y)
        yy = np.einsum("cmd,cmd->cm", Y, Y)
        used = sy > 0
        self.rho = np.where(used, 1.0 / np.where(used, sy, 1.0), 0.0)
        newest = np.where(used.any(1), S.shape[1] - 1 - np.argmax(used[:, ::-1], axis=1), -1)
        pick = np.clip(newest, 0, None)
        rows = np.arange(S.shape[0])
        self.gamma = np.where(newest >= 0, sy[rows, pick] / np.where(used[rows, pick], yy[rows, pick], 1.0), b0)

    def __call__(self, v):
        S, Y, rho = self.S, self.Y, self.rho
        m = S.shape[1]
        q = v.copy()
        alpha = np.empty((v.shape[0], m))
        for k in range(m - 1, -1, -1):
            alpha[:, k] = rho[:, k] * np.einsum("cd,cd->c", S[:, k], q)
            q -= alpha[:, k, None] * Y[:, k]
        r = self.gamma[:, None] * q
        for k in range(m):
            beta = rho[:, k] * np.einsum("cd,cd->c", Y[:, k], r)
            r += S[:, k] * (alpha[:, k] - beta)[:, None]
        return r

    def dense(self):
        """C as a matrix per chain (for display and tests)."""
        c, _, d = self.S.shape
        eye = np.broadcast_to(np.eye(d), (c, d, d))
        return np.stack([self(eye[:, :, j]) for j in range(d)], axis=2)


def lbfgs_append(S, Y, s, y, ok):
    """Push the pair (s, y) into each chain's memory where ok (and s^T y > 0), dropping the oldest."""
    sy = np.einsum("ci,ci->c", s, y)
    # a NaN pair fails the comparisons; the inverse curvature along s must stay below B_CAP
    ok = ok & (sy > 0) & (np.einsum("ci,ci->c", s, s) < B_CAP * sy)
    S2 = np.concatenate([S[:, 1:], s[:, None]], axis=1)
    Y2 = np.concatenate([Y[:, 1:], y[:, None]], axis=1)
    w = ok[:, None, None]
    return np.where(w, S2, S), np.where(w, Y2, Y)


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


# -- one proposal ---------------------------------------------------------------------------
DIVERGENT = 1000.0   # |H1 - H0| beyond which a trajectory counts as divergent (Stan's threshold)


def _learns(s, t: int) -> bool:
    """Whether this proposal refreshes B.

    Curvature pairs need exact gradients: a difference of two noisy gradients is mostly noise, and
    BFGS fed noise shrinks B towards zero (the paper leaves stochastic gradients to future work).
    With `adapt` set, B learns during the first `adapt` proposals only, after which every chain
    runs a fixed kernel (Theorem 4's argument needs C independent of the chain's past).
    """
    if not s.layout.has("curvature") or getattr(s.oracle, "noisy", False):
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


def proposal(s, z, rng, oracle, force, velocity, t: int):
    """One leapfrog trajectory of L steps from z and a Metropolis test, for every chain.

    force(q, p, g, z) and velocity(q, p, z) are the p- and theta-components of the drift for the
    frozen curvature in z; the fast paths write them out, the recipe engine evaluates its (H, D, Q).
    Random draws, in order: the momentum, the oracle's noise at each of the L + 1 gradient
    evaluations, one uniform per chain (drawn with or without the Metropolis test).
    """
    with np.errstate(all="ignore"):   # a trajectory that blows up is rejected (or left to the guard)
        return _proposal(s, z, rng, oracle, force, velocity, t)


def _proposal(s, z, rng, oracle, force, velocity, t):
    d, eps, L, M = s.dim, s["eps"], int(s["L"]), s["M"]
    c = z.shape[0]
    theta, rest = z[:, :d], z[:, 2 * d:]
    p0 = np.sqrt(M) * rng.standard_normal((c, d))
    zc = z.copy()
    zc[:, d: 2 * d] = p0
    u0 = s.potential.U(theta)
    _, g = oracle(theta, rng)
    p = p0 + 0.5 * eps * force(theta, p0, g, zc)
    q = theta
    learn = _learns(s, t)
    pairs = []
    for i in range(L):
        q_new = q + eps * velocity(q, p, zc)
        _, g_new = oracle(q_new, rng)
        if learn:
            pairs.append((q_new - q, g_new - g, True))
        p = p + (eps if i < L - 1 else 0.5 * eps) * force(q_new, p, g_new, zc)
        q, g = q_new, g_new
    h0 = u0 + np.einsum("ci,ci->c", p0, p0) / (2 * M)
    h1 = s.potential.U(q) + np.einsum("ci,ci->c", p, p) / (2 * M)
    log_u = np.log(rng.random(c))
    if s["metropolis"] == "on":
        accept = log_u < h0 - h1          # NaN energies compare False: rejected
    else:
        accept = np.ones(c, bool)         # the dynamics alone; a blow-up is left to the divergence guard
    a = accept[:, None]
    out = np.empty_like(z)
    out[:, :d] = np.where(a, q, theta)
    out[:, d: 2 * d] = np.where(a, p, p0)
    if rest.shape[1]:
        # Algorithm 2, line 22: a rejected proposal leaves B = C
        mem = np.where(a, Curvature(s, rest).updated(pairs), rest) if pairs else rest
        if learn:
            # A divergent trajectory means C itself is unstable for this step size: keeping it (line 22)
            # would reject every later proposal and freeze the chain, so the memory restarts from B0 I.
            diverged = ~(np.abs(h1 - h0) < DIVERGENT)
            mem = np.where(diverged[:, None], initial_memory(s, c), mem)
        out[:, 2 * d:] = mem
    return out, StepInfo(grad_evals=L + 1, accepted=accept, energy_error=h1 - h0)


# -- fast paths: the vector fields written out ------------------------------------------------
def hmc_fast(s, z, rng, t):
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -g, lambda q, p, zc: p / M, t)


def qnhmc_fast(s, z, rng, t):
    C = Curvature(s, z[:, 2 * s.dim:]).apply
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -C(g), lambda q, p, zc: C(p) / M, t)


def qnhmc_naive_fast(s, z, rng, t):
    B = Curvature(s, z[:, 2 * s.dim:]).apply
    M = s["M"]
    return proposal(s, z, rng, s.oracle, lambda q, p, g, zc: -B(g), lambda q, p, zc: p / M, t)


# -- the recipe view, and a generic leapfrog engine over it -------------------------------------
class LeapfrogRecipe(Recipe):
    """A D = 0 recipe whose Q couples theta and p only, stepped by leapfrog and a Metropolis test.

    The generic engine's Euler step would not conserve H; leapfrog is the integrator these
    samplers are defined with. `step` takes the theta- and p-rows of this recipe's own drift
    (so an edited (H, D, Q) changes the dynamics) and must equal the fast path step for step.
    `naive` replaces the drift by Eq. (4)'s, which no (H, D, Q) produces.
    """

    def __init__(self, *args, sampler=None, naive: bool = False, **kwargs):
        self.sampler, self.naive = sampler, naive
        super().__init__(*args, **kwargs)

    def drift(self, z, u, g, rows=None):
        if not self.naive:
            return super().drift(z, u, g, rows)
        d, M = self.dim, self.sampler["M"]
        rows = np.arange(self.n) if rows is None else np.asarray(rows)
        f = np.zeros((z.shape[0], self.n))
        f[:, :d] = z[:, d: 2 * d] / M                                  # theta' = M^-1 p: not scaled by B
        f[:, d: 2 * d] = -Curvature(self.sampler, z[:, 2 * d:]).apply(g)   # p' = -B grad U
        return f[:, rows]

    def drift_exprs(self, dropped: bool = True):
        if not self.naive or self.numeric:
            return super().drift_exprs(dropped)
        d, sym = self.dim, self.sym
        r, b = sym.aux[:d], sym.aux[d:]
        M = self.sampler["M"]
        out = [ri / M for ri in r]
        out += [-sum(b[i * d + j] * sym.g[j] for j in range(d)) for i in range(d)]
        return out + [sympy.Integer(0)] * (self.n - 2 * d)

    def latex_update(self) -> str:
        return (r"\begin{aligned}&p \sim \mathcal N(0, M)\\ "
                r"&p \leftarrow p + \tfrac{\epsilon}{2} f_p,\ \ "
                r"(\theta \leftarrow \theta + \epsilon f_\theta,\ p \leftarrow p + \epsilon f_p)^{L},\ "
                r"\text{last kick } \tfrac{\epsilon}{2}\\ "
                r"&\text{accept with probability } \min\{1, e^{H_0 - H_1}\}\end{aligned}")

    def step(self, z, rng, oracle, eps, bhat=0.0):
        return self.advance(z, rng, oracle, eps, bhat)[0]

    def advance(self, z, rng, oracle, eps, bhat=0.0, t: int = 1):
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

        return proposal(s, z, rng, oracle, force, velocity, t)


def hmc_recipe(s):
    d, M = s.dim, s["M"]
    sym = StateSymbols.make(d, _names("r", d))
    r = Matrix(sym.aux)
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -sympy.eye(d)], [sympy.eye(d), zeros(d, d)]]))
    return LeapfrogRecipe("hmc", sym, (r.T * r)[0] / (2 * M), zeros(2 * d, 2 * d), Q, sampler=s,
                          aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d,
                          description="z = (theta, p), H = U + p.p/2M, D = 0, Q = [[0, -I], [I, 0]]")


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
    sym = StateSymbols.make(d, _names("r", d) + b_names)
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
    return LeapfrogRecipe(s.name, sym, (r.T * r)[0] / (2 * M), zeros(n, n), Q, sampler=s, naive=naive,
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
    return LeapfrogRecipe(s.name, sym, (r.T * r)[0] / (2 * M), np.zeros((n, n)), Q, sampler=s,
                          naive=s.spec.naive, aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d
                          + [(-1.0, 1.0)] * (n - 2 * d), description=desc)


def fixed_c_recipe(C, M: float = 1.0, dim: int = 1):
    """Eq. (7) with a constant symmetric positive definite C, z = (theta, p): D = 0, Q = [[0, -C], [C, 0]]."""
    C = Matrix(np.atleast_2d(C).tolist())
    d = dim
    sym = StateSymbols.make(d, _names("r", d))
    r = Matrix(sym.aux)
    Q = Matrix(sympy.BlockMatrix([[zeros(d, d), -C], [C.T, zeros(d, d)]]))
    return Recipe("qnhmc-fixed-C", sym, (r.T * r)[0] / (2 * M), zeros(2 * d, 2 * d), Q,
                  aux_box=[(-4 * np.sqrt(M), 4 * np.sqrt(M))] * d)


# -- registry ------------------------------------------------------------------------------------
COMMON = dict(eps=0.1, L=10, M=1.0, metropolis="on")
CHOICES = dict(metropolis=("on", "off"))

HMC = SamplerSpec(
    name="hmc", title="HMC",
    source="QNHMC paper (seed 002) Algorithm 1 / Eq. (3) (Neal 2011); acceptance min{1, exp(H0 − H1)}",
    doc="Hamiltonian Monte Carlo: p ~ N(0, M), L leapfrog steps of θ̇ = M⁻¹p, ṗ = −∇U, then accept with "
    "probability min{1, exp(H₀ − H₁)}, H = U + pᵀp/2M evaluated with the exact U (seeds erratum 4). One step "
    "is one proposal. In the recipe: D = 0, Q = [[0, −I], [I, 0]]. With a noisy gradient oracle the leapfrog "
    "map stays volume preserving and reversible in law, so the test with the exact U keeps it exact. "
    "Each proposal reports its acceptances in its StepInfo; runs keep the acceptance rate.",
    defaults=dict(COMMON), layout=hmc_layout, recipe=hmc_recipe, fast=hmc_fast, init_aux=_init_momentum,
    family="hamiltonian", choices=dict(CHOICES), exact=True)

QN_DOC = ("B is refreshed from the L (s, y) pairs of the leapfrog's consecutive positions and gradients; kept if "
          "the proposal is accepted, reset to C if it is rejected (Algorithm 2, line 22). update: bfgs = Eq. (1) as in "
          "Algorithm 2; sr1 = symmetric rank one (Nocedal & Wright Eq. 6.25), which on a quadratic removes an error of "
          "B the pairs see instead of rotating it into the directions the chain moves along (with BFGS the 100-d "
          "Gaussian's burn-in is ~10x longer: docs/notes/qnhmc.md); auto = sr1 for a dense B, bfgs for L-BFGS. "
          "memory: 0 = dense B (chains × d × d), m > 0 = L-BFGS with the last m pairs, auto = dense up to "
          f"d = {AUTO_DENSE_MAX_DIM}, else m = {AUTO_MEMORY}. B0: auto = B starts at I and, before its first "
          "update, becomes (sᵀy / yᵀy)·I from that pair (Nocedal & Wright Eq. 6.20), the target's scale instead of "
          "the units'; a number b = B starts at b·I (1 with update = bfgs: Algorithm 2 as printed). B is learnt only "
          "from exact gradients (a noisy oracle leaves B at its initial I or B0·I).")
QNHMC = SamplerSpec(
    name="qnhmc", title="QNHMC", source="QNHMC paper (seed 002) Algorithm 2 with the dynamics of Eq. (7) (Theorem 3)",
    doc="Quasi-Newton HMC: θ̇ = C M⁻¹p, ṗ = −C∇U with C = B frozen during a proposal, leapfrog and a "
    "Metropolis test min{1, exp(H₀ − H₁)}. In the recipe: D = 0, Q = [[0, −C], [C, 0]]. " + QN_DOC,
    defaults=dict(COMMON, memory=None, B0=None, adapt=None, update="auto"), layout=qn_layout, recipe=qn_recipe,
    fast=qnhmc_fast, init_aux=_init_qn, family="hamiltonian", choices=dict(CHOICES, update=QN_UPDATE_CHOICES),
    exact=True)

QNHMC_NAIVE = SamplerSpec(
    name="qnhmc-naive", title="naive QNHMC", source="QNHMC paper (seed 002) Eq. (4) (Theorem 1 / Corollary 1)",
    doc="HMC with ∇U replaced by B∇U and the position update left alone: θ̇ = M⁻¹p, ṗ = −B∇U. Its flow does not "
    "conserve H (dH/dt = pᵀM⁻¹(I − B)∇U), so exp(−H) is not invariant. Runs without the Metropolis test by "
    "default (the dynamics the paper's Corollary 1 is about); metropolis=on repairs it, because the frozen-B "
    "leapfrog map is still volume preserving and reversible, at the price of a lower acceptance. " + QN_DOC,
    defaults=dict(COMMON, metropolis="off", memory=None, B0=None, adapt=None, update="auto"), layout=qn_layout,
    recipe=qn_recipe, fast=qnhmc_naive_fast, init_aux=_init_qn, corrected="qnhmc", family="hamiltonian",
    choices=dict(CHOICES, update=QN_UPDATE_CHOICES), exact=True)
