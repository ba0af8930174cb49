"""The QNHMC paper's real-model targets (samplers/targets/models.py): gradients against finite differences,
minibatches unbiased, densities against scipy.stats, the CSV loaders' errors, and a batch held per proposal."""
import io

import numpy as np
import pytest
from conftest import fd_grad
from scipy import stats

from samplers.cli import main
from samplers.gradients import GradientError, Minibatch
from samplers.targets.models import (
    DataFileError,
    classification_scores,
    load_classification_csv,
    load_ratings_csv,
    predictive,
    synthetic_ratings,
)
from samplers.targets.presets import get_potential


def _points(pot, n, rng, scale=0.3):
    return pot.start + scale * rng.standard_normal((n, pot.dim))


def test_digits_logistic_gradient_and_density():
    pot = get_potential("digits-logistic")
    assert pot.dim == 65 and pot.data.x.shape[1] == 65
    rng = np.random.default_rng(0)
    w = _points(pot, 3, rng)
    np.testing.assert_allclose(pot.grad(w), fd_grad(pot.U, w), rtol=1e-5, atol=1e-6)
    # -log p(y | w) + prior, directly: Bernoulli likelihood and the N(0, I) prior of scipy
    data = pot.data
    p = 1 / (1 + np.exp(-w @ data.x.T))
    ll = stats.bernoulli.logpmf((data.y > 0).astype(int), p).sum(1)
    lp = stats.multivariate_normal(np.zeros(65), data.prior_var * np.eye(65)).logpdf(w)
    np.testing.assert_allclose(np.diff(pot.U(w)), np.diff(-(ll + lp)), rtol=1e-9)


def test_pmf_gradient_and_density():
    pot = get_potential("pmf")
    data = pot.data
    assert pot.dim == (data.n_users + data.n_items) * data.rank >= 1000
    rng = np.random.default_rng(1)
    th = _points(pot, 2, rng)
    g = pot.grad(th)
    cols = rng.choice(pot.dim, 40, replace=False)
    eye = np.eye(pot.dim)[cols] * 1e-6
    fd = np.stack([(pot.U(th + e) - pot.U(th - e)) / 2e-6 for e in eye], axis=1)
    np.testing.assert_allclose(g[:, cols], fd, rtol=1e-5, atol=1e-5 * np.abs(g).max())
    U, V = data.factors(th)
    mean = np.einsum("cbk,cbk->cb", U[:, data.users], V[:, data.items])
    ll = stats.norm(mean, np.sqrt(data.noise_var)).logpdf(data.ratings).sum(1)
    lp = stats.norm(0, np.sqrt(data.prior_var)).logpdf(th).sum(1)
    np.testing.assert_allclose(np.diff(pot.U(th)), np.diff(-(ll + lp)), rtol=1e-9)


@pytest.mark.parametrize("name", ["digits-logistic", "pmf"])
def test_minibatch_gradient_is_unbiased(name):
    pot = get_potential(name)
    th = np.tile(_points(pot, 1, np.random.default_rng(2)), (4000, 1))
    oracle = Minibatch(pot, 20)
    _, g = oracle(th, np.random.default_rng(3))
    full = pot.grad(th[:1])[0]
    se = g.std(0) / np.sqrt(len(g)) + 1e-9
    assert np.abs((g.mean(0) - full) / se).max() < 5.5    # d z-scores; 5.5 sd leaves room for 2500 of them


def test_minibatch_sum_equals_the_full_gradient_over_all_entries():
    data = get_potential("pmf").data
    th = _points(get_potential("pmf"), 3, np.random.default_rng(4))
    everyone = np.tile(np.arange(data.n), (3, 1))          # per-chain indices, every entry once
    np.testing.assert_allclose(data.batch_grad(th, everyone), data.batch_grad(th, np.arange(data.n)), atol=1e-10)


def test_pmf_has_no_bhat_and_logistic_has_one():
    with pytest.raises(GradientError, match="Bhat to a number"):
        Minibatch(get_potential("pmf"), 10).bhat(np.zeros((1, 2500)))
    pot = get_potential("digits-logistic")
    oracle = Minibatch(pot, 10)
    oracle(np.tile(pot.start, (2, 1)), np.random.default_rng(0))
    assert oracle.bhat(np.tile(pot.start, (2, 1))).shape == (2, 65, 65)


def test_a_batch_held_per_proposal_is_shared_by_its_gradients():
    pot = get_potential("digits-logistic")
    oracle = Minibatch(pot, 10, per="proposal")
    rng = np.random.default_rng(0)
    w = np.tile(pot.start, (3, 1))
    oracle.start_proposal(3, rng)
    assert np.array_equal(oracle(w, rng)[1], oracle(w, rng)[1])
    with pytest.raises(GradientError, match="per must be"):
        Minibatch(pot, 10, per="step")


