"""Target distributions p(theta) ~ exp(-U(theta)): U, its gradient, and the exact law.

Every potential works on arrays shaped (chains, dim). Low-dimensional ones (dim 1 or 2)
carry their normalising constant, computed once on a fine grid over the plotting box, so
the exact density and its marginals are available for histograms, KL and KS. Presets
with a closed form (the Gaussians, the mixture) use it instead and are checked against
scipy.stats in the tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np
from scipy import stats
from scipy.special import logsumexp

Array = np.ndarray


class PotentialError(ValueError):
    """A potential that cannot be used: unknown name, bad expression, not integrable."""


@dataclass
class Potential:
    name: str
    dim: int
    U: Callable[[Array], Array]           # (N, dim) -> (N,)
    grad: Callable[[Array], Array]        # (N, dim) -> (N, dim)
    box: tuple                            # ((lo, hi), ...) for the plotted coordinates
    description: str = ""
    formula: str = ""                     # LaTeX of U
    u_min: float | None = None            # minimum of U (sets the SGRHMC metric constant)
    log_z: float | None = None            # log normalising constant of exp(-U)
    marginals: dict = field(default_factory=dict)  # i -> exact 1-D marginal density of theta_i
    exact_sampler: Callable | None = None  # (n, rng) -> (n, dim) exact draws, where cheap
    data: object = None                    # the data set of a data posterior (for minibatches)
    start: Array | None = None             # where chains start by default

    def __post_init__(self):
        if self.dim <= 2 and (self.log_z is None or self.u_min is None):
            self._normalise_on_grid()
        if self.dim <= 2:
            for i in range(self.dim):
                if i not in self.marginals:   # a grid pass per missing marginal: skip closed forms
                    self.marginals[i] = self._grid_marginal(i)

    # -- exact density -------------------------------------------------------------
    def U_chunked(self, theta: Array, chunk: int = 20000) -> Array:
        """U over many points without building huge temporaries (data posteriors)."""
        with np.errstate(all="ignore"):
            return np.concatenate([self.U(theta[i:i + chunk]) for i in range(0, len(theta), chunk)])

    def log_density(self, theta: Array) -> Array:
        return -self.U_chunked(np.atleast_2d(theta)) - self.log_z

    def density(self, theta: Array) -> Array:
        return np.exp(self.log_density(theta))

    def density_xy(self, x: Array, y: Array | None = None) -> Array:
        """Density on broadcastable coordinate arrays (1-D: x only)."""
        if self.dim == 1:
            x = np.asarray(x, float)
            return self.density(x.reshape(-1, 1)).reshape(x.shape)
        x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
        pts = np.stack([x.ravel(), y.ravel()], axis=1)
        return self.density(pts).reshape(x.shape)

    def grid(self, n: int = 201):
        """Axes and normalised density on an n (x n) grid over the box."""
        axes = [np.linspace(lo, hi, n) for lo, hi in self.box[: min(self.dim, 2)]]
        if self.dim == 1:
            return axes, self.density_xy(axes[0])
        X, Y = np.meshgrid(axes[0], axes[1], indexing="ij")
        return axes, self.density_xy(X, Y)

    # -- normalisation -------------------------------------------------------------
    def _normalise_on_grid(self, n: int | None = None):
        n = n or (8001 if self.dim == 1 else 501)
        axes = [np.linspace(lo, hi, n) for lo, hi in self.box]
        pts = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
        u = self.U_chunked(pts)
        bad = ~np.isfinite(u)
        if bad.any():
            where = pts[np.argmax(bad)]
            raise PotentialError(f"U is not finite at {_fmt(where)} inside the box {self.box}")
        cell = np.prod([a[1] - a[0] for a in axes])
        # trapezoid weights keep the constant accurate at these grid sizes
        w = np.ones([n] * self.dim)
        for k in range(self.dim):
            sl = [slice(None)] * self.dim
            sl[k] = [0, -1]
            w[tuple(sl)] *= 0.5
        log_w = np.log(w.ravel() * cell)
        self.log_z = float(logsumexp(-u + log_w))
        self.u_min = float(u.min()) if self.u_min is None else self.u_min
        self._check_contained(u.reshape([n] * self.dim))
        self._u_grid = (axes, u.reshape([n] * self.dim))   # reused by the grid marginals

    def _check_contained(self, u_grid: Array):
        """exp(-U) must have decayed at the edges of the box, or the law is not in the picture."""
        edge = np.concatenate([np.moveaxis(u_grid, k, 0)[[0, -1]].ravel() for k in range(self.dim)])
        rel = np.exp(-(edge.min() - u_grid.min()))
        if rel > 1e-4:
            raise PotentialError(
                "exp(-U) does not decay inside the box "
                f"{self.box}: at its edge the density is {rel:.2g} of its peak "
                "(is U bounded below and growing in every direction?)")

    def _grid_marginal(self, i: int, n: int = 501):
        if self.dim == 1:
            return lambda x: self.density_xy(x)
        cached = getattr(self, "_u_grid", None)
        if cached is not None and len(cached[0][0]) == n:
            axes, dens = cached[0], np.exp(-cached[1] - self.log_z)
        else:
            axes = [np.linspace(lo, hi, n) for lo, hi in self.box]
            dens = self.density_xy(*np.meshgrid(*axes, indexing="ij"))
        other = axes[1 - i]
        m = np.trapezoid(dens, other, axis=1 - i)
        xs = axes[i]
        return lambda x: np.interp(x, xs, m, left=0.0, right=0.0)


def _fmt(v) -> str:
    return "(" + ", ".join(f"{float(t):.3g}" for t in np.ravel(v)) + ")"


# ----------------------------------------------------------------------------------
# presets
# ----------------------------------------------------------------------------------
def gaussian() -> Potential:
    return Potential(
        "gaussian", 1, lambda t: 0.5 * t[:, 0] ** 2, lambda t: t.copy(), ((-5.0, 5.0),),
        description="standard normal, U = θ²/2 (recipe paper Fig. 2 left)",
        formula=r"U(\theta) = \theta^2/2", u_min=0.0, log_z=0.5 * np.log(2 * np.pi),
        marginals={0: stats.norm().pdf},
        exact_sampler=lambda n, rng: rng.standard_normal((n, 1)),
        start=np.zeros(1))


def double_well() -> Potential:
    return Potential(
        "double-well", 1, lambda t: t[:, 0] ** 4 - 2 * t[:, 0] ** 2,
        lambda t: 4 * t ** 3 - 4 * t, ((-3.0, 3.0),),
        description="two modes at ±1, U = θ⁴ − 2θ² (recipe paper Fig. 2 left; Chen et al. Fig. 1)",
        formula=r"U(\theta) = \theta^4 - 2\theta^2", u_min=-1.0, start=np.zeros(1))


def banana() -> Potential:
    def U(t):
        a, b = t[:, 0], t[:, 1]
        return a ** 4 / 10 + (4 * (b + 1.2) - a ** 2) ** 2 / 2

    def grad(t):
        a, b = t[:, 0], t[:, 1]
        s = 4 * (b + 1.2) - a ** 2
        return np.stack([0.4 * a ** 3 - 2 * a * s, 4 * s], axis=1)

    return Potential(
        "banana", 2, U, grad, ((-4.0, 4.0), (-2.5, 3.5)),
        description="banana-shaped, U = θ₁⁴/10 + (4(θ₂ + 1.2) − θ₁²)²/2 (recipe paper Fig. 2 right)",
        formula=r"U(\theta) = \theta_1^4/10 + \left(4(\theta_2+1.2) - \theta_1^2\right)^2/2",
        u_min=0.0, start=np.array([0.0, -1.2]))


def gaussian_nd(name: str, cov: Array, description: str, formula: str, box_sd: float = 5.0) -> Potential:
    cov = np.asarray(cov, float)
    d = cov.shape[0]
    prec = np.linalg.inv(cov)
    law = stats.multivariate_normal(np.zeros(d), cov)
    sd = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov)
    return Potential(
        name, d, lambda t: 0.5 * np.einsum("ni,ij,nj->n", t, prec, t), lambda t: t @ prec,
        tuple((-box_sd * s, box_sd * s) for s in sd[:2]), description=description, formula=formula,
        u_min=0.0, log_z=0.5 * (d * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]),
        marginals={i: stats.norm(0, sd[i]).pdf for i in range(d)},
        exact_sampler=lambda n, rng: rng.standard_normal((n, d)) @ chol.T, start=np.zeros(d))


def correlated_gaussian(rho: float = 0.9) -> Potential:
    if not -1 < rho < 1:
        raise PotentialError(f"correlated-gaussian needs -1 < rho < 1, got {rho}")
    return gaussian_nd(
        "correlated-gaussian", [[1.0, rho], [rho, 1.0]],
        f"2-D Gaussian, unit variances, correlation ρ = {rho:g}",
        r"U(\theta) = \tfrac12 \theta^\top \Sigma^{-1}\theta,\ \Sigma = \begin{pmatrix}1&\rho\\\rho&1\end{pmatrix}")


def gaussian_100d() -> Potential:
    d = 100
    return gaussian_nd(
        "gaussian-100d", np.ones((d, d)) + 4 * np.eye(d),
        "100-d Gaussian with covariance 11ᵀ + 4I (QNHMC paper §5.1)",
        r"U(\theta) = \tfrac12 \theta^\top (\mathbf 1\mathbf 1^\top + 4I)^{-1}\theta", box_sd=4.0)


MIXTURE_MEANS = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
MIXTURE_WEIGHTS = np.array([0.4, 0.35, 0.25])
MIXTURE_SD = 0.6


def mixture() -> Potential:
    means, w, s = MIXTURE_MEANS, MIXTURE_WEIGHTS, MIXTURE_SD
    log_w = np.log(w) - np.log(2 * np.pi * s ** 2)

    def parts(t):
        diff = t[:, None, :] - means[None]
        return log_w - 0.5 * (diff ** 2).sum(-1) / s ** 2, diff

    def U(t):
        return -logsumexp(parts(t)[0], axis=1)

    def grad(t):
        logp, diff = parts(t)
        resp = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
        return (resp[:, :, None] * diff).sum(1) / s ** 2

    def sample(n, rng):
        k = rng.choice(len(w), size=n, p=w)
        return means[k] + s * rng.standard_normal((n, 2))

    marg = {i: (lambda x, i=i: sum(wk * stats.norm(m[i], s).pdf(x) for wk, m in zip(w, means)))
            for i in range(2)}
    u_min = float(U(means).min())
    return Potential(
        "mixture", 2, U, grad, ((-4.5, 4.5), (-4.5, 4.5)),
        description="three well-separated Gaussian modes (weights 0.4, 0.35, 0.25, sd 0.6)",
        formula=r"U(\theta) = -\log \sum_k w_k\, \mathcal N(\theta; \mu_k, 0.6^2 I)",
        u_min=u_min, log_z=0.0, marginals=marg, exact_sampler=sample, start=np.zeros(2))


PRESETS: dict[str, Callable[..., Potential]] = {
    "gaussian": gaussian,
    "double-well": double_well,
    "banana": banana,
    "correlated-gaussian": correlated_gaussian,
    "mixture": mixture,
    "gaussian-100d": gaussian_100d,
}


# prefix -> builder(text after the prefix, **kwargs), registered by the modules that define them
PREFIXES: dict[str, Callable[..., Potential]] = {}


def preset_names() -> list[str]:
    from samplers import data_posterior, dirichlet  # noqa: F401  (register the data posteriors and simplex targets)
    return list(PRESETS)


def get_potential(spec: str, **kwargs) -> Potential:
    """A preset by name, or `expr:<U in x (and y)>` for a typed potential.

    Presets are built once per process (their grids cost a moment); treat them as read-only.
    """
    from samplers import data_posterior, dirichlet  # noqa: F401  (register the data posteriors and simplex targets)
    spec = spec.strip()
    if spec.startswith("expr:"):
        from samplers.typed import typed_potential
        return typed_potential(spec[len("expr:"):], **kwargs)
    for prefix, build in PREFIXES.items():
        if spec.startswith(prefix):
            return build(spec[len(prefix):], **kwargs)
    if spec not in PRESETS:
        raise PotentialError(f"unknown potential '{spec}' (choose from {', '.join(PRESETS)}, or expr:...)")
    return _preset(spec, tuple(sorted(kwargs.items())))


@lru_cache(maxsize=32)
def _preset(name: str, kwargs: tuple) -> Potential:
    return PRESETS[name](**dict(kwargs))
