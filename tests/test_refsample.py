"""Scoring beyond two parameters: the error bars of the per-marginal distances (accuracy.marginal_distances) match
what exact sampling shows, and the reference sample (samplers/refsample.py) is an exact run, cached."""
import numpy as np
from scipy import stats

from samplers.accuracy import marginal_distances
from samplers.refsample import reference_sample
from samplers.targets.presets import gaussian_nd

DIM, CALLS = 20, 25         # each marginal of each call is one replicate: 500 of them


def _replicates(shift=0.0, n=400, m=1600, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(CALLS):
        a = rng.standard_normal((n, DIM)) + shift
        b = rng.standard_normal((m, DIM))
        out.append(marginal_distances(a, np.full(DIM, n), b, np.full(DIM, m)))
    return {k: np.concatenate([o[k] for o in out]) for k in ("ks", "ks_noise", "ks_err", "w1", "w1_noise", "w1_err")}


def test_noise_levels_and_error_bars_match_exact_sampling():
    """Independent exact draws: the mean KS and W1 over 500 replicates equal the stated noise levels (the
    asymptotic means; at n = 400 KS's mean is a few per cent below its limit), and the stated error bars are at
    least the replicates' sd (they bound it)."""
    r = _replicates()
    for key in ("ks", "w1"):
        se = r[key].std(ddof=1) / np.sqrt(r[key].size)
        assert abs(r[key].mean() - r[f"{key}_noise"].mean()) < 3 * se + 0.05 * r[f"{key}_noise"].mean(), key
        assert r[f"{key}_err"].mean() >= r[key].std(ddof=1), key


def test_a_biased_sample_stands_above_its_error_bars():
    """Power: a sample shifted by 0.3 sd is told apart (KS ~ 0.12 against noise ~ 0.03, error bar ~ 0.018)."""
    r = _replicates(shift=0.3, n=1000, m=4000)
    assert (r["ks"] > r["ks_noise"] + 2 * r["ks_err"]).mean() > 0.9
    assert (r["w1"] > r["w1_noise"] + 2 * r["w1_err"]).mean() > 0.9


def test_the_reference_is_an_exact_run_and_is_cached(tmp_path, monkeypatch):
    """A 3-d Gaussian (known marginals) by the reference run: its marginals' KS against the exact law are within
    the Kolmogorov 99.9 % bound at the run's ESS; the second call reads the file the first wrote."""
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path))
    cov = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 2.0]])
    pot = gaussian_nd("ref-test-gaussian", cov, "a 3-d Gaussian", "")
    ref = reference_sample(pot, kept=300, chains=8)
    assert ref.path and ref.acceptance > 0.5
    bound = stats.kstwobign.isf(1e-3 / 3)
    for i in range(3):
        d = stats.kstest(ref.draws[:, i], stats.norm(0, np.sqrt(cov[i, i])).cdf).statistic
        assert d * np.sqrt(ref.ess[i]) < bound, (i, d, ref.ess[i])
    from samplers import refsample
    refsample._MEMORY.clear()
    again = reference_sample(pot, kept=300, chains=8)
    np.testing.assert_array_equal(again.theta, ref.theta)
