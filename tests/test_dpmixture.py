"""The DP mixture of SCIR paper §4.2 (samplers/targets/dpmixture.py): its density against direct evaluation, its
gradient against finite differences, the allocation draws against their exact conditional, the generator's
truth, the reproduction's claims and the Models page entry."""
import csv

import numpy as np
import pytest
from conftest import fd_grad
from conftest import run_reproduction as run
from scipy import special, stats

from samplers.gradients import Minibatch
from samplers.registry import build_sampler
from samplers.run import Ensemble
from samplers.targets.dpmixture import dp_mixture_potential, synthetic_mixture
from samplers.targets.live import LIVE_MODELS, live_model


@pytest.fixture(scope="module")
def tiny():
    data = synthetic_mixture(3, n_train=40, n_test=10, d=5, k_true=2, k=3, tokens=4.0)
    theta = 0.3 + data.init(3, np.random.default_rng(1))
    return data, dp_mixture_potential(data), theta


def direct_weights(sticks):
    """pi_k = v_k prod_{j<k} (1 - v_j), v_K = 1, written out term by term."""
    v = [s[0] / s.sum() for s in sticks] + [1.0]
    return np.array([v[k] * np.prod([1 - v[j] for j in range(k)]) for k in range(len(v))])


def direct_terms(data, theta_row):
    """pi_k Multinomial(x_i; n_i, phi_k) for every row and component, by scipy.stats: (N, K)."""
    comp = theta_row[: data.k * data.d].reshape(data.k, data.d)
    phi = comp / comp.sum(1, keepdims=True)
    pi = direct_weights(theta_row[data.k * data.d:].reshape(data.k - 1, 2))
    n = data.x.sum(1)
    return np.stack([pi[k] * stats.multinomial.pmf(data.x, n, phi[k]) for k in range(data.k)], axis=1)


def test_density_is_the_marginal_likelihood_times_the_gamma_prior(tiny):
    """U = -sum_i log sum_k pi_k Mult(x_i; n_i, phi_k) - sum_j log Gamma(theta_j; alpha_j, 1) - sum_j log Gamma(alpha_j)
    (U drops the prior's normalisers)."""
    data, pot, theta = tiny
    for c in range(len(theta)):
        loglik = np.log(direct_terms(data, theta[c]).sum(1)).sum()
        log_prior = stats.gamma(data.alpha).logpdf(theta[c]).sum()
        assert pot.U(theta[c:c + 1])[0] == pytest.approx(-loglik - log_prior - special.gammaln(data.alpha).sum(),
                                                         rel=1e-10)
    assert np.isinf(pot.U(-theta[:1]))[0]


def test_the_stick_weights_sum_to_one_and_match_their_definition(tiny):
    data, _, theta = tiny
    log_pi = data.log_params(theta)[1]
    np.testing.assert_allclose(np.exp(log_pi).sum(1), 1.0, rtol=1e-12)
    for c in range(len(theta)):
        np.testing.assert_allclose(np.exp(log_pi[c]), direct_weights(theta[c, data.k * data.d:].reshape(-1, 2)))


def test_gradient_matches_finite_differences(tiny):
    _, pot, theta = tiny
    g = pot.grad(theta)
    np.testing.assert_allclose(g, fd_grad(pot.U, theta, 1e-6), rtol=1e-5, atol=1e-5 * np.abs(g).max())


def test_minibatch_gradient_over_all_rows_is_the_full_gradient(tiny):
    data, pot, theta = tiny
    idx = np.tile(np.arange(data.n), (len(theta), 1))
    np.testing.assert_allclose(data.batch_grad(theta, idx) + data.prior_grad(theta), pot.grad(theta), rtol=1e-10)
    oracle = Minibatch(pot, 7)
    _, g = oracle(theta, np.random.default_rng(0))
    assert g.shape == theta.shape and np.isfinite(g).all()


def test_allocations_are_drawn_from_their_conditional(tiny):
    """Many draws for each of four rows against p(z_i = k | x_i, theta) from scipy.stats, at 5 binomial sd."""
    data, _, theta = tiny
    rows, draws = np.arange(4), 20_000
    idx = np.repeat(rows, draws)[None]
    z, _ = data.sample_allocations(theta[:1], idx, np.random.default_rng(2))
    freq = (z.reshape(len(rows), draws)[..., None] == np.arange(data.k)).mean(1)       # (rows, K)
    terms = direct_terms(data, theta[0])[rows]
    exact = terms / terms.sum(1, keepdims=True)
    tol = 5 * np.sqrt(exact * (1 - exact) / draws) + 1e-12
    assert (np.abs(freq - exact) <= tol).all(), (freq, exact)
    # power: drawing from the prior weights instead would fail the same test
    prior = np.exp(data.log_params(theta[:1])[1])
    assert (np.abs(prior - exact) > tol).any()


