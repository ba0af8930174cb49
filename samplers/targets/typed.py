"""Potentials typed by the user, `expr:<U>`: parsed by the whitelist parser, differentiated by sympy."""
from __future__ import annotations

import numpy as np
import sympy
from scipy import optimize

from samplers.targets.expr import ExpressionError, compile_expression, differentiate
from samplers.targets.potential import NotFinite, NotIntegrable, Potential, PotentialError, check_box
from samplers.targets.reference import Reference, find_support

BOX_HALF_WIDTHS = (5.0, 10.0, 20.0)


def _vectorise(fn, shape_like):
    """lambdify returns scalars for constant terms; broadcast them to one value per chain."""
    def call(t):
        with np.errstate(all="ignore"):
            out = fn(*t.T)
        return np.broadcast_to(np.asarray(out, float), shape_like(t)).copy()
    return call


def typed_potential(text: str, box=None) -> Potential:
    try:
        expr, used = compile_expression(text, ("x", "y"))
    except ExpressionError as err:
        raise PotentialError(f"invalid expression: {err}") from None
    names = ("x", "y") if "y" in used else ("x",)
    syms = [sympy.Symbol(n, real=True) for n in names]
    grads = [differentiate(expr, s) for s in syms]
    d = len(syms)
    U = _vectorise(sympy.lambdify(syms, expr, "numpy"), lambda t: (t.shape[0],))
    gfun = sympy.lambdify(syms, grads, "numpy")

    def grad(t):
        with np.errstate(all="ignore"):
            parts = gfun(*t.T)
        return np.stack([np.broadcast_to(np.asarray(g, float), (t.shape[0],)) for g in parts], axis=1)

    def build(b, reference=None):
        return Potential(f"expr:{text.strip()}", d, U, grad, tuple(map(tuple, b)), description="typed potential",
                         formula="U = " + sympy.latex(expr), reference=reference).normalise()

    # The grid on growing search boxes finds what is wrong with U in the plainest terms (not finite, unbounded
    # below between grid points) and, where exp(-U) has decayed inside one, the box its density is drawn on.
    fitted, first, centre = None, None, None
    for h in BOX_HALF_WIDTHS:
        try:
            grid_pot = build(tuple((-h, h) for _ in range(d)))
        except PotentialError as err:
            first = first or err
            continue
        centre = _check_bounded_below(grid_pot, names)
        fitted = _fitted_box(grid_pot)
        break
    if fitted is None and not isinstance(first, NotIntegrable):
        raise _in_plain_words(first, names)
    # The law itself: its support followed out along every tail, then adaptive cubature over it. A heavy tail
    # (a funnel's x, whose sd is exp(y/2)) is not refused for decaying outside a search box.
    try:
        reference = Reference(U, d, find_support(U, d, names, centre))
    except PotentialError as err:
        raise _in_plain_words(err, names) from None
    box = _mass_box(reference, fitted) if box is None else check_box(box, d)
    pot = build(box, reference)
    _check_gradient_finite(pot, expr, syms)
    pot.sym = expr
    return pot


def _mass_box(reference: Reference, fitted, tail: float = 1e-4) -> tuple:
    """The box drawn for a typed U: where its marginals hold all but `tail` on each side, padded by a twentieth and
    rounded outward, joined with the box where its density is above 1e-5 of its peak (`_fitted_box`)."""
    out = []
    for k in range(reference.d):
        lo, hi = reference.quantile(k, tail), reference.quantile(k, 1 - tail)
        pad = 0.05 * (hi - lo)
        width = max(hi - lo, 1e-12)
        step = 0.5 * 10.0 ** np.floor(np.log10(width / 20) if width > 20 else min(0.0, np.log10(width)))
        lo, hi = (float(np.round(step * np.floor((lo - pad) / step), 12)),
                  float(np.round(step * np.ceil((hi + pad) / step), 12)))
        # the old box, unless it is far wider than the mass (a well narrower than its grid's step)
        if fitted is not None and fitted[k][1] - fitted[k][0] < 10 * (hi - lo):
            lo, hi = min(lo, fitted[k][0]), max(hi, fitted[k][1])
        out.append((float(lo), float(hi)))
    return tuple(out)


def _fitted_box(pot: Potential, floor: float = 1e-5, step: float = 0.5) -> tuple:
    """The box drawn for a typed U: where exp(-U) is above `floor` of its peak, padded by a twentieth and
    rounded outward to `step` (a search box of ±5 would draw x^4 - 2x^2, whose mass is in ±2, as a
    thin spike)."""
    axes, u = pot._u_grid
    keep = (u - u.min()) <= -np.log(floor)
    out = []
    for k, a in enumerate(axes):
        hit = np.flatnonzero(keep.any(axis=tuple(j for j in range(u.ndim) if j != k)))
        lo, hi = a[hit[0]], a[hit[-1]]
        pad = 0.05 * (hi - lo)
        lo, hi = step * np.floor((lo - pad) / step), step * np.ceil((hi + pad) / step)
        out.append((float(max(lo, a[0])), float(min(hi, a[-1]))))
    return tuple(out)


