"""Santa (Chen, Carlson, Gan, Li & Carin 2016): a preconditioned thermostat whose temperature may be lowered.

z = (theta, p, xi) with one thermostat xi_i per coordinate, and with G1 = rmsprop also v, the running second
moment of the gradient. Diagonal preconditioners G1 = diag(g1), G2 = diag(g2):

    H = U(theta) + p.p/2 + sum_i (xi_i - g2_i)^2 / 2
    D = diag(0, G2, 0),   Q_{theta_i p_i} = -g1_i = -Q_{p_i theta_i},   Q_{p_i xi_i} = p_i = -Q_{xi_i p_i}

whose tempered drift (docs/tempering.md) is Santa's SDE, derived rather than copied (errata E11):

    theta_i' = g1_i p_i
    p_i'     = -g1_i dU/dtheta_i - xi_i p_i + (1/beta) d g1_i/d theta_i + g1_i sum_j (xi_j - g2_j) d g2_j/d theta_i
    xi_i'    = p_i^2 - 1/beta,        noise N(0, 2 g2_i / beta) on p_i,

the last two terms of p' being Gamma_p / beta and the thermostat term's share of -G1 grad_theta H.

The friction -xi p is D's -G2 p plus Q's -p (xi - G2). Choices of G1: identity; rmsprop, Santa's
g = 1/sqrt(lam + sqrt(v)) with v <- decay v + (1 - decay) grad~^2 per chain during the first `adapt` steps and
frozen after (v has zero rows in D and Q, so each frozen value is one fixed recipe and the law is exact; while it
adapts the chain is not a Markov chain of a fixed kernel); level, the theta-dependent metric of SGRHMC,
G1 = G^{-1/2} with G^{-1} = metric_D sqrt|U + metric_C| (recipe paper, Supplement F.1); or typed, G1 = g(theta) I with
"expr:<g(x)>" in 1-D or "expr:<g(x, y)>" in 2-D, read by the whitelist parser of typed potentials (never eval) when
the parameters are checked, and differentiated and lambdified once when the sampler is built (`_typed_g1`): the
engine's Gamma comes from sympy as for every recipe, the fast path's grad g from that one lambdify. G2 is the
identity or G1.

The naive form (santa-naive) drops the two terms that come from the theta-dependence of the preconditioners,
Gamma_p = div G1 and g1 (xi - g2) grad g2, as Santa's Algorithm 1 does; with G1 = level it leaves the target.

Annealing: step t runs at beta_t = beta (1 + t/anneal_b)^anneal_c (anneal_c = 0, the default, keeps beta), in
the engine and the fast paths alike.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy
from sympy import Matrix, sqrt, zeros

from samplers.engine import validate
from samplers.engine.fields import Field
from samplers.engine.info import ONE_GRADIENT
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import StateSymbols
from samplers.families.common import gradient, kick, level_metric, names
from samplers.sampler import BHAT, EPS, INTEGRATOR, METRIC_C, METRIC_D, TYPED, Param, SamplerError, SamplerSpec, choice
from samplers.targets.expr import ExpressionError, compile_expression, symbols_for

G1_CHOICES = ("level", "rmsprop", "identity")
G2_CHOICES = ("G1", "identity")
V0 = 1.0   # v's start: g1 = 1/sqrt(lam + 1), near the identity, until the gradients are seen


G1_VARIABLES = ("x", "y")


def typed(kind: str) -> bool:
    return kind.startswith(TYPED)


def theta_dependent(kind: str) -> bool:
    return kind == "level" or typed(kind)


@lru_cache(maxsize=64)
def _parsed_g1(body: str):
    """(g, the variables it uses) from the text after "expr:"; bounded by the parser's own limits."""
    try:
        return compile_expression(body, G1_VARIABLES)
    except ExpressionError as err:
        raise SamplerError(f"G1: invalid expression: {err}") from None


def check_typed_g1(value: str) -> str:
    """`coerce_params`' check of a typed G1: it parses (nothing is evaluated); a constant must be positive."""
    body = value.strip()[len(TYPED):].strip()
    expr, used = _parsed_g1(body)
    if not used and not float(expr) > 0:
        raise SamplerError(f"G1 must be positive (a diagonal preconditioner), got the constant {float(expr):g}")
    return TYPED + body


