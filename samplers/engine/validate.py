"""Checks of a recipe as it is built: shapes and finite entries, D symmetric and Q skew-symmetric (exactly,
by sympy, or numerically at probe points), D positive semidefinite at probe points. Each error names the
entry and its value."""
from __future__ import annotations

import numpy as np
import sympy

from samplers.engine.symbols import RecipeError, show


def shapes(recipe, D, Q):
    for name, m in (("D", D), ("Q", Q)):
        if m.shape != (recipe.n, recipe.n):
            raise RecipeError(f"{name} must be {recipe.n}x{recipe.n} for z = {tuple(map(str, recipe.sym.z))}, "
                              f"got {m.shape[0]}x{m.shape[1]}")
        for (i, j), e in np.ndenumerate(np.array(m.tolist(), dtype=object)):
            e = sympy.sympify(e)
            if e.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
                raise RecipeError(f"{name}[{i},{j}] = {e} is not finite", cells=[(name, i, j)])


def symmetry(recipe):
    D, Q, z = recipe.D.sym, recipe.Q.sym, recipe.sym.z
    for i in range(recipe.n):
        for j in range(i, recipe.n):
            if sympy.simplify(D[i, j] - D[j, i]) != 0:
                raise RecipeError(f"D is not symmetric: D[{z[i]},{z[j]}] = {show(D[i, j])} but "
                                  f"D[{z[j]},{z[i]}] = {show(D[j, i])}", cells=[("D", i, j), ("D", j, i)])
            if sympy.simplify(Q[i, j] + Q[j, i]) != 0:
                raise RecipeError(f"Q is not skew-symmetric: Q[{z[i]},{z[j]}] = {show(Q[i, j])} but "
                                  f"Q[{z[j]},{z[i]}] = {show(Q[j, i])} (should be {show(-Q[i, j])})",
                                  cells=[("Q", i, j), ("Q", j, i)])


def numeric_symmetry(recipe, z):
    names = recipe.sym.z
    for label, field, sign in (("D", recipe.D, 1.0), ("Q", recipe.Q, -1.0)):
        with np.errstate(all="ignore"):
            m = field(z, None, None)
        if m.shape[1:] != (recipe.n, recipe.n):
            raise RecipeError(f"{label} must be {recipe.n}x{recipe.n}, got {m.shape[1:]}")
        gap = np.abs(m - sign * np.swapaxes(m, 1, 2))
        if np.nanmax(gap) > 1e-9 * max(1.0, np.nanmax(np.abs(m))):
            k, i, j = np.unravel_index(np.nanargmax(gap), gap.shape)
            kind = "symmetric" if label == "D" else "skew-symmetric"
            raise RecipeError(f"{label} is not {kind}: {label}[{names[i]},{names[j]}] = {m[k, i, j]:.4g} but "
                              f"{label}[{names[j]},{names[i]}] = {m[k, j, i]:.4g} at z = "
                              f"{np.round(z[k], 3).tolist()}", cells=[(label, int(i), int(j)), (label, int(j), int(i))])


def probe_points(recipe, n=64, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-3, 3, size=(n, recipe.n))
    for k, (lo, hi) in enumerate(recipe.aux_box):
        z[:, recipe.dim + k] = rng.uniform(lo, hi, n)
    return z, rng.uniform(-1, 5, n), rng.normal(size=(n, recipe.dim))


def psd_on_probes(recipe):
    z, u, g = probe_points(recipe)
    with np.errstate(all="ignore"):
        Dv = recipe.D(z, u, g)
    Dv = np.broadcast_to(Dv, (len(z), recipe.n, recipe.n))
    finite = np.isfinite(Dv).all(axis=(1, 2))
    if not finite.all():
        return  # the metric may be singular somewhere; the run's own checks report it
    w = np.linalg.eigvalsh(Dv)
    if w.min() < -1e-9 * max(1.0, np.abs(w).max()):
        k = np.argmin(w.min(axis=1))
        diag = np.diagonal(Dv[k])
        if diag.min() < 0:
            i = int(np.argmin(diag))
            raise RecipeError(f"D is not positive semidefinite: D[{recipe.sym.z[i]},{recipe.sym.z[i]}] = "
                              f"{diag[i]:.4g} < 0", cells=[("D", i, i)])
        raise RecipeError(f"D is not positive semidefinite: eigenvalue {w.min():.4g} at z = "
                          f"{np.round(z[k], 3).tolist()}")

