"""The noise floor's Poisson part (`accuracy._poisson_kl`) without exp where it is 0 (issue 28, the frame-cost
round): the same number, bit for bit, as the plain formula, on a 2-D histogram's sparse bins."""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from samplers import accuracy


def plain_poisson_kl(q, n, kl_floor):
    """`_poisson_kl` as it was written until this round: exp of every bin and count."""
    lam = n * q
    k = np.arange(1, int(lam.max() + 10 * np.sqrt(lam.max()) + 30))
    pmf = np.multiply.outer(np.log(lam), k)
    pmf -= lam[:, None]
    pmf -= gammaln(k + 1)
    np.exp(pmf, out=pmf)
    p = k / n
    return float(pmf.sum(axis=0) @ (p * np.log(p)) - (pmf @ p) @ np.log(np.maximum(q, kl_floor)))


def test_exp_is_zero_at_and_below_the_threshold_left_out():
    x = np.concatenate([np.linspace(accuracy.EXP_ZERO, -1e4, 10001), [-1e300, -np.inf]])
    assert not np.exp(x).any()
    assert np.exp(accuracy.EXP_ZERO + 20) > 0      # and it is near the end of the subnormals: it leaves most out


def test_the_poisson_part_is_the_plain_formulas_bit_for_bit():
    """A 2-D Gaussian's bin masses on a 50 x 50 grid out to 4 sd (most bins sparse, some with q ~ 1e-15), as the
    live floor sees them (`LiveRun.noise_floor`), at a few sample sizes."""
    from scipy import stats
    e = np.linspace(-4, 4, 51)
    m = np.diff(stats.norm.cdf(e))
    q = np.outer(m, m * 1.3).ravel()
    q = q[q > 0]
    for n in (3e3, 4e4, 6e5):
        sparse = q[n * q < accuracy.FULL_BIN]
        got = accuracy._poisson_kl(sparse, n, 1e-12)
        assert got == plain_poisson_kl(sparse, n, 1e-12) and got > 0
