"""The complete recipe (Ma, Chen & Fox 2015): a sampler is a triple (H, D(z), Q(z)).

For z = (theta, auxiliary variables), H(z) = U(theta) + K(z), D positive semidefinite and
Q skew-symmetric, the SDE

    dz = f(z) dt + sqrt(2 D(z)) dW,   f = -(D + Q) grad H + Gamma,   Gamma_i = sum_j d(D_ij + Q_ij)/dz_j

leaves exp(-H) invariant (Theorem 1). `Recipe` turns a triple into that drift, into the
minibatch update of Eq. (9)

    z <- z - eps [(D + Q) grad H~ - Gamma] + N(0, eps (2 D - eps B^)),

vectorised over chains, and into LaTeX. D and Q are sympy matrices in the state symbols;
they may depend on theta through U itself (written `sym.U`, an undefined function of
theta, so that sympy's chain rule gives Gamma in terms of U and its gradient). Matrices that
hold no symbol are used as constant numpy arrays. D and Q may also be plain functions of
the state, (N, n) -> (N, n, n); Gamma is then taken by central differences. A naive sampler
is the same recipe with a named term dropped: "gamma", "friction" (the D grad H part of the
drift, keeping D's noise) or "noise_correction" (B^ ignored).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from samplers.engine.info import ONE_GRADIENT

DROPPABLE = {"gamma": r"\Gamma", "friction": r"D\nabla H", "noise_correction": r"\epsilon\hat B"}


class RecipeError(ValueError):
    """An invalid (H, D, Q): the message names the offending entry and value."""


@dataclass
class StateSymbols:
    """Symbols for z = (theta, aux), the value of U and the components of grad U."""
    theta: list
    aux: list
    u: sympy.Symbol
    g: list
    U: sympy.Expr  # U(theta) as an undefined function, for the chain rule

    @property
    def z(self):
        return self.theta + self.aux

    @classmethod
    def make(cls, dim: int, aux_names: list[str]):
        theta = [sympy.Symbol("theta" if dim == 1 else f"theta_{i + 1}", real=True) for i in range(dim)]
        aux = [sympy.Symbol(a, real=True) for a in aux_names]
        u = sympy.Symbol("U", real=True)
        g = [sympy.Symbol(r"\nabla\tilde{U}" if dim == 1 else rf"\partial_{{{i + 1}}}\tilde{{U}}", real=True)
             for i in range(dim)]
        return cls(theta, aux, u, g, sympy.Function("U", real=True)(*theta))

    def flatten(self, expr):
        """Replace U(theta) and its first derivatives by the symbols u and g."""
        subs = {sympy.Derivative(self.U, t): gi for t, gi in zip(self.theta, self.g)}
        expr = expr.subs(subs).subs(self.U, self.u)
        if expr.has(sympy.Derivative) or expr.has(self.U.func):
            raise RecipeError("D and Q may depend on U but not on its gradient (Gamma would need the Hessian)")
        return expr


def _show(e) -> str:
    """An entry for an error message: short decimals, abs() as typed."""
    e = sympy.sympify(e)
    plain = all(q.q <= 1000 for q in e.atoms(sympy.Rational)) and not e.atoms(sympy.Float)
    return sympy.sstr(e if plain else sympy.N(e, 6)).replace("Abs(", "abs(")


class _Field:
    """A matrix or vector of expressions, evaluated per chain; constant when it holds no symbol."""

    def __init__(self, mat: sympy.Matrix, sym: StateSymbols, vector: bool = False):
        # a vector (Gamma, grad K) is held as shape (n,), per chain (N, n)
        self.shape = (mat.shape[0],) if vector else mat.shape
        flat = mat.applyfunc(sym.flatten)
        self.sym = flat
        self.const = None
        self.depends = flat.free_symbols
        if not self.depends:
            self.const = np.array(flat.tolist(), dtype=float).reshape(self.shape)
            return
        cells = np.array(flat.tolist(), dtype=object).reshape(self.shape)
        self._entries = [(idx, e) for idx, e in np.ndenumerate(cells) if e != 0]
        self._fn = sympy.lambdify([sym.z, sym.u, sym.g], [e for _, e in self._entries], "numpy")
        self.needs_u = sym.u in self.depends
        self.needs_g = bool(self.depends & set(sym.g))

    def __call__(self, z, u, g):
        if self.const is not None:
            return self.const
        n = z.shape[0]
        out = np.zeros((n,) + self.shape)
        vals = self._fn(list(z.T), u, None if g is None else list(g.T))
        for (idx, _), v in zip(self._entries, vals):
            out[(slice(None),) + idx] = v
        return out

    @property
    def structural(self) -> np.ndarray:
        """Which entries are not identically zero."""
        return np.array([[e != 0 for e in row] for row in self.sym.tolist()]).reshape(self.shape)


class _NumericField:
    """D(z) or Q(z) given as a function of the state, (N, n) -> (N, n, n): no symbols, Gamma by differences."""
    const = None
    sym = None
    needs_u = needs_g = False

    def __init__(self, fn, n: int, probes):
        self.fn, self.shape = fn, (n, n)
        with np.errstate(all="ignore"):
            self.structural = np.any(self(probes, None, None) != 0, axis=0)

    def __call__(self, z, u, g):
        return np.broadcast_to(np.asarray(self.fn(z), float), (z.shape[0],) + self.shape)


class _DifferencedGamma:
    """Gamma_i = sum_j d(D_ij + Q_ij)/dz_j by central differences, for numeric D and Q."""
    const = None
    sym = None
    needs_u = needs_g = False

    def __init__(self, D, Q, n: int, h: float = 1e-5):
        self.D, self.Q, self.n, self.h = D, Q, n, h
        self.shape = (n,)

    def __call__(self, z, u, g):
        out = np.zeros((z.shape[0], self.n))
        for j in range(self.n):
            e = np.zeros(self.n)
            e[j] = self.h
            up = self.D(z + e, u, g) + self.Q(z + e, u, g)
            down = self.D(z - e, u, g) + self.Q(z - e, u, g)
            out += (up[:, :, j] - down[:, :, j]) / (2 * self.h)
        return out


def _constant(m):
    return lambda z: m


def _rows_times(mat, rows, vec):
    """mat[..., rows, :] @ vec per chain, for a constant (n, n) or per-chain (N, n, n) matrix."""
    if mat.ndim == 2:
        return vec @ mat[rows].T
    return np.einsum("nij,nj->ni", mat[:, rows], vec)


def _columns(values, n):
    """Lambdified rows (arrays, or plain numbers for constant rows) as an (n, k) array."""
    return np.stack([np.broadcast_to(v, (n,)) for v in values], axis=1)


def scaled_noise(var, xi, what="2D - eps*Bhat"):
    """sqrt(var) * xi for per-coordinate variances; raises if one is clearly negative."""
    low = var.min(initial=0.0)
    if low < -1e-10 * max(float(np.abs(var).max(initial=0.0)), 1e-300):
        raise RecipeError(f"{what} is not positive semidefinite: variance {low:.4g}"
                          " (try a smaller step size or a smaller Bhat)")
    return np.sqrt(np.clip(var, 0.0, None)) * xi


def _correlated_noise(cov, xi, what):
    """L xi with L L^T = cov, per chain (cov (k, k) or (N, k, k)); raises if cov is not PSD."""
    diag = np.diagonal(cov, axis1=-2, axis2=-1)
    scale = max(float(np.abs(cov).max(initial=0.0)), 1e-300)
    tol = -1e-10 * scale
    if not np.any(cov - diag[..., :, None] * np.eye(cov.shape[-1])):
        if diag.min(initial=0.0) < tol:
            i = int(np.unravel_index(np.argmin(diag), diag.shape)[-1])
            raise RecipeError(f"{what} is not positive semidefinite: its diagonal entry {i} is {diag.min():.4g}"
                              " (try a smaller step size or a smaller Bhat)")
        return np.sqrt(np.clip(diag, 0.0, None)) * xi
    w, v = np.linalg.eigh(cov)
    if w.min() < tol:
        raise RecipeError(f"{what} is not positive semidefinite: eigenvalue {w.min():.4g}"
                          " (try a smaller step size or a smaller Bhat)")
    root = v * np.sqrt(np.clip(w, 0, None))[..., None, :]
    return xi @ root.T if root.ndim == 2 else np.einsum("nij,nj->ni", root, xi)


class Recipe:
    """A sampler as (H, D, Q) on z = (theta, aux).

    kinetic: H - U, a sympy expression in the state symbols.
    blocks: the update order of Eq. (9)'s Euler step, as lists of state indices; each block is
        updated with the newest values of the blocks before it (one block = plain explicit Euler).
    drop: terms removed to make a naive sampler ("gamma", "friction").
    aux_box: ranges of the auxiliary variables for grids (stationarity residual, plots).
    """

    def __init__(self, name: str, sym: StateSymbols, kinetic, D, Q, *, blocks=None, drop=(),
                 aux_box=(), description: str = ""):
        self.name, self.sym, self.description = name, sym, description
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
            probes = self._probe_points()[0]
            self.D, self.Q = (_NumericField(m if callable(m) else _constant(np.asarray(m, float)), self.n, probes)
                              for m in (D, Q))
            self._validate_numeric(probes)
            self.Gamma = _DifferencedGamma(self.D, self.Q, self.n)
        else:
            Dm, Qm = sympy.Matrix(D), sympy.Matrix(Q)
            self._validate_shapes(Dm, Qm)
            self.D, self.Q = _Field(Dm, sym), _Field(Qm, sym)
            self._validate_symmetry()
            gamma = sympy.Matrix([sum(sympy.diff(Dm[i, j] + Qm[i, j], sym.z[j]) for j in range(self.n))
                                  for i in range(self.n)])
            self.Gamma = _Field(gamma, sym, vector=True)
        dK = sympy.Matrix([sympy.diff(self.kinetic, v) for v in sym.z])
        self.dK = _Field(dK, sym, vector=True)
        self.blocks = [np.asarray(b) for b in (blocks or [list(range(self.n))])]
        if sorted(np.concatenate(self.blocks).tolist()) != list(range(self.n)):
            raise RecipeError("blocks must list every state index exactly once")
        self._plan()
        self._check_psd_on_probes()

    # -- validation ----------------------------------------------------------------
    def _validate_shapes(self, D, Q):
        for name, m in (("D", D), ("Q", Q)):
            if m.shape != (self.n, self.n):
                raise RecipeError(f"{name} must be {self.n}x{self.n} for z = {tuple(map(str, self.sym.z))}, "
                                  f"got {m.shape[0]}x{m.shape[1]}")
            for (i, j), e in np.ndenumerate(np.array(m.tolist(), dtype=object)):
                e = sympy.sympify(e)
                if e.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
                    raise RecipeError(f"{name}[{i},{j}] = {e} is not finite")

    def _validate_symmetry(self):
        D, Q, z = self.D.sym, self.Q.sym, self.sym.z
        for i in range(self.n):
            for j in range(i, self.n):
                if sympy.simplify(D[i, j] - D[j, i]) != 0:
                    raise RecipeError(f"D is not symmetric: D[{z[i]},{z[j]}] = {_show(D[i, j])} but "
                                      f"D[{z[j]},{z[i]}] = {_show(D[j, i])}")
                if sympy.simplify(Q[i, j] + Q[j, i]) != 0:
                    raise RecipeError(f"Q is not skew-symmetric: Q[{z[i]},{z[j]}] = {_show(Q[i, j])} but "
                                      f"Q[{z[j]},{z[i]}] = {_show(Q[j, i])} (should be {_show(-Q[i, j])})")

    def _validate_numeric(self, z):
        names = self.sym.z
        for label, field, sign in (("D", self.D, 1.0), ("Q", self.Q, -1.0)):
            with np.errstate(all="ignore"):
                m = field(z, None, None)
            if m.shape[1:] != (self.n, self.n):
                raise RecipeError(f"{label} must be {self.n}x{self.n}, got {m.shape[1:]}")
            gap = np.abs(m - sign * np.swapaxes(m, 1, 2))
            if np.nanmax(gap) > 1e-9 * max(1.0, np.nanmax(np.abs(m))):
                k, i, j = np.unravel_index(np.nanargmax(gap), gap.shape)
                kind = "symmetric" if label == "D" else "skew-symmetric"
                raise RecipeError(f"{label} is not {kind}: {label}[{names[i]},{names[j]}] = {m[k, i, j]:.4g} but "
                                  f"{label}[{names[j]},{names[i]}] = {m[k, j, i]:.4g} at z = "
                                  f"{np.round(z[k], 3).tolist()}")

    def _probe_points(self, n=64, seed=0):
        rng = np.random.default_rng(seed)
        z = rng.uniform(-3, 3, size=(n, self.n))
        for k, (lo, hi) in enumerate(self.aux_box):
            z[:, self.dim + k] = rng.uniform(lo, hi, n)
        return z, rng.uniform(-1, 5, n), rng.normal(size=(n, self.dim))

    def _check_psd_on_probes(self):
        z, u, g = self._probe_points()
        with np.errstate(all="ignore"):
            Dv = self.D(z, u, g)
        Dv = np.broadcast_to(Dv, (len(z), self.n, self.n))
        finite = np.isfinite(Dv).all(axis=(1, 2))
        if not finite.all():
            return  # the metric may be singular somewhere; the run's own checks report it
        w = np.linalg.eigvalsh(Dv)
        if w.min() < -1e-9 * max(1.0, np.abs(w).max()):
            k = np.argmin(w.min(axis=1))
            diag = np.diagonal(Dv[k])
            if diag.min() < 0:
                i = int(np.argmin(diag))
                raise RecipeError(f"D is not positive semidefinite: D[{self.sym.z[i]},{self.sym.z[i]}] = "
                                  f"{diag[i]:.4g} < 0")
            raise RecipeError(f"D is not positive semidefinite: eigenvalue {w.min():.4g} at z = "
                              f"{np.round(z[k], 3).tolist()}")

    # -- the update ----------------------------------------------------------------
    def _plan(self):
        """Work out once which quantities each block needs, so a step computes nothing extra."""
        d = self.dim
        M = self.D.structural | self.Q.structural
        self.noisy = np.flatnonzero(np.diag(self.D.structural))
        fields = (self.D, self.Q, self.Gamma, self.dK)
        self.needs_u = any(f.const is None and f.needs_u for f in fields)
        needs_g_any = any(f.const is None and f.needs_g for f in fields)
        self._block_plan = []
        for b in self.blocks:
            uses_grad = bool(M[np.ix_(b, np.arange(d))].any()) or needs_g_any or self.needs_u
            self._block_plan.append(dict(rows=b, uses_grad=uses_grad, moves_theta=bool((b < d).any()),
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
        eps_s, b_s = sympy.Symbol("eps"), sympy.Symbol("bhat")
        drift = self.drift_exprs()
        M = self.D.sym + self.Q.sym
        args = [sym.z, sym.u, sym.g]
        for plan in self._block_plan:
            rows, noisy = plan["rows"], plan["noisy"]
            plan["drift_fn"] = sympy.lambdify(args, [drift[i] for i in rows], "numpy")
            plan["var_fn"] = None
            if noisy.size and all(self.D.sym[i, j] == 0 and sum(M[i, k] * M[j, k] for k in range(d)) == 0
                                  for i in noisy for j in noisy if i != j):
                var = [eps_s * (2 * self.D.sym[i, i] - eps_s * b_s * sum(M[i, k] ** 2 for k in range(d)))
                       for i in noisy]
                plan["var_fn"] = sympy.lambdify(args + [eps_s, b_s], var, "numpy")

    def grad_h(self, z, g):
        """grad H with the (noisy) gradient g in the theta slots."""
        dk = self.dK(z, None, g)
        out = np.broadcast_to(dk, z.shape).copy() if dk.ndim == 1 else dk.copy()
        out[:, : self.dim] += g
        return out

    def drift(self, z, u, g, rows=None):
        """f = -(D + Q) grad H + Gamma, with the dropped terms removed; rows selects components."""
        rows = np.arange(self.n) if rows is None else rows
        Dv, Qv = self.D(z, u, g), self.Q(z, u, g)
        gh = self.grad_h(z, g)
        f = -_rows_times(Qv, rows, gh)
        if "friction" not in self.drop:
            f -= _rows_times(Dv, rows, gh)
        if "gamma" not in self.drop and not (self.Gamma.const is not None and not self.Gamma.const.any()):
            gam = self.Gamma(z, u, g)
            f += gam[rows] if gam.ndim == 1 else gam[:, rows]
        return f

    def noise_cov(self, z, u, g, eps, bhat, rows):
        """eps (2 D - eps B^_z) on `rows`, where B^_z = (D+Q)[:, theta] B^ (D+Q)[:, theta]^T maps the
        gradient-noise covariance B^ into z-space (the noise enters through (D+Q) grad H~)."""
        Dv = self.D(z, u, g)
        D_rr = Dv[np.ix_(rows, rows)] if Dv.ndim == 2 else Dv[:, rows][:, :, rows]
        cov = 2.0 * D_rr
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

    def step(self, z, rng, oracle, eps: float, bhat=0.0):
        """One Euler step of Eq. (9) for every chain; returns the new state (z is not modified).

        bhat: the gradient-noise covariance estimate B^ in theta-space (scalar, (d, d) or per chain),
        or None to ask the oracle right after each gradient evaluation (a minibatch's own estimate).

        Random draws, in order: the oracle's gradient noise whenever it is evaluated, then the
        injected noise of each block. Specialised samplers draw in the same order.
        """
        z = np.array(z, dtype=float, copy=True)
        u = g = None
        b_now = 0.0
        for plan in self._block_plan:
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
                f = _columns(plan["drift_fn"](cols, u, gcols), z.shape[0])
            else:
                f = self.drift(z, u, gg, rows)
            if noisy.size:
                xi = rng.standard_normal((z.shape[0], noisy.size))
                if compiled and plan.get("var_fn") is not None:
                    kick = scaled_noise(_columns(plan["var_fn"](cols, u, gcols, eps, float(b)), z.shape[0]), xi)
                else:
                    kick = _correlated_noise(self.noise_cov(z, u, gg, eps, b, noisy), xi, "2D - eps*Bhat")
            z[:, rows] += eps * f
            if noisy.size:
                z[:, noisy] += kick
            if plan["moves_theta"]:
                u = g = None
        return z

    def advance(self, z, rng, oracle, eps: float, bhat=0.0, t: int = 1):
        """`step` with what it did: (new state, StepInfo)."""
        return self.step(z, rng, oracle, eps, bhat), ONE_GRADIENT

    # -- presentation --------------------------------------------------------------
    def matrices_latex(self) -> dict:
        sym = self.sym
        if self.numeric:
            return dict(z=sympy.latex(sympy.Matrix(sym.z).T), H="U + " + sympy.latex(self.kinetic),
                        D=r"D(z)\ \text{(numeric)}", Q=r"Q(z)\ \text{(numeric)}",
                        Gamma=r"\Gamma(z)\ \text{(differences)}")
        H = sympy.Symbol("U") + sym.flatten(self.kinetic)
        show = lambda m: sympy.latex(m)  # noqa: E731
        return dict(z=sympy.latex(sympy.Matrix(sym.z).T), H=sympy.latex(H), D=show(self.D.sym),
                    Q=show(self.Q.sym), Gamma=show(self.Gamma.sym.T))

    def drift_exprs(self, dropped: bool = True):
        """The drift f_i as sympy expressions in the state, U and grad U~ (dropped terms removed)."""
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
                fi += self.Gamma.sym[i]
            out.append(sympy.expand(fi))
        return out

    def latex_sde(self) -> str:
        if self.numeric:
            return r"dz = \left[-(D(z) + Q(z))\nabla H(z) + \Gamma(z)\right]dt + \sqrt{2D(z)}\,dW"
        sym = self.sym
        lines = []
        for i, fi in enumerate(self.drift_exprs()):
            dii = self.D.sym[i, i]
            noise = "" if dii == 0 else rf" + \sqrt{{2\,{sympy.latex(dii)}}}\, dW_{{{i + 1}}}"
            lines.append(rf"d{sympy.latex(sym.z[i])} &= \left({sympy.latex(fi)}\right) dt{noise}")
        return r"\begin{aligned}" + r"\\ ".join(lines).replace(r"\nabla\tilde{U}", r"\nabla U") \
            + r"\end{aligned}"

    def latex_update(self) -> str:
        if self.numeric:
            return (r"z \leftarrow z - \epsilon\left[(D + Q)\nabla\tilde H - \Gamma\right]"
                    r" + \mathcal N\!\left(0, \epsilon(2D - \epsilon\hat B)\right)")
        sym, eps = self.sym, sympy.Symbol(r"\epsilon")
        drift = self.drift_exprs()
        lines = []
        for plan in self._block_plan:
            for i in plan["rows"]:
                zi = sympy.latex(sym.z[i])
                rhs = sympy.latex(sym.z[i] + eps * drift[i])
                if i in self.noisy:
                    dii = sympy.latex(self.D.sym[i, i])
                    rhs += rf" + \mathcal N\!\left(0,\ \epsilon\,(2\,{dii} - \epsilon \hat B_{{{zi}}})\right)"
                lines.append(rf"{zi} &\leftarrow {rhs}")
        note = ""
        if len(self.blocks) > 1:
            note = r"\\ &\text{(in this order, each line using the newest values)}"
        return r"\begin{aligned}" + r"\\ ".join(lines) + note + r"\end{aligned}"

    def with_drop(self, drop) -> Recipe:
        """The same (H, D, Q) with other terms dropped: the naive/corrected switch."""
        return Recipe(self.name, self.sym, self.kinetic, *self._raw, blocks=self.blocks,
                      drop=drop, aux_box=self.aux_box, description=self.description)