@lru_cache(maxsize=64)
def _typed_g1(body: str, d: int):
    """g(theta) and its gradient, derived by sympy and lambdified once per (text, dimension): (N, d) -> (N, 1),
    (N, d)."""
    expr, _ = _parsed_g1(body)
    syms = symbols_for(G1_VARIABLES[:d])
    value = sympy.lambdify(syms, expr, "numpy")
    grad = sympy.lambdify(syms, [sympy.diff(expr, v) for v in syms], "numpy")

    def g1(theta):
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(value(*theta.T), float), theta.shape[:1])[:, None]

    def dg1(theta):
        with np.errstate(all="ignore"):
            parts = grad(*theta.T)
        return np.stack([np.broadcast_to(np.asarray(p, float), theta.shape[:1]) for p in parts], axis=1)

    return expr, syms, g1, dg1


def _typed_layout(d, kind):
    body = kind[len(TYPED):]
    _, used = _parsed_g1(body)
    if d > 2 or (d == 1 and "y" in used):
        raise SamplerError(f"G1: a typed G1 is a function of x on 1-D targets and of x, y on 2-D ones; "
                           f"this target has d = {d}" + (" and G1 uses y" if d == 1 else ""))
    _typed_g1(body, d)


def santa_layout(d, params) -> dict:
    if params["integrator"] == "splitting" and theta_dependent(params["G1"]):
        raise SamplerError("integrator = splitting needs a G1 that does not depend on theta (identity or rmsprop): "
                           "its half-steps theta <- theta + G1 p h/2 are exact only for a constant G1")
    if typed(params["G1"]):
        _typed_layout(d, params["G1"])
    out = {"momentum": names("p", d), "thermostat": names("xi", d)}
    if params["G1"] == "rmsprop":
        out["curvature"] = names("v", d)
    return out


def annealed_beta(s, t: int) -> float:
    """beta_t = beta (1 + t/anneal_b)^anneal_c."""
    c = s.params["anneal_c"]
    return s.beta if c == 0 else s.beta * (1.0 + t / s.params["anneal_b"]) ** c


def adapting(s, t: int) -> bool:
    return s.params["G1"] == "rmsprop" and t <= s.params["adapt"]


def _preconditioners(s, sym):
    """g1, g2 as sympy expressions, one per coordinate."""
    d, kind = s.dim, s.params["G1"]
    if kind == "identity":
        g1 = [sympy.Integer(1)] * d
    elif kind == "rmsprop":
        v = sym.aux[2 * d: 3 * d]   # aux = (p, xi, v)
        g1 = [1 / sqrt(s["lam"] + sqrt(vi)) for vi in v]
    elif typed(kind):
        expr, syms, _, _ = _typed_g1(kind[len(TYPED):], d)
        g1 = [expr.subs(dict(zip(syms, sym.theta)))] * d
    else:
        g1 = [sqrt(level_metric(s, sym))] * d
    g2 = list(g1) if s.params["G2"] == "G1" else [sympy.Integer(1)] * d
    return g1, g2