def _in_plain_words(err: PotentialError, names) -> PotentialError:
    """What a user typing U needs to hear: what is wrong with U, not the grids and boxes that found it."""
    if isinstance(err, NotFinite):
        at = ", ".join(f"{n} = {v:.3g}" for n, v in zip(names, err.where))
        return PotentialError(f"U is not finite at {at}: it must be a finite number everywhere")
    if isinstance(err, NotIntegrable):
        return PotentialError(f"{err}: U must grow in every direction, like x^4 - 2*x^2, "
                              "so that exp(-U) is a probability density")
    return err


def _check_bounded_below(pot: Potential, names, jump: float = 1.0):
    """U must not plunge between the normalisation grid's points: at a pole such as tan(x)'s, U tends to
    -inf on one side, exp(-U) is not integrable, and the grid's lowest value only says how close a point
    came. Minimising U within a cell of that point shows it (a smooth minimum moves by O(h^2)). A well narrower
    than the grid's step also drops below the grid's lowest value; it is told from a pole by probing closer to
    the minimum found: next to a pole U keeps falling, around the bottom of a well it rises."""
    axes, u = pot._u_grid
    idx = np.unravel_index(int(np.nanargmin(u)), u.shape)
    x0 = np.array([a[i] for a, i in zip(axes, idx)])
    h = np.array([a[1] - a[0] for a in axes])
    lo, hi = np.array([b[0] for b in pot.box]), np.array([b[1] for b in pot.box])
    bounds = list(zip(np.maximum(x0 - h, lo), np.minimum(x0 + h, hi)))

    def f(x):
        with np.errstate(all="ignore"):
            v = float(pot.U(np.atleast_2d(x))[0])
        return v if np.isfinite(v) else -1e300
    res = optimize.minimize(f, x0, method="Powell", bounds=bounds, options=dict(xtol=1e-12, ftol=1e-12))
    if min(res.fun, f(res.x)) < u.min() - jump and _falls_further(f, res.x, min(res.fun, f(res.x)) - jump):
        at = ", ".join(f"{n} = {v:.3g}" for n, v in zip(names, res.x))
        raise PotentialError(f"U is unbounded below near {at}: exp(-U) is not a probability density there")
    return res.x if res.fun <= u.min() else x0     # where U is lowest: the reference's grid is centred there


def _falls_further(f, x, below: float) -> bool:
    """Whether U drops below `below` within 1e-4 of x along an axis (offsets 1e-4 down to 1e-15)."""
    for k in range(len(x)):
        for step in np.concatenate([10.0 ** -np.arange(4, 16), -(10.0 ** -np.arange(4, 16))]):
            probe = np.array(x, float)
            probe[k] += step
            if f(probe) < below:
                return True
    return False


def _check_gradient_finite(pot: Potential, expr, syms, n: int = 101):
    axes = [np.linspace(lo, hi, n) for lo, hi in pot.box]
    pts = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    g = pot.grad(pts)
    bad = ~np.isfinite(g).all(axis=1)
    if bad.any():
        at = pts[np.argmax(bad)]
        raise PotentialError(_kink(expr, syms, at) or
                             f"the gradient of U is not finite at ({', '.join(f'{v:.3g}' for v in at)})")


def _kink(expr, syms, at) -> str | None:
    """U is finite at `at` but its gradient is not: name the root (b^p, 0 < p < 1) whose base vanishes there, and
    the smoothing that makes U differentiable, as a user would type it."""
    point = dict(zip(syms, at))
    where = ", ".join(f"{s} = {v:.3g}" for s, v in point.items())
    for node in sympy.preorder_traversal(expr):
        if not (node.is_Pow and node.exp.is_number and 0 < node.exp < 1 and node.base.free_symbols):
            continue
        base = float(sympy.lambdify(syms, node.base, "math")(*at))
        if abs(base) > 1e-12:
            continue
        b = _typed(node.base)
        typed = f"sqrt({b})" if node.exp == sympy.S.Half else f"({b})^({_typed(node.exp)})"
        smooth = f"sqrt({b} + 1e-6)" if node.exp == sympy.S.Half else f"({b} + 1e-6)^({_typed(node.exp)})"
        return (f"U is not differentiable at {where}: {typed} has a kink where {b} = 0, so its gradient is "
                f"not finite there; smooth it, e.g. {smooth}")
    return None


def _typed(e) -> str:
    return sympy.sstr(e).replace("**", "^")
