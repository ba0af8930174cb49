"""The exact law of a target in one or two dimensions by adaptive cubature: log Z, bin masses and marginals that
stay right where the density has features far narrower than a histogram bin (a funnel's neck), each with an
error estimate, over a support found by following the tails outward until their mass is negligible.

A cell is integrated by Boole's rule on 9 nodes per axis, once as one 5-point rule and once as two (composite);
the difference along each axis is that axis's resolution error. Cells whose error is above the tolerance are split
along the axes that need it (a funnel's neck is narrow in x only), level by level, every level one vectorised
evaluation of U. The nodes include the cells' edges, so a feature on a grid line (the mode's coordinates, 0) is
seen however narrow it is; a feature narrower than a node spacing and off every node is not (no cubature that
only samples U can promise that).

docs/notes/typed-targets.md has the measurements.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from samplers.targets.potential import NotFinite, NotIntegrable

_T = np.linspace(0.0, 1.0, 9)
_FINE = np.array([7, 32, 12, 32, 14, 32, 12, 32, 7]) / 180.0     # Boole on each half of the cell
_COARSE = np.array([7, 0, 32, 0, 12, 0, 32, 0, 7]) / 90.0        # Boole on the whole cell (even nodes)
# Boole's error is O(h^6) per cell, so the composite rule's is the difference over 63 once resolved; over 15 (as
# if O(h^4)) bounds what the funnel's bins measure (docs/notes/typed-targets.md)
RICHARDSON = 15.0
MAX_DEPTH = 40
MAX_ACTIVE = 100_000        # cells refined at once; past it the rest are kept with their (reported) errors
BASE_HALF_WIDTH = 5.0
BASE_CELLS = 16             # across the starting box, per axis
RING_CELLS = 8              # per doubling of a side
MAX_RINGS = 16              # a side reaches at most 5 * 2^16 ~ 3e5 from the origin
TAIL = 1e-10                # mass fraction of a side's outermost ring below which its tail is done
EVAL_CHUNK = 400_000


def _nodes(d: int) -> np.ndarray:
    return np.stack([a.ravel() for a in np.meshgrid(*([_T] * d), indexing="ij")], axis=1)


def _rule(d: int, coarse_axis: int | None) -> np.ndarray:
    """Tensor weights (9,)*d on the unit cell: composite Boole, or plain Boole along one axis."""
    w = np.ones([9] * d)
    for k in range(d):
        shape = [1] * d
        shape[k] = 9
        w = w * (_COARSE if k == coarse_axis else _FINE).reshape(shape)
    return w.reshape(-1)


@dataclass
class Cubature:
    """Masses of exp(-(U - shift)) over cells, with error estimates, and along each axis the leaves' nodes and the
    integrals of exp(-(U - shift)) across the other axes there (leaves, 9): the marginal density's samples."""
    mass: np.ndarray
    err: np.ndarray
    atoms: list = field(default_factory=list)   # per axis: (positions, masses)
    u_min: float = np.inf


def logsumexp(a: np.ndarray, b: np.ndarray | None = None, axis: int | None = None) -> np.ndarray:
    """log sum b exp(a) for b > 0: scipy's takes ~8 ms a call on these arrays for its generality, and the support
    search calls it some 70 times."""
    a = np.asarray(a, float)
    if a.size == 0:
        return np.full(a.shape[:axis] if axis is not None else (), -np.inf)[()]
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m) * (1.0 if b is None else b), axis=axis, keepdims=True)) + m
    return out.squeeze(axis=axis) if axis is not None else out.reshape(())[()]