class SantaRecipe(Recipe):
    """Santa's (H, D, Q), stepped at the annealed beta_t, with the RMSprop moment updated from each step's
    gradient while it adapts. The naive form loses what the theta-dependence of G1 and G2 brings to the
    momentum: Gamma_p = div G1 and the force g1 (xi - g2) grad g2 of grad_theta H. Dropping the whole Gamma
    (the engine's "gamma") would also lose Gamma_xi = -1, the thermostat's target 1/beta, which Santa keeps."""

    def __init__(self, sampler, sym, kinetic, D, Q, *, blocks, aux_box, naive: bool, drop=()):
        self.sampler, self.naive = sampler, naive
        d = len(sym.theta)
        dV = Matrix([sympy.diff(kinetic, th) for th in sym.theta])   # the theta-dependence of the thermostat term
        force = -Matrix(Q)[:, :d] * dV
        self._force = Field(force, sym, vector=True)
        self._force_exprs = [sym.flatten(f) for f in force]
        self._p_rows = np.arange(d, 2 * d)
        super().__init__(sampler.name, sym, kinetic, D, Q, blocks=blocks, aux_box=aux_box, drop=drop,
                         description="z = (theta, p, xi), H = U + p.p/2 + |xi - g2|^2/2, "
                         "D = diag(0, G2, 0), Q: -G1 between theta and p, p between p and xi")

    def _naive_terms(self, beta):
        """What the naive form removes from each drift row, as sympy expressions."""
        gamma = self.Gamma.sym
        return [f + (gamma[i] / (1 if beta is None else beta) if i in self._p_rows else 0)
                for i, f in enumerate(self._force_exprs)]

    def drift_exprs(self, dropped: bool = True, beta=None):
        out = super().drift_exprs(dropped, beta)
        if dropped and self.naive:
            out = [validate.multiplied_out(f - c) for f, c in zip(out, self._naive_terms(beta))]
        return out

    def drift(self, z, u, g, rows=None, beta: float = 1.0):
        f = super().drift(z, u, g, rows, beta)
        if not self.naive:
            return f
        rows = np.arange(self.n) if rows is None else np.asarray(rows)
        removed = np.zeros((z.shape[0], self.n))
        removed += self._force(z, u, g)
        removed[:, self._p_rows] += np.broadcast_to(self.Gamma(z, u, g), removed.shape)[:, self._p_rows] / beta
        return f - removed[:, rows]

    def with_drop(self, drop) -> Recipe:
        """The engine's naive/corrected switch, still annealed and adapting."""
        return SantaRecipe(self.sampler, self.sym, self.kinetic, *self._raw, blocks=self.blocks,
                           aux_box=self.aux_box, naive=self.naive, drop=drop)

    def advance(self, z, rng, oracle, eps: float, bhat=0.0, t: int = 1, beta: float = 1.0):
        s = self.sampler
        seen = _Seen(oracle)
        factor = annealed_beta(s, t) / s.beta
        z_new = self.step(z, rng, seen, eps, bhat, beta * factor)
        if adapting(s, t):
            d = s.dim
            v = z[:, 3 * d: 4 * d]
            z_new[:, 3 * d: 4 * d] = s["decay"] * v + (1 - s["decay"]) * seen.g ** 2
        return z_new, ONE_GRADIENT


class _Seen:
    """The oracle, remembering the gradient it last returned (the step's own, for RMSprop's moment)."""

    def __init__(self, oracle):
        self.oracle, self.g = oracle, None

    def __call__(self, theta, rng, value=False):
        u, g = self.oracle(theta, rng, value=value)
        self.g = g
        return u, g

    def __getattr__(self, name):
        return getattr(self.oracle, name)


def santa_recipe(s):
    d = s.dim
    if typed(s.params["G1"]):     # before the engine's PSD check of D = G2, which would not name G1
        _check_positive(s)
    rms = s.params["G1"] == "rmsprop"
    sym = StateSymbols.make(d, names("p", d) + names("xi", d) + (names("v", d) if rms else []))
    p, xi = sym.aux[:d], sym.aux[d: 2 * d]
    n = len(sym.z)
    g1, g2 = _preconditioners(s, sym)
    D, Q = zeros(n, n), zeros(n, n)
    for i in range(d):
        D[d + i, d + i] = g2[i]
        Q[i, d + i], Q[d + i, i] = -g1[i], g1[i]
        Q[d + i, 2 * d + i], Q[2 * d + i, d + i] = p[i], -p[i]
    kinetic = sum(v ** 2 for v in p) / 2 + sum((x - c) ** 2 for x, c in zip(xi, g2)) / 2
    # momentum, then thermostat (and v, which no block moves), then theta last: with a theta-dependent G1 every
    # block needs U, and a block after theta would evaluate the gradient a second time
    blocks = [list(range(d, 2 * d)), list(range(2 * d, n)), list(range(d))]
    aux_box = [(-4.0, 4.0)] * d + [(-3.0, 5.0)] * d + [(0.25, 4.0)] * (n - 3 * d)
    return SantaRecipe(s, sym, kinetic, D, Q, blocks=blocks, aux_box=aux_box, naive=s.spec.naive)


# -- the fast paths ---------------------------------------------------------------------
def _level(s, u, g):
    """g1 = G^{-1/2} = sqrt(metric_D) |U + C|^{1/4} per chain, (N, 1), and its gradient (N, d)."""
    w = (u + s.metric_C)[:, None]
    g1 = np.sqrt(s["metric_D"]) * np.abs(w) ** 0.25
    dg1 = 0.25 * np.sqrt(s["metric_D"]) * np.sign(w) * np.abs(w) ** -0.75 * g
    return g1, dg1


