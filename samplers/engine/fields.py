"""D, Q, Gamma and grad K as per-chain numpy fields: compiled from sympy (constant when they hold no
symbol), or given as functions of the state with Gamma by central differences."""
from __future__ import annotations

import numpy as np
import sympy

from samplers.engine.symbols import StateSymbols


class Field:
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


class NumericField:
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


class DifferencedGamma:
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


class ConstantVector:
    """A numeric recipe's Gamma known in closed form to be constant (zero for QNHMC's L-BFGS Q, which
    depends only on coordinates whose rows are zero): differencing it would cost 2n evaluations of Q."""
    sym = None
    needs_u = needs_g = False

    def __init__(self, value):
        self.const = np.asarray(value, float)
        self.shape = self.const.shape
        self.structural = self.const != 0

    def __call__(self, z, u, g):
        return np.broadcast_to(self.const, (z.shape[0],) + self.shape)


def constant(m):
    return lambda z: m


def rows_times(mat, rows, vec):
    """mat[..., rows, :] @ vec per chain, for a constant (n, n) or per-chain (N, n, n) matrix."""
    if mat.ndim == 2:
        return vec @ mat[rows].T
    return np.einsum("nij,nj->ni", mat[:, rows], vec)


def columns(values, n):
    """Lambdified rows (arrays, or plain numbers for constant rows) as an (n, k) array."""
    return np.stack([np.broadcast_to(v, (n,)) for v in values], axis=1)
