"""The complete recipe (Ma, Chen & Fox 2015): a sampler is a triple (H, D(z), Q(z)).

For z = (theta, auxiliary variables), H(z) = U(theta) + K(z), D positive semidefinite and
Q skew-symmetric, the SDE

    dz = f(z) dt + sqrt(2 D(z)) dW,   f = -(D + Q) grad H + Gamma,   Gamma_i = sum_j d(D_ij + Q_ij)/dz_j

leaves exp(-H) invariant (Theorem 1). `Recipe` turns a triple into that drift, into the
minibatch update of Eq. (9)

    z <- z - eps [(D + Q) grad H~ - Gamma] + N(0, eps (2 D - eps B^)),

and its tempered form at inverse temperature beta, which leaves exp(-beta H) invariant: the recipe
(beta H, D / beta, Q / beta), whose drift is -(D + Q) grad H + Gamma / beta and whose noise is
N(0, eps (2 D / beta - eps B^)) (docs/tempering.md),

vectorised over chains, and into LaTeX. D and Q are sympy matrices in the state symbols;
they may depend on theta through U itself (written `sym.U`, an undefined function of
theta, so that sympy's chain rule gives Gamma in terms of U and its gradient). Matrices that
hold no symbol are used as constant numpy arrays. D and Q may also be plain functions of
the state, (N, n) -> (N, n, n); Gamma is then taken by central differences. A naive sampler
is the same recipe with a named term dropped: "gamma", "friction" (the D grad H part of the
drift, keeping D's noise) or "noise_correction" (B^ ignored).

A recipe on theta > 0 may be mirrored at 0 (`mirror`): the state is folded before the step and after
each block that moves theta, theta_k <- |theta_k| with the columns paired to theta_k (its momentum)
multiplied by sign(theta_k). That is the image of the recipe's process on the reflection-symmetric
extension U(|theta|): when the drift and diffusion commute with each reflection (theta_k, r_k) -> (-theta_k, -r_k),
the folded process is Markov, and the fold of the extension's stationary law exp(-H(|theta|, r)), which is
the target on theta > 0 times the momentum's law, is stationary for it.
"""
from __future__ import annotations

import numpy as np
import sympy

from samplers.engine import latex, validate
from samplers.engine.fields import (
    ConstantVector,
    DifferencedGamma,
    Field,
    NumericField,
    columns,
    constant,
    rows_times,
)
from samplers.engine.info import ONE_GRADIENT
from samplers.engine.noise import correlated_noise, scaled_noise
from samplers.engine.symbols import DROPPABLE, RecipeError, StateSymbols


