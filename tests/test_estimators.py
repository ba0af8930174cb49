"""The minibatch gradient estimators (samplers/gradients.py): each is unbiased (its mean over many draws is the
full-data gradient, within Monte Carlo error, and a biased mutation of it is caught), its B-hat matches the spread
of its draws, and control variates cut the variance near the mode (Baker, Fearnhead, Fox & Nemeth 2019, §3:
the variance falls as |theta - mode|^2 instead of staying O(N^2/n))."""
import numpy as np
import pytest
from scipy import stats

from samplers.gradients import ControlVariate, GradientError, Minibatch, make_oracle
from samplers.registry import build_sampler
from samplers.targets.data import logistic_5d

DRAWS = 4000
POINTS = 3
# every estimate's mean is compared with the full gradient in 5 coordinates at POINTS points: a z beyond this
# has a chance under 1e-3 in all of them together for an unbiased estimator (Bonferroni)
Z_MAX = float(stats.norm.isf(1e-3 / (2 * 5 * POINTS)))


@pytest.fixture(scope="module")
def pot():
    return logistic_5d(n=1000)


def _points(pot, sds=3.0):
    """POINTS points a few posterior sds from the mode (about 1/sqrt(N/4) per weight here)."""
    rng = np.random.default_rng(5)
    return pot.start + sds / np.sqrt(pot.data.n / 4) * rng.standard_normal((POINTS, pot.dim))


def bias_z(oracle, pot, theta, seed=0, warm=None):
    """The largest |z| of the estimator's mean against the full gradient, DRAWS draws at each point of theta
    (one chain per draw); warm: states called first (SVRG takes its anchors there)."""
    rng = np.random.default_rng(seed)
    th = np.repeat(theta, DRAWS, 0)
    if warm is not None:
        oracle(np.repeat(warm, DRAWS, 0), rng)
    g = oracle(th, rng)[1].reshape(len(theta), DRAWS, -1)
    se = g.std(1, ddof=1) / np.sqrt(DRAWS)
    return float(np.abs((g.mean(1) - pot.grad(theta)) / se).max())


@pytest.mark.parametrize("estimator", ["minibatch", "cv", "svrg"])
@pytest.mark.parametrize("sampling", ["replace", "epochs"])
def test_each_estimator_is_unbiased(pot, estimator, sampling):
    theta = _points(pot)
    oracle = make_oracle(pot, batch=10, estimator=estimator, sampling=sampling)
    warm = _points(pot, 1.0)[::-1] if estimator == "svrg" else None   # anchors away from theta
    assert bias_z(oracle, pot, theta, warm=warm) < Z_MAX


class StaleCV(ControlVariate):
    """A mutation: the full gradient is taken at a point other than the table's (a mode moved, the table not)."""

    def __init__(self, pot, batch):
        super().__init__(pot, batch)
        m = self.mode[None] + 0.02
        self._g_full = pot.grad(m) - pot.data.prior_grad(m)


class MisScaled(Minibatch):
    """A mutation: the batch sum scaled by N/(n - 1), as if the batch held one example fewer."""

    def __call__(self, theta, rng, value=False):
        u, g = super().__call__(theta, rng, value)
        prior = self.data.prior_grad(theta)
        return u, (g - prior) * self.batch / (self.batch - 1) + prior


def test_the_unbiasedness_test_catches_biased_estimators(pot):
    theta = _points(pot)
    assert bias_z(StaleCV(pot, 10), pot, theta) > 2 * Z_MAX
    assert bias_z(MisScaled(pot, 10, sampling="epochs"), pot, _points(pot, 30.0)) > 2 * Z_MAX


def _spread_and_bhat(oracle, theta, rng):
    th = np.repeat(theta[None], DRAWS, 0).reshape(DRAWS, -1)
    g = oracle(th, rng)[1]
    return np.trace(np.cov(g.T)), float(np.trace(oracle.bhat(th).mean(0)))


@pytest.mark.parametrize("estimator,sampling", [("minibatch", "replace"), ("minibatch", "epochs"),
                                                ("cv", "replace"), ("cv", "epochs")])
