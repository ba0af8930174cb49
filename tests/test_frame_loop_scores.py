"""What a frame computes for the numbers under the plots, against an independent reference: the noise floor's exact
sum over sparse bins (`accuracy._poisson_kl`, by the live runs' noise floor) against scipy.stats.poisson."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from samplers.accuracy import _poisson_kl


def reference(q, n, kl_floor):
    """sum_b E[p log(p / q_b)], p = k / n, k ~ Poisson(n q_b), bin by bin with scipy's pmf (k = 0 adds nothing)."""
    total = 0.0
    for qb in q:
        lam = n * qb
        k = np.arange(1, int(lam + 20 * np.sqrt(lam) + 60))     # the tail beyond: below 1e-20 of the sum
        p = k / n
        total += float((stats.poisson.pmf(k, n * qb) * p * np.log(p / max(qb, kl_floor))).sum())
    return total


@pytest.mark.parametrize("bins,n,seed", [(43, 5.45e5, 0), (5, 100.0, 1), (200, 1e4, 2), (1, 3.0, 3), (50, 1e6, 4)])
def test_the_sparse_bins_kl_is_the_poisson_expectation(bins, n, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0, 20 / n, bins)          # bins expecting fewer than 20 samples, as floor_from_counts sends
    q[0] = 1e-300                             # a bin the exact law all but leaves out: q floored at kl_floor
    got, want = _poisson_kl(q, n, 1e-12), reference(q, n, 1e-12)
    assert got == pytest.approx(want, rel=1e-9)
    # the test's power: the second-order form it replaces where bins are sparse is far off here
    assert abs(float((q * (1 - q) / n / (2 * np.maximum(q, 1e-12))).sum()) - want) > 1e-3 * abs(want)


def test_no_sparse_bin_adds_nothing():
    assert _poisson_kl(np.array([]), 100.0, 1e-12) == 0.0
