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