def santa_fast(s, z, rng, t: int = 1):
    d, eps, beta = s.dim, s.step_size(t), annealed_beta(s, t)
    theta, p, xi = z[:, :d], z[:, d: 2 * d], z[:, 2 * d: 3 * d]
    kind, same = s.params["G1"], s.params["G2"] == "G1"
    if s.params["integrator"] == "splitting":
        return _splitting(s, z, rng, t, eps, beta)
    u, g, b = gradient(s, theta, rng, value=kind == "level")
    drift = -xi * p
    if theta_dependent(kind):
        g1, dg1 = _level(s, u, g) if kind == "level" else _typed_values(s, theta)
        if not s.spec.naive:
            # Gamma_p / beta = div G1 / beta, and -g1 dH/dtheta's thermostat part g1 (xi - g2) grad g2
            drift += dg1 / beta
            if same:
                drift += g1 * (xi - g1).sum(axis=1, keepdims=True) * dg1
    else:
        g1 = _constant_g1(s, z)
    g2 = g1 if same else 1.0
    p_new = p + eps * (drift - g1 * g) + kick(eps * (2 * g2 / beta - eps * b * g1 ** 2), p.shape, rng)
    xi_new = xi + eps * (p_new ** 2 - 1.0 / beta)
    out = [theta + eps * g1 * p_new, p_new, xi_new]
    if kind == "rmsprop":
        out.append(_moment(s, z, g, t))
    return np.concatenate(out, axis=1), ONE_GRADIENT


def _typed_values(s, theta):
    _, _, g1, dg1 = _typed_g1(s.params["G1"][len(TYPED):], s.dim)
    return g1(theta), dg1(theta)


def _constant_g1(s, z):
    """g1 of identity or rmsprop (N, d): it does not depend on theta."""
    if s.params["G1"] == "identity":
        return np.ones((1, s.dim))
    d = s.dim
    return 1.0 / np.sqrt(s["lam"] + np.sqrt(z[:, 3 * d: 4 * d]))


def _moment(s, z, g, t):
    v = z[:, 3 * s.dim: 4 * s.dim]
    return s["decay"] * v + (1 - s["decay"]) * g * g if adapting(s, t) else v


def _splitting(s, z, rng, t, eps, beta):
    """A(h/2) B(h/2) O(h) B(h/2) A(h/2) (Chen et al. 2016, as mSGNHT's; errata E5 for the thermostat half-step):
    A: theta += G1 p h/2, xi += (p*p - 1/beta) h/2; B: p *= exp(-xi h/2); O: p += -G1 grad U~ h + N(0, h (2 G2/beta
    - h B^ G1^2)). G1 is constant (identity, or rmsprop's frozen moment: it changes only after the step), so
    every piece is an exact flow and there are no grad-G terms."""
    d = s.dim
    theta, p, xi = z[:, :d], z[:, d: 2 * d], z[:, 2 * d: 3 * d]
    g1 = _constant_g1(s, z)
    g2 = g1 if s.params["G2"] == "G1" else 1.0
    theta = theta + 0.5 * eps * g1 * p
    xi = xi + 0.5 * eps * (p ** 2 - 1.0 / beta)
    p = p * np.exp(-0.5 * eps * xi)
    _, g, b = gradient(s, theta, rng)
    p = p - eps * g1 * g + kick(eps * (2 * g2 / beta - eps * b * g1 ** 2), p.shape, rng)
    p = p * np.exp(-0.5 * eps * xi)
    theta = theta + 0.5 * eps * g1 * p
    xi = xi + 0.5 * eps * (p ** 2 - 1.0 / beta)
    out = [theta, p, xi]
    if s.params["G1"] == "rmsprop":
        out.append(_moment(s, z, g, t))
    return np.concatenate(out, axis=1), ONE_GRADIENT


def _check_positive(s):
    """A typed G1 must be a preconditioner, g > 0 and finite, where the chains go: checked on a grid of the target's
    box (what a formula does beyond it the parser cannot know)."""
    box = np.asarray(s.potential.box, float)
    axes = [np.linspace(lo, hi, 41) for lo, hi in box]
    grid = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    g = _typed_values(s, grid)[0][:, 0]
    bad = ~(np.isfinite(g) & (g > 0))
    if bad.any():
        at = ", ".join(f"{n}={v:.3g}" for n, v in zip(G1_VARIABLES, grid[np.flatnonzero(bad)[0]]))
        raise SamplerError(f"G1 must be positive and finite on the target's box, but G1({at}) = "
                           f"{g[bad][0]:.3g}")