def test_shape_estimates_average_to_the_expected_counts_and_drive_sgrld_along_grad_u(tiny):
    """E a-hat = alpha + E[counts | x, theta] (MC), and a - theta - C omega = theta (-grad U) + 1, the drift of
    expanded-mean SGRLD (its Riemannian form with G = diag(theta)^-1), exactly for the expected counts."""
    data, pot, theta = tiny
    rng = np.random.default_rng(4)
    reps = 4000
    draws = np.stack([data.shape_estimate(None, theta, rng) for _ in range(reps)])
    r, xb = data.responsibilities(theta, None)
    expected = data.alpha + data.counts(r, np.broadcast_to(xb, r.shape[:2] + (data.d,)))
    se = draws.std(0) / np.sqrt(reps) + 1e-9
    assert (np.abs(draws.mean(0) - expected) <= 5 * se).all()
    drift = expected - theta - data.block_sum(expected - data.alpha) * theta / data.block_sum(theta)
    np.testing.assert_allclose(drift, theta * -pot.grad(theta) + 1.0, rtol=1e-9, atol=1e-9)


def test_generator_draws_from_its_truth():
    data = synthetic_mixture(5, n_train=20_000, n_test=100, d=8, k_true=3, k=4, tokens=5.0)
    x = data.x
    assert (x.sum(1) >= 1).all() and abs(x.sum(1).mean() - 5.0) < 0.05
    pooled = x.sum(0) / x.sum()
    mix = data.true_weights @ data.true_phi
    # the pooled category shares, against the truth: within 5 sd of a multinomial share (rows are clustered, and
    # their token counts vary, so the sd is doubled as a margin for that dependence)
    sd = np.sqrt(mix * (1 - mix) / x.sum())
    assert (np.abs(pooled - mix) < 10 * sd + 1e-12).all(), (pooled, mix)
    np.testing.assert_allclose(data.true_phi.sum(1), 1) and np.testing.assert_allclose(data.true_weights.sum(), 1)


def test_scores_at_the_truth():
    data = synthetic_mixture(6, n_train=500, n_test=400, d=10, k_true=3, k=5)
    pot = dp_mixture_potential(data)
    # the truth as a state: its components (in a shuffled order) and two empty extra ones, sticks giving its weights
    order = [2, 0, 1]
    comp = np.concatenate([data.true_phi[order], np.full((2, data.d), 1.0 / data.d)])
    w = np.concatenate([data.true_weights[order], [1e-12, 1e-12]])
    w /= w.sum()
    tail = np.cumsum(w[::-1])[::-1]
    v = w[:-1] / tail[:-1]
    state = np.concatenate([comp.ravel(), np.stack([v, 1 - v], 1).ravel()])[None]
    assert data.component_error(state)[0] == pytest.approx(0.0, abs=1e-12)
    assert data.log_predictive(state) == pytest.approx(data.truth_log_predictive(), abs=1e-6)
    assert data.occupied(state)[0] == 3
    truth_absent = (data.true_phi * (data.true_phi < 1e-3)).sum(1).mean()
    assert data.absent_mass(state)[0] == pytest.approx(truth_absent, abs=1e-12)
    random = data.init(4, np.random.default_rng(0))
    assert (data.component_error(random) > 0.2).all()
    assert (data.log_predictive_chains(random) < data.truth_log_predictive() - 0.5).all()
    assert np.allclose(pot.theta_view(state), state)        # the state is already normalised block by block


def test_reproduction_claims(tmp_path):
    claims = run("scir-dpmixture", tmp_path)
    [main] = [c for t, c in claims.items() if t.startswith("SCIR's held-out log predictive is at least as good")]
    # at the quick size the comparison is at equal CPU time over 3 chains, so its gap can fall inside twice its
    # standard error on a busy machine (issue 26: then "not decidable here", null); it must never come out against
    # SCIR, and the full-size run in assets/reproductions decides it
    assert main["holds"] is not False and main["decides"], main["evidence"]
    [occ] = [c for t, c in claims.items() if t.startswith("SGRLD occupies more components")]
    assert "SGRLD" in occ["evidence"] and "SCIR" in occ["evidence"]
    # a boolean or null (never numpy's bool written as the string "True"), with what would decide it
    assert occ["holds"] in (True, False, None) and "standard error over chains" in occ["decides"]
    rows = [r for r in csv.DictReader(open(tmp_path / "scir-dpmixture.csv")) if r["tuned"] == "yes"]
    assert {r["method"] for r in rows} == {"SCIR", "SGRLD"} and all(r["diverged"] == "0" for r in rows)


def test_live_entry_builds_and_steps():
    assert "dp-mixture" in LIVE_MODELS
    m = live_model("dp-mixture", seed=1, size="small")
    assert m.pair == ("sgrld-simplex", "scir") and not m.lower_is_better
    rng = np.random.default_rng(0)
    for name in m.pair:
        s = build_sampler(name, m.potential, None, m.batch, **m.params[name])
        ens = Ensemble(s, m.chains, seed=0, theta0=m.init(m.chains, rng))
        before = m.metric(ens.theta)
        ens.advance(60)
        after = m.metric(ens.theta)
        assert np.isfinite(after) and after > before and ens.n_diverged == 0, (name, before, after)
    with pytest.raises(ValueError):
        live_model("dp-mixture", size="huge")
