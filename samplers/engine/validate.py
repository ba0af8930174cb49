"""Checks of a recipe as it is built: shapes and finite entries, D symmetric and Q skew-symmetric (exactly,
by sympy, or numerically at probe points), D positive semidefinite at probe points. Each error names the
entry and its value. And how large an expression grows when multiplied out, so that nothing typed makes
sympy expand for minutes."""
from __future__ import annotations

import math

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


EXPAND_TERMS = 200   # expressions at most this large (expanded_terms) are multiplied out: a few ms


def expanded_terms(expr) -> float:
    """An upper bound on the terms sympy.expand(expr) builds, counting those inside function arguments and
    denominators: (a + b + c)**n has C(n + 2, 2) terms, a product of sums the product of their counts."""
    terms, inner = _growth(expr)
    return terms + inner


def monomials(n: int, k: float) -> float:
    """Terms of a sum of k terms raised to the n-th power multiplied out, C(n + k - 1, n), as a float."""
    if k <= 1 or n == 0:
        return 1.0
    if n > 10**6:               # (theta**64)**64**...: a sum of k >= 2 terms gives at least n + 1
        return math.inf
    out = 1.0
    for m in range(1, n + 1):
        out = out * (k - 1 + m) / m
    return out


def _growth(e) -> tuple[float, float]:
    """(terms of e expanded, terms expanded inside it: arguments of functions, bases of roots and denominators)."""
    if e.is_Add or e.is_Mul:
        parts = [_growth(a) for a in e.args]
        terms = sum(t for t, _ in parts) if e.is_Add else math.prod(t for t, _ in parts)
        return terms, sum(w for _, w in parts)
    if e.is_Pow:
        terms, inner = _growth(e.base)
        if not e.exp.is_Rational:          # a float exponent: sympy leaves the power whole
            return 1.0, inner + terms
        grown = monomials(int(abs(e.exp)), terms)   # (a + b)**(5/2) = (a + b)**2 * sqrt(a + b), multiplied out
        rest = 0.0 if e.exp.is_Integer else terms
        return (grown, inner + rest) if e.exp > 0 else (1.0, inner + rest + grown)
    inner = 0.0
    for a in e.args:                      # a function: expand works inside its argument
        terms, w = _growth(a)
        inner += terms + w
    return 1.0, inner


def _same(recipe, label, i, j, sign, values) -> bool:
    """m[i, j] == sign * m[j, i]: exactly if the difference cancels as built or multiplied out, else at the probe
    points (simplify, tried before, took over 5 minutes to compare sin(theta_1 + r_1 + r_2 + U)**20 with
    cos(theta_2)**20)."""
    m = (recipe.D if label == "D" else recipe.Q).sym
    gap = m[i, j] - sign * m[j, i]
    if gap == 0 or (expanded_terms(gap) <= EXPAND_TERMS and sympy.expand(gap) == 0):
        return True
    if label not in values:
        z, u, g = probe_points(recipe)
        field = recipe.D if label == "D" else recipe.Q
        with np.errstate(all="ignore"):
            values[label] = np.broadcast_to(field(z, u, g), (len(z), recipe.n, recipe.n))
    a, b = values[label][:, i, j], sign * values[label][:, j, i]
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = a[finite], b[finite]
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return bool(finite.any()) and bool(np.all(np.abs(a - b) <= 1e-9 * scale))


def symmetry(recipe):
    D, Q, z = recipe.D.sym, recipe.Q.sym, recipe.sym.z
    values = {}
    for i in range(recipe.n):
        for j in range(i, recipe.n):
            if not _same(recipe, "D", i, j, 1, values):
                raise RecipeError(f"D is not symmetric: D[{z[i]},{z[j]}] = {show(D[i, j])} but "
                                  f"D[{z[j]},{z[i]}] = {show(D[j, i])}", cells=[("D", i, j), ("D", j, i)])
            if not _same(recipe, "Q", i, j, -1, values):
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