def _evaluate(U, pts: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.concatenate([np.asarray(U(pts[i:i + EVAL_CHUNK]), float)
                               for i in range(0, len(pts), EVAL_CHUNK)]) if len(pts) else np.empty(0)


def cubature(U, lo: np.ndarray, hi: np.ndarray, shift: float, tol: float, atoms: bool = True) -> Cubature:
    """Adaptive cubature of exp(-(U - shift)) over each cell [lo_i, hi_i] (arrays (m, d)), each cell's error
    estimate below `tol` where MAX_DEPTH and MAX_ACTIVE allow. U: (n, d) -> (n,)."""
    m, d = lo.shape
    unit, fine = _nodes(d), _rule(d, None)
    coarse = [_rule(d, k) for k in range(d)]
    mass, err = np.zeros(m), np.zeros(m)
    parts: list = [[] for _ in range(d)]
    u_min = np.inf
    owner = np.arange(m)
    for depth in range(MAX_DEPTH + 1):
        if not len(owner):
            break
        h = hi - lo
        pts = (lo[:, None, :] + h[:, None, :] * unit[None]).reshape(-1, d)
        u = _evaluate(U, pts).reshape(len(owner), -1)
        if not np.isfinite(u).all():
            where = pts.reshape(len(owner), -1, d)[~np.isfinite(u)][0]
            raise NotFinite(f"U is not finite at {tuple(float(v) for v in where)}", where)
        u_min = min(u_min, float(u.min()))
        f = np.exp(shift - u)
        vol = np.prod(h, axis=1)
        best = f @ fine * vol
        axis_err = np.stack([np.abs(best - f @ c * vol) for c in coarse], axis=1)
        total = axis_err.sum(axis=1)
        last = depth == MAX_DEPTH or len(owner) > MAX_ACTIVE
        done = (total <= tol) | last | ~np.isfinite(total)
        np.add.at(mass, owner[done], best[done])
        # resolved: the Richardson estimate; cut off by a limit: the plain difference, which bounds it
        np.add.at(err, owner[done], np.where(total[done] <= tol, total[done] / RICHARDSON, total[done]))
        if atoms and done.any():
            fd = f[done].reshape([-1] + [9] * d)
            for k in range(d):
                # the leaf's line integrals across the other axes at its nodes along k
                line = fd
                for j in reversed(range(d)):
                    if j != k:
                        line = np.moveaxis(line, j + 1, -1) @ _FINE * h[done, j].reshape([-1] + [1] * (line.ndim - 2))
                parts[k].append((lo[done, k][:, None] + h[done, k][:, None] * _T, line))
        go = ~done
        if not go.any():
            break
        lo, hi, owner, axis_err, total = lo[go], hi[go], owner[go], axis_err[go], total[go]
        split = axis_err > total[:, None] / (2 * d)       # the axes that carry the error (at least one does)
        for k in range(d):
            mid = (lo[:, k] + hi[:, k]) / 2
            s = split[:, k]
            lo2, hi2 = lo[s].copy(), hi[s].copy()
            lo2[:, k] = mid[s]
            hi[s, k] = mid[s]
            lo, hi, owner = np.concatenate([lo, lo2]), np.concatenate([hi, hi2]), np.concatenate([owner, owner[s]])
            split = np.concatenate([split, split[s]])
    out_atoms = []
    for k in range(d):
        if parts[k]:
            pos = np.concatenate([p for p, _ in parts[k]])
            g = np.concatenate([a for _, a in parts[k]])
        else:
            pos, g = np.empty((0, 9)), np.empty((0, 9))
        out_atoms.append((pos, g))
    return Cubature(mass, err, out_atoms, u_min)


# ---------------------------------------------------------------- the support: follow the tails outward


def _axis_edges(rings_lo: int, rings_hi: int) -> np.ndarray:
    """Edges along one axis: BASE_CELLS across +-BASE_HALF_WIDTH, then RING_CELLS per doubling outward."""
    h = BASE_HALF_WIDTH
    inner = np.linspace(-h, h, BASE_CELLS + 1)
    hi = [np.linspace(h * 2 ** j, h * 2 ** (j + 1), RING_CELLS + 1)[1:] for j in range(rings_hi)]
    lo = [-np.linspace(h * 2 ** j, h * 2 ** (j + 1), RING_CELLS + 1)[1:][::-1] for j in range(rings_lo)][::-1]
    return np.concatenate([*lo, inner, *hi])


def _cells(edges: list) -> tuple[np.ndarray, np.ndarray]:
    grids = np.meshgrid(*[np.arange(len(e) - 1) for e in edges], indexing="ij")
    idx = [g.ravel() for g in grids]
    lo = np.stack([e[i] for e, i in zip(edges, idx)], axis=1)
    hi = np.stack([e[i + 1] for e, i in zip(edges, idx)], axis=1)
    return lo, hi


def _side_name(names, k: int, side: int) -> str:
    return f"{names[k]} -> {'+' if side else '-'}inf"


@dataclass
class Support:
    edges: list                 # per axis: the base cells' edges
    shift: float                # a value near min U, so exp(-(U - shift)) neither overflows nor vanishes
    tail: float                 # mass fraction estimated beyond the support (extrapolated from the outer rings)
    centre: np.ndarray          # the base grid's centre: its coordinates are node lines


def find_support(U, d: int, names=("x", "y"), centre=None) -> Support:
    """The box holding all but a negligible part of exp(-U)'s mass, grown side by side by doubling while the
    outermost ring on that side holds more than TAIL of the mass; NotIntegrable naming the directions where the
    ring masses do not fall (exp(-U) is not a probability density: mass escapes that way). The grid is centred on
    `centre` (the lowest U found so far), so the mode's coordinates are node lines: a peak there is seen however
    narrow it is."""
    centre = np.zeros(d) if centre is None else np.asarray(centre, float)
    rings = np.zeros((d, 2), int)
    ring_mass: dict = {}
    fine = _rule(d, None)
    unit = _nodes(d)
    # cells are products of axis intervals, and growing a side only adds intervals: each interval gets an id
    # (its lower edge's position on a fixed lattice), and each cell's log-mass is kept in a table by ids
    n_ids = BASE_CELLS + 2 * MAX_RINGS * RING_CELLS + 2
    table = np.full([n_ids] * d, np.nan)
    while True:
        edges = [_axis_edges(*rings[k]) + centre[k] for k in range(d)]
        ids = [np.arange(len(e) - 1) + MAX_RINGS * RING_CELLS - rings[k, 0] * RING_CELLS
               for k, e in enumerate(edges)]
        lo, hi = _cells(edges)
        idx = tuple(g.ravel() for g in np.meshgrid(*ids, indexing="ij"))
        new = np.isnan(table[idx])
        if new.any():
            nlo, nhi = lo[new], hi[new]
            h = nhi - nlo
            pts = (nlo[:, None, :] + h[:, None, :] * unit[None]).reshape(-1, d)
            u = _evaluate(U, pts).reshape(len(nlo), -1)
            bad = ~np.isfinite(u)
            if bad.any():
                where = pts.reshape(len(nlo), -1, d)[bad][0]
                raise NotFinite(f"U is not finite at {tuple(float(v) for v in where)}", where)
            with np.errstate(divide="ignore"):
                table[tuple(i[new] for i in idx)] = (logsumexp(-u, b=fine[None, :], axis=1)
                                                     + np.log(np.prod(h, axis=1)))
        logm = table[idx]
        log_z = logsumexp(logm)
        grow, escape, tails = [], [], 0.0
        for k in range(d):
            for side in (0, 1):
                n = rings[k, side]
                bound = BASE_HALF_WIDTH * (2 ** (n - 1) if n else 0.5)
                outer = (lo[:, k] - centre[k] >= bound - 1e-9) if side else (hi[:, k] - centre[k] <= -bound + 1e-9)
                frac = float(np.exp(logsumexp(logm[outer]) - log_z)) if outer.any() else 0.0
                ring_mass.setdefault((k, side), []).append(frac)
                if frac <= TAIL:
                    continue
                if n < MAX_RINGS:
                    grow.append((k, side))
                    continue
                last = ring_mass[(k, side)][-4:]
                ratios = [b / a for a, b in zip(last, last[1:]) if a > 0]
                if not ratios or min(ratios) >= 0.9:
                    escape.append(_side_name(names, k, side))
                else:       # decaying, slowly: what lies beyond is about a geometric series of the last rings
                    r = max(ratios)
                    tails += frac * r / (1 - r) if r < 1 else frac
        if escape:
            raise NotIntegrable("exp(-U) does not decay as " + " and as ".join(escape) +
                                ": its mass escapes that way")
        if not grow:
            return Support(edges, float(-log_z), tails, centre)
        for k, side in grow:
            rings[k, side] += 1


# ---------------------------------------------------------------- the reference


def _marginal_cdf(pos: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints and values of a marginal CDF from each leaf's line integrals at its nodes: every leaf adds the
    trapezoid between neighbouring nodes as a constant slope there, and the slopes of all leaves (which overlap
    along this axis) are summed at the sorted breakpoints and integrated."""
    slope = (line[:, :-1] + line[:, 1:]) / 2
    bp = np.concatenate([pos[:, :-1].ravel(), pos[:, 1:].ravel()])
    ds = np.concatenate([slope.ravel(), -slope.ravel()])
    order = np.argsort(bp, kind="stable")
    bp, ds = bp[order], ds[order]
    c = np.concatenate([[0.0], np.cumsum(np.cumsum(ds)[:-1] * np.diff(bp))])
    return bp, c / c[-1]


class Reference:
    """log Z, the minimum of U, bin masses and marginal CDFs of exp(-U), from cubature over its support."""

    def __init__(self, U, d: int, support: Support, rtol: float = 1e-9):
        self.U, self.d, self.support = U, d, support
        self.shift = support.shift
        self.centre = support.centre
        lo, hi = _cells(support.edges)
        # log Z ~ -shift: tolerances are absolute in units of Z (so about rtol of Z per cell)
        self.tol = rtol
        cub = cubature(U, lo, hi, self.shift, self.tol)
        z = cub.mass.sum()
        self.log_z = float(np.log(z) - self.shift)
        # the cubature's own estimate and the tail beyond the support, relative to Z
        self.log_z_err = float(cub.err.sum() / z + support.tail)
        self.u_min = cub.u_min
        self._z = z
        self._cdf = [_marginal_cdf(pos, g) for pos, g in cub.atoms]

    def tempered(self, beta: float) -> Reference:
        """The reference of exp(-beta U): its own support (wider for beta < 1; NotIntegrable if it is improper)."""
        U = self.U

        def tempered_u(t):
            return beta * U(t)
        return Reference(tempered_u, self.d, find_support(tempered_u, self.d, centre=self.centre), self.tol)

    @property
    def box(self) -> tuple:
        return tuple((float(e[0]), float(e[-1])) for e in self.support.edges)

    def cdf(self, k: int):
        """The marginal CDF of axis k, piecewise linear between the leaves' nodes."""
        bp, c = self._cdf[k]
        return lambda t: np.interp(t, bp, c, left=0.0, right=1.0)

    def nodes(self, k: int) -> np.ndarray:
        """The distinct positions along axis k at which the cubature evaluated U, sorted: dense wherever some
        slice of the density has a narrow feature along k (a funnel's neck), so a grid on them resolves every
        conditional law along k that the reference itself resolves."""
        return np.unique(self._cdf[k][0])

    def quantile(self, k: int, q: float) -> float:
        bp, c = self._cdf[k]
        return float(np.interp(q, c, bp))

    def marginal_density(self, k: int, lo: float, hi: float, n: int = 2001):
        """The marginal density of axis k on [lo, hi], as the CDF's differences on n points: for plots and Simpson
        sums; the CDF itself is exact to the cubature's accuracy."""
        t = np.linspace(lo, hi, n)
        F = self.cdf(k)(t)
        dens = np.gradient(F, t)
        return lambda x: np.interp(x, t, dens, left=0.0, right=0.0)

    def bin_masses(self, edges: list) -> tuple[np.ndarray, np.ndarray]:
        """Normalised masses of the histogram bins given by per-axis edges, and their error estimates. Each bin
        is cut along the support's base edges inside it, so no bin is coarser than the support's cells."""
        cut = []
        for e, base in zip(edges, self.support.edges):
            e = np.asarray(e, float)
            inner = base[(base > e[0]) & (base < e[-1])]
            cut.append(np.unique(np.concatenate([e, inner])))
        lo, hi = _cells(cut)
        cub = cubature(self.U, lo, hi, self.shift, self.tol, atoms=False)
        shape = tuple(len(e) - 1 for e in edges)
        owner = [np.searchsorted(np.asarray(e, float), (lo[:, k] + hi[:, k]) / 2) - 1
                 for k, e in enumerate(edges)]
        flat = np.ravel_multi_index(owner, shape)
        mass = np.bincount(flat, cub.mass, minlength=int(np.prod(shape))).reshape(shape) / self._z
        err = np.bincount(flat, cub.err, minlength=int(np.prod(shape))).reshape(shape) / self._z
        return mass, err