def test_qnhmc_learns_from_a_batch_held_per_proposal():
    from samplers.registry import make_sampler
    pot = get_potential("digits-logistic")
    s = make_sampler("qnhmc", pot, Minibatch(pot, 50, per="proposal"), eps=0.05, L=5, memory=3,
                       metropolis="off")   # the batch's energy error would reject it
    z = s.init_state(2, np.random.default_rng(0))
    z1, _ = s.step(z, np.random.default_rng(1), 1)
    assert np.abs(z1[:, 2 * pot.dim:]).max() > 0          # pairs stored
    s = make_sampler("qnhmc", pot, Minibatch(pot, 50), eps=0.05, L=5, memory=3, metropolis="off")
    z1, _ = s.step(z, np.random.default_rng(1), 1)
    assert np.abs(z1[:, 2 * pot.dim:]).max() == 0          # independent batches: no pairs


def test_test_metrics():
    pot = get_potential("digits-logistic")
    err, ll = classification_scores(pot.data, predictive(pot.data, pot.start[None])[0])
    assert err < 0.05 and -0.1 < ll < 0
    wrong = np.where(pot.data.y_test > 0, 0.2, 0.8)
    assert classification_scores(pot.data, wrong) == (1.0, pytest.approx(np.log(0.2)))
    data = synthetic_ratings()
    truth = data.predict(data.truth[None], data.test_users, data.test_items)[0]
    assert data.truth_rmse(truth) == 0
    assert data.rmse(truth) == pytest.approx(0.5, rel=0.15)   # the noise sd


def test_synthetic_ratings_are_deterministic():
    a, b = synthetic_ratings(seed=3), synthetic_ratings(seed=3)
    assert np.array_equal(a.ratings, b.ratings) and np.array_equal(a.test_users, b.test_users)


def _write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_classification_csv(tmp_path):
    rows = "\n".join(f"{i},{i % 3},{'yes' if i % 2 else 'no'}" for i in range(20))
    x, labels = load_classification_csv(_write(tmp_path, "a,b,label\n" + rows + "\n"))
    assert x.shape == (20, 2) and set(labels) == {"yes", "no"}
    pot = get_potential("logistic-csv:" + str(tmp_path / "data.csv"))
    assert pot.dim == 3 and pot.data.n + len(pot.data.y_test) == 20


@pytest.mark.parametrize("text, message", [
    ("1,2,a\n3,x,b\n", "line 2, column 2: feature 'x' is not a number"),
    ("1,2,a\n3,4\n", "line 2: 2 columns, the first row has 3"),
    ("1,2,a\n3,4,b\n5,6,c\n", "column 3: the label needs exactly two distinct values, got 3"),
    ("1,inf,a\n3,4,b\n", "line 1, column 2: feature must be finite"),
    ("", "no data rows"),
])
def test_classification_csv_errors(tmp_path, text, message):
    with pytest.raises(DataFileError, match=message):
        load_classification_csv(_write(tmp_path, text))


def test_ratings_csv(tmp_path):
    rows = "\n".join(f"u{i % 5},item{i % 7},{1 + i % 5}" for i in range(30))
    users, items, ratings, n_users, n_items = load_ratings_csv(_write(tmp_path, "user,item,rating\n" + rows))
    assert (n_users, n_items, len(ratings)) == (5, 7, 30)
    pot = get_potential("pmf-csv:" + str(tmp_path / "data.csv"))
    assert pot.dim == 12 * 10 and pot.data.offset == pytest.approx(pot.data.ratings.mean() + pot.data.offset)


@pytest.mark.parametrize("text, message", [
    ("user,item,rating\n1,2,3\n1,2\n", "line 3: expected 3 columns user,item,rating, got 2"),
    ("1,2,3\n1,2,good\n", "line 2, column 3: rating 'good' is not a number"),
    ("1,,3\n", "line 1, column 2: empty item id"),
    ("1,2,3\n2,3,nan\n", "line 2, column 3: rating must be finite"),
    ("1,2,3\n", "1 ratings; need at least 10"),
])
def test_ratings_csv_errors(tmp_path, text, message):
    with pytest.raises(DataFileError, match=message):
        load_ratings_csv(_write(tmp_path, text))


def test_cli_reports_a_bad_file_in_one_line(tmp_path, capsys):
    path = _write(tmp_path, "1,2,3\n1,2,good\n")
    out = ["--steps", "2", "--out", str(tmp_path / "s.npz")]
    status = main(["sample", "--sampler", "hmc", "--potential", f"pmf-csv:{path}", *out],
                  out=io.StringIO())
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "line 2, column 3" in err
    status = main(["sample", "--sampler", "hmc", "--potential", f"logistic-csv:{tmp_path}/missing.csv", *out],
                  out=io.StringIO())
    assert status == 2 and "cannot read" in capsys.readouterr().err
