"""Fokker-Planck stationarity check: does exp(-H) stay put under the sampler's actual drift?

For dz = f dt + sqrt(2D) dW the density evolves by
    d_t p = -sum_i d_i(f_i p) + sum_ij d_i d_j(D_ij p).
At p = exp(-H) this is zero for every recipe (Theorem 1), whatever D and Q, and nonzero
for a naive drift (Gamma or friction dropped). Dividing by p removes the exponential, so
we evaluate, pointwise,
    R/p = -sum_i (d_i f_i - f_i d_i H)
          + sum_ij (d_i d_j D_ij - d_i D_ij d_j H - d_j D_ij d_i H - D_ij d_i d_j H + D_ij d_i H d_j H)
with central differences of the smooth functions f, D and grad H (not of p), which keeps
the error of a correct recipe near round-off instead of grid error.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from samplers.engine.recipe import Recipe


@dataclass
class Residual:
    points: np.ndarray        # (P, n) where the residual was evaluated
    field: np.ndarray         # (P,) d_t p at p = exp(-H), normalised so max p = 1
    relative: float           # sum |R| / sum of the magnitudes of its terms, all weighted by p
    names: list
    axes: list | None = None  # grid axes when the points form a grid (state dimension <= 2)
    current: np.ndarray | None = None   # (P, n) probability current J = f p - div(D p) at p = exp(-H)
    p: np.ndarray | None = None         # (P,) exp(-H), max 1

    def ok(self, tol: float = 1e-4) -> bool:
        return self.relative < tol

    def grid_field(self) -> np.ndarray:
        return self.field.reshape([len(a) for a in self.axes])


def state_box(recipe: Recipe, potential) -> list:
    return list(potential.box[: recipe.dim]) + list(recipe.aux_box)


def _points(box, n_grid, n_random, seed):
    if len(box) <= 2:
        axes = [np.linspace(lo, hi, n_grid) for lo, hi in box]
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=1), axes
    rng = np.random.default_rng(seed)
    lo, hi = np.array(box).T
    return lo + (hi - lo) * rng.random((n_random, len(box))), None


def stationarity_residual(recipe: Recipe, potential, n_grid: int = 201, n_random: int = 20000,
                          seed: int = 0, delta: float = 1e-4, points=None) -> Residual:
    """R = d_t p at p = exp(-H) for the recipe's drift (with its dropped terms) and diffusion, and the
    probability current J (d_t p = -div J; for a recipe J = p (-Q grad H + div Q), divergence-free).

    Evaluated at `points` if given, else on a grid over the state box for state dimension <= 2, else at
    n_random uniform points of the box.
    """
    if recipe.dim != potential.dim:
        raise ValueError("recipe and potential have different dimensions")
    if points is not None:
        z, axes = np.asarray(points, float), None
    else:
        z, axes = _points(state_box(recipe, potential), n_grid, n_random, seed)
    n = recipe.n

    def at(zz):
        th = zz[:, : recipe.dim]
        u, g = potential.U(th), potential.grad(th)
        return recipe.drift(zz, u, g), np.broadcast_to(recipe.D(zz, u, g), (len(zz), n, n)), \
            recipe.grad_h(zz, g, u), u

    f, D, gh, u = at(z)
    h = u + _kinetic(recipe, z, u)
    p = np.exp(-(h - h.min()))
    shifted = {}
    for i in range(n):
        e = np.zeros(n)
        e[i] = delta
        shifted[i] = (at(z + e), at(z - e))

    terms = []
    for i in range(n):
        (fp, _, _, _), (fm, _, _, _) = shifted[i]
        terms.append(-((fp[:, i] - fm[:, i]) / (2 * delta) - f[:, i] * gh[:, i]))
    hess = np.stack([(shifted[i][0][2] - shifted[i][1][2]) / (2 * delta) for i in range(n)], axis=1)
    dD = np.stack([(shifted[j][0][1] - shifted[j][1][1]) / (2 * delta) for j in range(n)], axis=-1)  # d_j D_ik
    active = np.argwhere(np.any(D != 0, axis=0) | np.any(dD != 0, axis=(0, 3)))
    for i, j in active:
        d2 = _second_difference(lambda zz, i=i, j=j: at(zz)[1][:, i, j], z, i, j, 1e-3)
        terms.append(d2 - dD[:, i, j, j] * gh[:, i] - dD[:, i, j, i] * gh[:, j]
                     - D[:, i, j] * hess[:, i, j] + D[:, i, j] * gh[:, i] * gh[:, j])
    terms = np.array(terms)
    field = p * terms.sum(0)
    scale = (p * np.abs(terms).sum(0)).sum()
    rel = float(np.abs(field).sum() / scale) if scale > 0 else 0.0
    # J_i / p = f_i - sum_j d_j D_ij + sum_j D_ij d_j H
    current = p[:, None] * (f - np.einsum("pijj->pi", dD) + np.einsum("pij,pj->pi", D, gh))
    return Residual(z, field, rel, [str(s) for s in recipe.sym.z], axes, current, p)


@dataclass
class ResidualMap:
    """d_t p at p = exp(-H) and the current J on a grid of two state coordinates (the others fixed)."""
    names: tuple                # the plotted coordinates' names
    axes: tuple                 # their grid axes
    field: np.ndarray           # (nx, ny), normalised so that max p = 1 on the grid
    current: tuple              # (Jx, Jy), each (nx, ny)
    p: np.ndarray               # (nx, ny)
    relative: float             # as Residual.relative, over the grid
    fixed: dict                 # the other coordinates and the values they are held at


def map_planes(recipe: Recipe) -> list[tuple[int, ...]]:
    """The coordinate pairs a map can show: (theta_1, second coordinate) first, then theta_1 against each
    auxiliary variable (a naive term can vanish on the first plane's slice, e.g. a dropped Gamma_r at r = 0)."""
    if recipe.n == 1:
        return [(0,)]
    return [(0, 1)] + [(0, k) for k in range(recipe.dim, recipe.n) if k != 1]


def residual_map(recipe: Recipe, potential, n_grid: int = 61, plane: tuple | None = None) -> ResidualMap:
    """The residual field and current over two state coordinates (`plane`, default the first two:
    (theta, r) for a 1-D target with momentum, (theta_1, theta_2) for a 2-D one), the others held at the
    potential's starting point (theta) or the middle of their box (r = 0, a thermostat at A); a
    one-variable state gives a single row (its second axis is empty)."""
    box = state_box(recipe, potential)
    names = [str(s) for s in recipe.sym.z]
    shown = list(plane or map_planes(recipe)[0])
    axes = [np.linspace(*box[k], n_grid) for k in shown]
    start = getattr(potential, "start", None)
    base = np.array([(lo + hi) / 2 for lo, hi in box])
    if start is not None:
        base[: recipe.dim] = np.asarray(start, float)[: recipe.dim]
    fixed = {names[k]: float(base[k]) for k in range(recipe.n) if k not in shown}
    mesh = np.meshgrid(*axes, indexing="ij")
    z = np.tile(base, (mesh[0].size, 1))
    for k, m in zip(shown, mesh):
        z[:, k] = m.ravel()
    res = stationarity_residual(recipe, potential, points=z)
    shape = mesh[0].shape
    cur = tuple(res.current[:, k].reshape(shape) for k in shown)
    if len(shown) == 1:
        axes.append(np.array([]))
    return ResidualMap(tuple(names[k] for k in shown), tuple(axes), res.field.reshape(shape), cur,
                       res.p.reshape(shape), res.relative, fixed)


def _second_difference(fn, z, i, j, d):
    ei = np.zeros(z.shape[1])
    ej = np.zeros(z.shape[1])
    ei[i] = d
    ej[j] = d
    if i == j:
        return (fn(z + ei) - 2 * fn(z) + fn(z - ei)) / d ** 2
    return (fn(z + ei + ej) - fn(z + ei - ej) - fn(z - ei + ej) + fn(z - ei - ej)) / (4 * d ** 2)


def _kinetic(recipe: Recipe, z, u) -> np.ndarray:
    """H - U evaluated from its expression (which may hold U itself: Santa's thermostat term)."""
    import sympy
    k = recipe.sym.flatten(recipe.kinetic)
    if k == 0:
        return np.zeros(z.shape[0])
    fn = sympy.lambdify([recipe.sym.z, recipe.sym.u], k, "numpy")
    return np.broadcast_to(fn(list(z.T), u), (z.shape[0],)).astype(float)
