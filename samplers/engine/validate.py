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
                z = recipe.sym.z
                raise RecipeError(f"{name}[{z[i]},{z[j]}] is not finite (division by zero or a pole)",
                                  cells=[(name, i, j)])


EXPAND_TERMS = 200   # expressions at most this large (expanded_terms) are multiplied out: a few ms


def multiplied_out(expr):
    """expr with its products and powers of sums multiplied out if that stays small (EXPAND_TERMS), else expr.

    Logarithms and exponentials are left whole: expand's log(exp(a)*exp(b)) = a + b and exp(x*log(s) + log(s))
    = s*exp(x*log(s)) would turn what expanded_terms counts as one term into a sum."""
    if expanded_terms(expr) > EXPAND_TERMS:
        return expr
    return sympy.expand(expr, log=False, power_exp=False)


def expanded_terms(expr) -> float:
    """An upper bound on the terms multiplied_out(expr) builds, counting those inside function arguments and
    denominators: (a + b + c)**n has C(n + 2, 2) terms, a product of sums the product of their counts. For expr
    as sympy evaluates it (the cell parser's unevaluated (x*(a + b)**-1)**-1 is (a + b)/x)."""
    terms, inner = growth(expr)
    return terms + inner


def monomials(n: int, k: float) -> float:
    """Terms of a sum of k terms raised to the n-th power multiplied out, C(n + k - 1, n), as a float."""
    if k <= 1 or n == 0:
        return 1.0
    if n > 10**4:               # (theta**64)**64**...: a sum of k >= 2 terms gives at least n + 1, too many
        return math.inf
    out = 1.0
    for m in range(1, n + 1):
        out = out * (k - 1 + m) / m
    return out


def monomials_at_most(degree: int, variables) -> float:
    """Monomials of degree at most `degree` in len(variables) variables, C(degree + v, v), as a float."""
    v = len(variables)
    return float(math.comb(degree + v, v)) if degree + v < 2000 else math.inf


def growth(expr) -> tuple[float, float]:
    """(terms of expr expanded, terms expanded inside it: arguments of functions, bases of roots and denominators).

    Where sympy may or may not distribute a power over a product ((a*b)**(7/2) splits when a >= 0) or multiply
    nested exponents (sqrt(s)**(7/2) is s**(7/4)), both ways are counted and the larger kept."""
    memo = {}

    def walk(e):
        if e not in memo:
            terms, inner = _walk(e)
            memo[e] = (min(terms, monomials_at_most(*polynomial(e))), inner)
        return memo[e]

    def polynomial(e):
        """(degree, variables) of e as a polynomial, a function or root counting as one more variable: like
        terms combine, so a product of sums has at most as many terms as there are monomials."""
        if ("poly", e) not in memo:
            if e.is_Number:                 # pi and e are variables: pi + 1 is two terms
                out = 0, frozenset()
            elif isinstance(e, sympy.Abs):     # abs(s)**2 is s**2: abs(s) is s in degree, and one more variable
                degree, variables = polynomial(e.args[0])
                out = degree + 1, variables | {e}
            elif e.is_Add or e.is_Mul:
                parts = [polynomial(a) for a in e.args]
                degrees = [d for d, _ in parts]
                out = max(degrees) if e.is_Add else sum(degrees), frozenset().union(*(v for _, v in parts))
            elif e.is_Pow and e.exp.is_Integer and e.exp > 1:
                degree, variables = polynomial(e.base)
                out = degree * int(e.exp), variables
            elif e.is_Pow and e.exp.is_Rational and e.exp > 0:
                # s**(5/2) = s**2 * sqrt(s), and sqrt(s)**2 is s again, multiplied out: a root is one more variable
                # of the degree of s (at least 1), its power rounded up
                degree, variables = polynomial(e.base)
                out = max(degree, 1) * math.ceil(e.exp), variables | {e.base ** (e.exp % 1)}
            else:
                out = 1, frozenset([e])
            memo["poly", e] = out
        return memo["poly", e]

    def _walk(e):
        if e.is_Add:
            parts = [walk(a) for a in e.args]
            return sum(t for t, _ in parts), sum(w for _, w in parts)
        if e.is_Mul or (e.is_Pow and e.exp.is_negative):
            n, d = sympy.fraction(e)
            if d != 1:      # expand multiplies out the numerator over the denominator, itself multiplied out
                (terms, inner), (d_terms, d_inner) = walk(n), walk(d)
                return terms, inner + d_terms + d_inner
        if e.is_Mul:
            parts = [walk(a) for a in e.args]
            terms, inner = math.prod(t for t, _ in parts), sum(w for _, w in parts)
            if sum(a.has(sympy.Abs) for a in e.args) >= 2:      # (abs(s) + x)*(abs(s) + y) has s**2 in it
                terms = math.prod(t + unabs(a) for a, (t, _) in zip(e.args, parts))
            return terms, inner
        if e.is_Pow:
            return power(e.base, e.exp)
        inner = 0.0
        for a in e.args:                      # a function: expand works inside its argument
            terms, w = walk(a)
            inner += terms + w
        return 1.0, inner

    def unabs(e):
        """Terms the abs() in e may add once squared: abs(s) counts as itself and as s."""
        return sum(walk(a.args[0])[0] for a in e.atoms(sympy.Abs))

    def power(base, exp):
        if (base, exp) not in memo:
            ways = [whole(base, exp)]
            if exp.is_Rational and base.is_Mul:     # (x/(a + b))**-64 is (a + b)**64/x**64
                parts = [power(f, exp) for f in base.args]
                ways.append((math.prod(t for t, _ in parts), sum(w for _, w in parts)))
            if exp.is_Rational and base.is_Pow and base.exp.is_Rational:
                ways.append(power(base.base, base.exp * exp))
            if exp.is_Integer and exp > 1 and base.has(sympy.Abs):   # abs(s)**2 is s**2 for a real s: (abs(s) + x)**4
                terms, inner = walk(base)                             # has abs(s)*x**3 and s**2*x**2 in it
                ways.append((monomials(int(exp), terms + unabs(base)), inner))
            memo[base, exp] = (max(t for t, _ in ways), max(w for _, w in ways))
        return memo[base, exp]

    def whole(base, exp):
        terms, inner = walk(base)
        if not exp.is_Rational:             # a float exponent: sympy leaves the power whole
            return 1.0, inner + terms
        if exp < 0:                         # a denominator: one term, multiplied out within
            return 1.0, sum(whole(base, -exp))
        if exp.is_Integer:
            return monomials(int(exp), terms), inner
        # (a + b)**(5/2) = (a + b)**2 * sqrt(a + b), multiplied out within and without: counted as (a + b)**3, since
        # roots multiplied together are powers again ((sqrt(s) + x)**4 has s**2 in it)
        return monomials(math.ceil(exp), terms), inner + terms

    return walk(expr)


def _same(recipe, label, i, j, sign, values) -> bool:
    """m[i, j] == sign * m[j, i]: exactly if the difference cancels as built or multiplied out, else at the probe
    points (simplify, tried before, took over 5 minutes to compare sin(theta_1 + r_1 + r_2 + U)**20 with
    cos(theta_2)**20)."""
    m = (recipe.D if label == "D" else recipe.Q).sym
    gap = m[i, j] - sign * m[j, i]
    if gap == 0 or multiplied_out(gap) == 0:
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