def _init_santa(s, chains, rng):
    """p ~ N(0, 1/beta); xi at the thermostat's centre g2 (1 where g2 depends on theta); v = V0."""
    d = s.dim
    if typed(s.params["G1"]):
        _check_positive(s)
    p = rng.standard_normal((chains, d)) / np.sqrt(s.beta)
    rms = s.params["G1"] == "rmsprop"
    centre = 1.0 / np.sqrt(s["lam"] + np.sqrt(V0)) if rms and s.params["G2"] == "G1" else 1.0
    out = [p, np.full((chains, d), centre)]
    if rms:
        out.append(np.full((chains, d), V0))
    return np.concatenate(out, axis=1)


SANTA_PARAMS = (
    EPS.at(0.02),
    choice("G1", "level", G1_CHOICES, "the preconditioner between θ and p; typed, expr:<g(x)> (1-D) or "
           "expr:<g(x, y)> (2-D) gives G₁ = g(θ)·I with g > 0, e.g. expr:1/(1+x^2)", typed=check_typed_g1),
    choice("G2", "G1", G2_CHOICES, "the momentum's diffusion"),
    Param("lam", 0.01, "rmsprop's floor: g1 = 1/sqrt(lam + sqrt v) stays below lam^−½", lo=0, above=True),
    Param("decay", 0.99, "rmsprop's memory: v ← decay·v + (1 − decay)·grad²", lo=0, hi=1, below=True),
    Param("adapt", 200, "rmsprop learns v during the first adapt steps, then freezes it", type=int, lo=0,
          hi=10 ** 7, unit="steps"),
    METRIC_D, METRIC_C, BHAT, INTEGRATOR,
    Param("anneal_b", 1000.0, "the annealing's time scale, β_t = β(1 + t/anneal_b)^anneal_c", lo=0, above=True,
          hi=1e12, unit="steps"),
    Param("anneal_c", 0.0, "the annealing's exponent (0: no annealing)", lo=0, hi=3))

SANTA = SamplerSpec(
    name="santa", title="Santa",
    source="Chen, Carlson, Gan, Li & Carin (2016), Eq. (2), derived from its (H, D, Q) (errata E11)",
    doc="Stochastic annealing thermostat: z = (θ, p, ξ), one ξ_i per coordinate; H = U + pᵀp/2 + |ξ − g₂|²/2, "
    "D = diag(0, G₂, 0), Q = −G₁ between θ and p, diag(p) between p and ξ. G1: level (G^{-1/2} with "
    "G⁻¹ = metric_D·sqrt|U + metric_C|, depends on θ), rmsprop (1/sqrt(lam + sqrt v), v the gradient's running "
    "second moment per chain, learnt for the first adapt steps and then frozen, after which the law is exact), "
    "identity, or typed: expr:<g(x)> (1-D) or expr:<g(x, y)> (2-D), G₁ = g(θ)·I with g > 0, e.g. expr:1/(1+x^2); "
    "G2: G1 or identity. integrator: euler or splitting (ABOBA; G1 not level). Annealing: "
    "β_t = β(1 + t/anneal_b)^anneal_c, off with anneal_c = 0.",
    params=SANTA_PARAMS, layout=santa_layout, recipe=santa_recipe, fast=santa_fast,
    fast_only=dict(integrator="splitting"), init_aux=_init_santa, family="thermostat")

SANTA_NAIVE = SamplerSpec(
    name="santa-naive", title="naive Santa",
    source="Chen et al. (2016), Algorithm 1: Eq. (2) without its ∇G terms",
    doc="Santa without the terms from the θ-dependence of G1 and G2: Γ_p = ∇·G₁ (divided by β) and "
    "G₁(ξ − G₂)∇G₂. With G1 = level (the default) or a typed θ-dependent G1 it leaves the target; with identity or "
    "rmsprop it is Santa.",
    params=SANTA_PARAMS, layout=santa_layout, recipe=santa_recipe, fast=santa_fast,
    fast_only=dict(integrator="splitting"), init_aux=_init_santa, corrected="santa", family="thermostat")
