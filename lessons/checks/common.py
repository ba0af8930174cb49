"""What every lesson check shares: its result record, its way of writing a number, and the standard
error of a mean over independent chains."""
from __future__ import annotations

import math
from typing import TypedDict

import numpy as np


class CheckResult(TypedDict):
    """What a check returns and a page shows: `text` carries the numbers, `passed` the verdict."""
    value: float       # the number the page shows
    tolerance: float   # what it is held to; `passed` says which way
    passed: bool
    text: str          # one line for the page, e.g. "residual 3e-9 (tolerance 1e-6)"


def result(value, tolerance, passed, text: str) -> CheckResult:
    return CheckResult(value=float(value), tolerance=float(tolerance), passed=bool(passed), text=text)


def short(x, digits: int = 2) -> str:
    """A short number for a page: 3e-09, 0.0123, 1.05."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e")
    return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{digits + 1}g}"


def chain_mean_se(x) -> tuple[float, float]:
    """Mean of x (steps, chains) and its standard error from the spread of the chains' own means.

    Chains are independent, so this accounts for the autocorrelation within each chain."""
    per_chain = np.asarray(x, float).mean(axis=0)
    return float(per_chain.mean()), float(per_chain.std(ddof=1) / np.sqrt(per_chain.size))


class _UnitDraws:
    """Stands in for a numpy Generator in one step of a sampler: its k-th `standard_normal` call returns zeros
    except a 1 in the rows reserved for that call, so a step that is affine in the state and the draws can be
    read off exactly, with no Monte Carlo."""

    def __init__(self, first_row: int, dim: int, calls: int):
        self.first_row, self.dim, self.calls, self.k = first_row, dim, calls, 0

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if self.k >= self.calls:
            raise RuntimeError(f"the step drew more than {self.calls} times")
        a = np.zeros(size, dtype=dtype)
        for j in range(self.dim):
            a[self.first_row + self.k * self.dim + j, j] = 1.0
        self.k += 1
        if out is not None:
            out[...] = a
            return out
        return a


def affine_step_maps(sampler, n: int, calls: int = 3, t: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(F, G) with sampler.step(z) = F z + G xi, xi standard normal, for a step that is affine in the state
    z (n coordinates) and linear in its draws of shape (chains, d), as every Euler or splitting step is on a
    Gaussian centred at 0. Read off the library's own step: unit states with no noise give F's columns, the
    zero state with one unit draw at a time gives G's."""
    d = sampler.dim
    rows = n + 1 + calls * d
    z = np.zeros((rows, n))
    z[:n] = np.eye(n)
    probe = _UnitDraws(n + 1, d, calls)
    out, _ = sampler.step(z, probe, t)
    offset = out[n]
    F = (out[:n] - offset).T
    G = (out[n + 1: n + 1 + probe.k * d] - offset).T
    return F, G