def test_bhat_from_the_batch_matches_the_spread(estimator, sampling):
    """B-hat, estimated from each batch, averages to the covariance of the draws. N = 200 and n = 100: without
    replacement the finite-population factor (N - n)/N = 1/2 matters, so leaving it out fails this."""
    small = logistic_5d(n=200)
    oracle = make_oracle(small, batch=100, estimator=estimator, sampling=sampling)
    spread, bhat = _spread_and_bhat(oracle, _points(small)[0], np.random.default_rng(3))
    # the trace of a sample covariance of DRAWS draws has a relative error near sqrt(2 / (5 DRAWS)) ~ 1 %
    assert bhat == pytest.approx(spread, rel=0.08)
    if sampling == "epochs":       # the mutation: B-hat without the factor is twice as large, and fails
        assert bhat / 0.5 != pytest.approx(spread, rel=0.08)


def test_control_variates_cut_the_variance_near_the_mode(pot):
    """Within a posterior sd of the mode, CV's variance is a small fraction of the plain minibatch's (measured
    here: ~1/300 at N = 1000, n = 10); it grows as theta leaves the mode, as Baker et al.'s Lemma 1 says."""
    rng = np.random.default_rng(2)
    ratios = []
    for sds in (1.0, 4.0):
        theta = _points(pot, sds)[0]
        th = np.repeat(theta[None], DRAWS, 0)
        plain = make_oracle(pot, batch=10)(th, rng)[1].var(0).sum()
        cv = make_oracle(pot, batch=10, estimator="cv")(th, rng)[1].var(0).sum()
        ratios.append(cv / plain)
    assert ratios[0] < 0.02
    assert ratios[1] > 4 * ratios[0]      # ~ (4/1)^2 = 16 in theory


def test_epochs_visit_every_example_once_per_epoch(pot):
    oracle = Minibatch(pot, 100, sampling="epochs")
    rng = np.random.default_rng(0)
    seen = np.concatenate([oracle._draw(3, rng) for _ in range(pot.data.n // 100)], axis=1)
    assert (np.sort(seen, axis=1) == np.arange(pot.data.n)).all()
    assert not (seen[0] == seen[1]).all()      # each chain its own permutation


def test_estimators_by_name_and_variants(pot):
    s = build_sampler("sgld-cv", pot, None, 10)
    assert isinstance(s.oracle, ControlVariate) and s.title == "SGLD-CV" and s.name == "sgld"
    assert build_sampler("sghmc-cv", pot, None, 10).title == "SGHMC-CV"
    assert "SVRG" in build_sampler("sgld", pot, None, 10, estimator="svrg").oracle.describe()
    with pytest.raises(GradientError, match="unknown gradient estimator"):
        make_oracle(pot, batch=10, estimator="magic")
    with pytest.raises(GradientError, match="give a batch size"):
        make_oracle(pot, estimator="cv")
    with pytest.raises(GradientError, match="sampling"):
        make_oracle(pot, batch=10, sampling="sometimes")


def test_sgld_cv_beats_sgld_at_equal_gradient_evaluations(monkeypatch, tmp_path):
    """benchmarks/sgld_cv.py at CI size (N = 1000, n = 10, 5 10^4 per-example gradients per chain, SGLD-CV paying
    for its mode and table out of them), both at one step size (a tenth of the posterior's smallest variance):
    SGLD-CV's mean KS against an HMC reference is below SGLD's by more than twice the combined error bars (from
    both sides' ESS). Measured: SGLD ~0.2, SGLD-CV ~0.02. The criterion can fail: SGLD against itself at another
    seed does not pass it. (At SGLD's best step size the two are not told apart at this N within this budget;
    the benchmark at N = 10^4 compares best against best.)"""
    from benchmarks.sgld_cv import ks_at_budget
    from samplers.refsample import reference_sample
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path))
    pot = logistic_5d(n=1000)
    ref = reference_sample(pot, store=False)
    kw = dict(batch=10, budget=50_000, chains=50, eps=0.1 * float(ref.draws.var(0).min()))
    sgld = ks_at_budget(pot, ref, "minibatch", seed=1, **kw)
    cv = ks_at_budget(pot, ref, "cv", seed=1, **kw)

    def beats(a, b):
        return b["ks"] - a["ks"] > 2 * np.hypot(a["err"], b["err"])

    assert cv["spent"] <= sgld["spent"] <= kw["budget"]
    assert beats(cv, sgld), (cv, sgld)
    again = ks_at_budget(pot, ref, "minibatch", seed=2, **kw)
    assert not beats(again, sgld) and not beats(sgld, again), (again, sgld)