class Recipe:
    """A sampler as (H, D, Q) on z = (theta, aux).

    kinetic: H - U, a sympy expression in the state symbols.
    blocks: the update order of Eq. (9)'s Euler step, as lists of state indices; each block is
        updated with the newest values of the blocks before it (one block = plain explicit Euler).
    drop: terms removed to make a naive sampler ("gamma", "friction").
    aux_box: ranges of the auxiliary variables for grids (stationarity residual, plots).
    mirror: ((theta index, (paired aux indices, ...)), ...): coordinates folded onto theta > 0 (see above).
    """

    def __init__(self, name: str, sym: StateSymbols, kinetic, D, Q, *, blocks=None, drop=(),
                 aux_box=(), description: str = "", gamma_zero: bool = False, mirror=()):
        self.name, self.sym, self.description = name, sym, description
        self.mirror = tuple((int(k), tuple(int(j) for j in paired)) for k, paired in mirror)
        self.dim, self.n = len(sym.theta), len(sym.z)
        unknown = set(drop) - set(DROPPABLE)
        if unknown:
            raise RecipeError(f"can only drop {sorted(DROPPABLE)}, not {sorted(unknown)}")
        self.drop = frozenset(drop)
        self.kinetic = sympy.sympify(kinetic)
        self.aux_box = list(aux_box) or [(-4.0, 4.0)] * len(sym.aux)
        self._raw = (D, Q)  # as given (U not yet flattened to a symbol, so Gamma keeps the chain rule)
        self.numeric = callable(D) or callable(Q)
        if self.numeric:
            probes = validate.probe_points(self)[0]
            self.D, self.Q = (NumericField(m if callable(m) else constant(np.asarray(m, float)), self.n, probes)
                              for m in (D, Q))
            validate.numeric_symmetry(self, probes)
            # a claimed zero Gamma is still checked: the stationarity residual differences the drift itself
            self.Gamma = ConstantVector(np.zeros(self.n)) if gamma_zero else DifferencedGamma(self.D, self.Q, self.n)
        else:
            Dm, Qm = sympy.Matrix(D), sympy.Matrix(Q)
            validate.shapes(self, Dm, Qm)
            self.D, self.Q = Field(Dm, sym), Field(Qm, sym)
            validate.symmetry(self)
            gamma = sympy.Matrix([sum(sympy.diff(Dm[i, j] + Qm[i, j], sym.z[j]) for j in range(self.n))
                                  for i in range(self.n)])
            self.Gamma = Field(gamma, sym, vector=True)
        dK = sympy.Matrix([sympy.diff(self.kinetic, v) for v in sym.z])
        self.dK = Field(dK, sym, vector=True)
        self.blocks = [np.asarray(b) for b in (blocks or [list(range(self.n))])]
        if sorted(np.concatenate(self.blocks).tolist()) != list(range(self.n)):
            raise RecipeError("blocks must list every state index exactly once")
        self._plan()
        validate.psd_on_probes(self)

    # -- the update ----------------------------------------------------------------
    def fold(self, z):
        """Mirror z at theta_k = 0 in place: theta_k <- |theta_k|, paired columns times sign(theta_k)."""
        for k, paired in self.mirror:
            neg = z[:, k] < 0
            if neg.any():
                z[neg, k] = -z[neg, k]
                for j in paired:
                    z[neg, j] = -z[neg, j]
        return z

    def _plan(self):
        """Work out once which quantities each block needs, so a step computes nothing extra."""
        d = self.dim
        M = self.D.structural | self.Q.structural
        self.noisy = np.flatnonzero(np.diag(self.D.structural))
        fields = (self.D, self.Q, self.Gamma, self.dK)
        self.needs_u = any(f.const is None and f.needs_u for f in fields)
        needs_g_any = any(f.const is None and f.needs_g for f in fields)
        self.block_plan = []
        for b in self.blocks:
            uses_grad = bool(M[np.ix_(b, np.arange(d))].any()) or needs_g_any or self.needs_u
            self.block_plan.append(dict(rows=b, uses_grad=uses_grad, moves_theta=bool((b < d).any()),
                                         noisy=np.intersect1d(b, self.noisy)))
        self._compile()

    def _compile(self):
        """Lambdify each block's drift rows, and its noise variances for a scalar B^, into numpy code.

        This is the engine's hot path: the same formulas as `drift` and `noise_cov`, but without
        building per-chain matrices. A matrix or per-chain B^ (minibatch estimates) and correlated
        noise use the matrix path.
        """
        if self.numeric:
            return
        sym, d = self.sym, self.dim
        eps_s, b_s, beta_s = sympy.Symbol("eps"), sympy.Symbol("bhat"), sympy.Symbol("beta")
        drift = self.drift_exprs(beta=beta_s)
        M = self.D.sym + self.Q.sym
        args = [sym.z, sym.u, sym.g, beta_s]
        for plan in self.block_plan:
            rows, noisy = plan["rows"], plan["noisy"]
            plan["drift_fn"] = sympy.lambdify(args, [drift[i] for i in rows], "numpy")
            plan["var_fn"] = None
            if noisy.size and all(self.D.sym[i, j] == 0 and sum(M[i, k] * M[j, k] for k in range(d)) == 0
                                  for i in noisy for j in noisy if i != j):
                var = [eps_s * (2 * self.D.sym[i, i] / beta_s - eps_s * b_s * sum(M[i, k] ** 2 for k in range(d)))
                       for i in noisy]
                plan["var_fn"] = sympy.lambdify(args + [eps_s, b_s], var, "numpy")

    def grad_h(self, z, g, u=None):
        """grad H with the (noisy) gradient g in the theta slots (u: U's value, for a kinetic part that depends on
        theta through U, as Santa's thermostat term with a theta-dependent G2)."""
        dk = self.dK(z, u, g)
        out = np.broadcast_to(dk, z.shape).copy() if dk.ndim == 1 else dk.copy()
        out[:, : self.dim] += g
        return out

    def drift(self, z, u, g, rows=None, beta: float = 1.0):
        """f = -(D + Q) grad H + Gamma / beta, with the dropped terms removed; rows selects components."""
        rows = np.arange(self.n) if rows is None else rows
        Dv, Qv = self.D(z, u, g), self.Q(z, u, g)
        gh = self.grad_h(z, g, u)
        f = -rows_times(Qv, rows, gh)
        if "friction" not in self.drop:
            f -= rows_times(Dv, rows, gh)
        if "gamma" not in self.drop and not (self.Gamma.const is not None and not self.Gamma.const.any()):
            gam = self.Gamma(z, u, g)
            f += (gam[rows] if gam.ndim == 1 else gam[:, rows]) / beta
        return f

    def noise_cov(self, z, u, g, eps, bhat, rows, beta: float = 1.0):
        """eps (2 D / beta - eps B^_z) on `rows`, where B^_z = (D+Q)[:, theta] B^ (D+Q)[:, theta]^T maps the
        gradient-noise covariance B^ into z-space (the noise enters through (D+Q) grad H~)."""
        Dv = self.D(z, u, g)
        D_rr = Dv[np.ix_(rows, rows)] if Dv.ndim == 2 else Dv[:, rows][:, :, rows]
        cov = (2.0 / beta) * D_rr
        if np.any(bhat):
            M = Dv + self.Q(z, u, g)
            Mt = M[rows][:, : self.dim] if M.ndim == 2 else M[:, rows][:, :, : self.dim]
            B = np.asarray(bhat, float)
            if B.ndim == 0:
                Bz = B * (Mt @ np.swapaxes(Mt, -1, -2))
            else:
                Bz = Mt @ B @ np.swapaxes(Mt, -1, -2)
            cov = cov - eps * Bz
        return eps * cov

    def step(self, z, rng, oracle, eps: float, bhat=0.0, beta: float = 1.0):
        """One Euler step of Eq. (9) for every chain, tempered to exp(-beta H); returns the new state (z is
        not modified).

        bhat: the gradient-noise covariance estimate B^ in theta-space (scalar, (d, d) or per chain),
        or None to ask the oracle right after each gradient evaluation (a minibatch's own estimate).

        Random draws, in order: the oracle's gradient noise whenever it is evaluated, then the
        injected noise of each block. Specialised samplers draw in the same order.
        """
        z = np.array(z, dtype=float, copy=True)
        if self.mirror:
            self.fold(z)
        u = g = None
        b_now = 0.0
        for plan in self.block_plan:
            rows = plan["rows"]
            if plan["uses_grad"] and g is None:
                u, g = oracle(z[:, : self.dim], rng, value=self.needs_u)
                b_now = oracle.bhat(z[:, : self.dim]) if bhat is None else bhat
                if "noise_correction" in self.drop:
                    b_now = 0.0
            gg = g if g is not None else np.zeros((z.shape[0], self.dim))
            noisy = plan["noisy"]
            b = b_now if plan["uses_grad"] else 0.0
            compiled = np.ndim(b) == 0 and "drift_fn" in plan
            if compiled:
                cols, gcols = list(z.T), list(gg.T)
                f = columns(plan["drift_fn"](cols, u, gcols, beta), z.shape[0])
            else:
                f = self.drift(z, u, gg, rows, beta)
            if noisy.size:
                xi = rng.standard_normal((z.shape[0], noisy.size))
                if compiled and plan.get("var_fn") is not None:
                    kick = scaled_noise(columns(plan["var_fn"](cols, u, gcols, beta, eps, float(b)), z.shape[0]), xi)
                else:
                    kick = correlated_noise(self.noise_cov(z, u, gg, eps, b, noisy, beta), xi, "2D/beta - eps*Bhat")
            z[:, rows] += eps * f
            if noisy.size:
                z[:, noisy] += kick
            if plan["moves_theta"]:
                u = g = None
                if self.mirror:
                    self.fold(z)
        return z

    def advance(self, z, rng, oracle, eps: float, bhat=0.0, t: int = 1, beta: float = 1.0):
        """`step` with what it did: (new state, StepInfo)."""
        return self.step(z, rng, oracle, eps, bhat, beta), ONE_GRADIENT

    # -- presentation --------------------------------------------------------------
    def matrices_latex(self) -> dict:
        return latex.matrices(self)

    def drift_exprs(self, dropped: bool = True, beta=None):
        """The drift f_i as sympy expressions in the state, U and grad U~ (dropped terms removed);
        with beta (a number or symbol), the tempered drift, Gamma divided by beta."""
        if self.numeric:
            raise RecipeError("a recipe with numeric D and Q has no symbolic drift")
        sym = self.sym
        gh = [sym.flatten(sympy.diff(self.kinetic, v)) for v in sym.z]
        gh = [gh[i] + sym.g[i] if i < self.dim else gh[i] for i in range(self.n)]
        out = []
        for i in range(self.n):
            q = -sum(self.Q.sym[i, j] * gh[j] for j in range(self.n))
            dterm = -sum(self.D.sym[i, j] * gh[j] for j in range(self.n))
            fi = q + (0 if (dropped and "friction" in self.drop) else dterm)
            if not (dropped and "gamma" in self.drop):
                fi += self.Gamma.sym[i] if beta is None else self.Gamma.sym[i] / beta
            # multiplied out when small (the registered recipes: their compiled drift is these sums); a typed
            # cell may be a power of a sum that would multiply out to millions of terms
            out.append(validate.multiplied_out(fi))
        return out

    def latex_sde(self) -> str:
        return latex.sde(self)

    def latex_update(self) -> str:
        return latex.update(self)

    def with_drop(self, drop) -> Recipe:
        """The same (H, D, Q) with other terms dropped: the naive/corrected switch."""
        return Recipe(self.name, self.sym, self.kinetic, *self._raw, blocks=self.blocks,
                      drop=drop, aux_box=self.aux_box, description=self.description, mirror=self.mirror)
