"""Target distributions p(theta) ~ exp(-U(theta)): U, its gradient, and the exact law.

Every potential works on arrays shaped (chains, dim). Low-dimensional ones (dim 1 or 2)
carry their normalising constant, computed once on a fine grid over the plotting box, so
the exact density and its marginals are available for histograms, KL and KS. Presets
with a closed form (the Gaussians, the mixture) use it instead and are checked against
scipy.stats in the tests.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.special import logsumexp

from samplers import diagnostics as dg
from samplers.errors import InputError

Array = np.ndarray


class PotentialError(InputError):
    """A potential that cannot be used: unknown name, bad expression, not integrable."""


class NotFinite(PotentialError):
    """U is infinite or undefined at `where`, inside the box the law is drawn on."""

    def __init__(self, message: str, where):
        super().__init__(message)
        self.where = where


class NotIntegrable(PotentialError):
    """exp(-U) has not decayed at the edge of the box: U is not growing in every direction."""


@dataclass
class Potential:
    name: str
    dim: int
    U: Callable[[Array], Array]           # (N, dim) -> (N,)
    grad: Callable[[Array], Array]        # (N, dim) -> (N, dim)
    box: tuple                            # ((lo, hi), ...) for the plotted coordinates
    description: str = ""
    formula: str = ""                     # LaTeX of U
    known_u_min: float | None = None      # minimum of U where known (else found on the grid)
    known_log_z: float | None = None      # log normalising constant of exp(-U) where known in closed form
    known_marginals: dict = field(default_factory=dict)  # i -> closed-form 1-D marginal density of theta_i
    exact_sampler: Callable | None = None  # (n, rng) -> (n, dim) exact draws, where cheap
    # exact draws of the sampled state where exact_sampler gives a view of it (the simplex's theta, not omega)
    state_sampler: Callable | None = None
    data: object = None                    # the data set of a data posterior (for minibatches)
    start: Array | None = None             # where chains start by default
    temper: Callable | None = None         # beta -> the tempered law exp(-beta U) in closed form, where known
    # the exact law by adaptive cubature (targets.reference.Reference): log Z, bin masses and marginals where no
    # closed form is known and a grid would miss features narrower than its step (typed targets)
    reference: object = None

    # -- the exact law, computed when first asked for: building a potential costs nothing -------
    @cached_property
    def _normalisation(self) -> tuple:
        if self.reference is not None:
            return self.reference.log_z, self.reference.u_min
        if self.dim <= 2 and (self.known_log_z is None or self.known_u_min is None):
            log_z, u_min = self._normalise_on_grid()
            return log_z, u_min if self.known_u_min is None else self.known_u_min
        return self.known_log_z, self.known_u_min

    @property
    def log_z(self) -> float | None:
        return self._normalisation[0]

    @property
    def u_min(self) -> float | None:
        """The minimum of U (it sets the SGRLD/SGRHMC metric constant)."""
        return self._normalisation[1]

    @cached_property
    def marginals(self) -> dict:
        """i -> exact 1-D marginal density of theta_i: closed forms, else from the grid (dim <= 2)."""
        out = dict(self.known_marginals)
        if self.reference is not None:
            return {i: self.reference.marginal_density(i, *self.box[i]) for i in range(self.dim)}
        if self.dim <= 2:
            for i in range(self.dim):
                if i not in out:
                    out[i] = self._grid_marginal(i)
        return out

    def tempered(self, beta: float) -> Potential:
        """The law exp(-beta U) / Z(beta) as a potential (U scaled by beta), normalised as every potential is:
        a closed form where the preset gives one (`temper`), else numerically on the grid of its box.

        For beta < 1 the law is wider: the box grows by 1/sqrt(beta) about its centre (exact for a Gaussian,
        more than enough for U growing faster), so the grid still holds the law. Closed-form marginals
        of exp(-U) do not carry over and are recomputed on the grid (dim <= 2)."""
        beta = float(beta)
        if beta == 1:
            return self
        if not beta > 0:
            raise PotentialError(f"beta must be > 0, got {beta:g}")
        if self.temper is not None:
            return self.temper(beta)
        grow = max(1.0, beta ** -0.5)
        box = tuple(((lo + hi) / 2 - grow * (hi - lo) / 2, (lo + hi) / 2 + grow * (hi - lo) / 2)
                    for lo, hi in self.box)
        U, grad = self.U, self.grad
        return dataclasses.replace(
            self, name=f"{self.name} at beta={beta:g}", U=lambda t: beta * U(t), grad=lambda t: beta * grad(t),
            box=box, description=f"{self.description} (tempered: exp(-{beta:g} U))",
            formula=rf"{beta:g}\,\left[{self.formula}\right]" if self.formula else "",
            known_u_min=None if self.known_u_min is None else beta * self.known_u_min, known_log_z=None,
            known_marginals={}, exact_sampler=None, state_sampler=None, temper=None,
            reference=None if self.reference is None else self.reference.tempered(beta))

    def bin_masses(self, edges) -> Array:
        """Exact probability mass of each histogram bin (edges: one array in 1-D, (xedges, yedges) in 2-D),
        computed once per target and set of edges: Simpson's rule on the normalised density, or the adaptive
        reference where the target carries one."""
        return self._bin_masses_and_errors(edges)[0]

    def bin_mass_errors(self, edges) -> Array | None:
        """Error estimates of `bin_masses` where the target's reference gives them (else None: closed forms and
        Simpson's rule on smooth presets are exact to far below any sampling error)."""
        return self._bin_masses_and_errors(edges)[1]

    def marginal_cdf(self, i: int) -> Callable | None:
        """The exact marginal CDF of theta_i where the reference gives it directly (else None)."""
        return None if self.reference is None else self.reference.cdf(i)

    def _bin_masses_and_errors(self, edges):
        arrays = [np.asarray(e, float) for e in ([edges] if self.dim == 1 else edges)]
        key = tuple(a.tobytes() for a in arrays)
        cache = self.__dict__.setdefault("_bin_mass_cache", {})
        if key not in cache:
            err = None
            if self.reference is not None:
                mass, err = self.reference.bin_masses(arrays)
                err.setflags(write=False)
            elif self.dim == 1:
                mass = dg.bin_masses_1d(self.density_xy, arrays[0])
            else:
                mass = dg.bin_masses_2d(self.density_xy, *arrays)
            mass.setflags(write=False)
            cache[key] = (mass, err)
        return cache[key]

    def boxed(self, box) -> Potential:
        """The same law drawn and scored on another box (histogram bins, marginal plots): its normalisation is
        kept, so mass outside the new box counts as outside, not renormalised away."""
        box = check_box(box, len(self.box))
        if box == tuple(map(tuple, self.box)):
            return self
        log_z, u_min = self._normalisation
        return dataclasses.replace(self, box=box, known_log_z=log_z, known_u_min=u_min)

    def exact_states(self, n: int, rng) -> Array | None:
        """n exact draws of the state theta the samplers move (None where the law has no cheap sampler)."""
        draw = self.state_sampler or self.exact_sampler
        return None if draw is None else np.asarray(draw(n, rng), float).reshape(n, self.dim)

    def normalise(self) -> Potential:
        """Compute the normalisation now (and check exp(-U) is integrable on the box): PotentialError if not."""
        _ = self.log_z
        return self

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
            raise NotFinite(f"U is not finite at {_fmt(where)} inside the box {self.box}", where)
        cell = np.prod([a[1] - a[0] for a in axes])
        # trapezoid weights keep the constant accurate at these grid sizes
        w = np.ones([n] * self.dim)
        for k in range(self.dim):
            sl = [slice(None)] * self.dim
            sl[k] = [0, -1]
            w[tuple(sl)] *= 0.5
        log_w = np.log(w.ravel() * cell)
        self._check_contained(u.reshape([n] * self.dim))
        self._u_grid = (axes, u.reshape([n] * self.dim))   # reused by the grid marginals
        return float(logsumexp(-u + log_w)), float(u.min())

    def _check_contained(self, u_grid: Array):
        """exp(-U) must have decayed at the edges of the box, or the law is not in the picture."""
        edge = np.concatenate([np.moveaxis(u_grid, k, 0)[[0, -1]].ravel() for k in range(self.dim)])
        rel = np.exp(-(edge.min() - u_grid.min()))
        if rel > 1e-4:
            raise NotIntegrable(
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


def check_box(box, n: int) -> tuple:
    """((lo, hi), ...) for n plotted coordinates, each finite with lo < hi: PotentialError in a user's terms if not."""
    try:
        box = tuple((float(lo), float(hi)) for lo, hi in box)
    except (TypeError, ValueError):
        raise PotentialError(f"a box is one (lo, hi) pair per coordinate, got {box!r}") from None
    if len(box) != n:
        raise PotentialError(f"the box needs {n} (lo, hi) pair{'s' if n > 1 else ''} (one per coordinate), "
                             f"got {len(box)}")
    for lo, hi in box:
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise PotentialError(f"each side of the box needs finite lo < hi, got ({lo:g}, {hi:g})")
    return box


def _fmt(v) -> str:
    return "(" + ", ".join(f"{float(t):.3g}" for t in np.ravel(v)) + ")"
