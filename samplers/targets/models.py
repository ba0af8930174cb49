"""Real-model targets of the QNHMC paper (Fu, Luo & Zhang 2016, §5.2-5.3), offline and deterministic.

* `digits-logistic`: Bayesian logistic regression on scikit-learn's bundled digits (8x8 images), 7 against 9:
  359 images, a seeded 70/30 train/test split; pixels scaled to [0, 1] and standardised with the training split's
  mean and sd (a pixel constant there is left centred, unscaled), then an intercept: d = 65. Prior N(0, I).
  The paper uses MNIST (d = 784), which needs a download; the bundled digits are the same task at d = 65.
* `pmf`: Bayesian probabilistic matrix factorisation, ratings r_ij = u_i.v_j + noise on observed (i, j):
  U(theta) = sum_obs (r_ij - u_i.v_j)^2 / (2 s^2) + (|U|^2 + |V|^2) / (2 sigma_0^2), theta = (U, V) row-major.
  The synthetic data are drawn from this model itself (truth known): 150 users, 100 items, rank 10
  (d = (150 + 100) 10 = 2500), u_i, v_j ~ N(0, sigma_0^2 I) with sigma_0^2 = 1/sqrt(rank) so that u.v has unit
  variance, noise sd s = 0.5, each entry observed with probability 0.3, a seeded 90/10 split of the observed
  entries into training and test. The hyperparameters are fixed at the generating values (no hyperprior).

Both have full and minibatch gradients, vectorised over chains and over the batch: logistic regression's
per-example gradients (`LogisticData`, whose B-hat the minibatch oracle estimates), the factorisation's batch
sums by one `np.bincount` (its per-entry gradients, (chains, n, d), would not fit; it has no B-hat).

A user's own data: `logistic-csv:PATH` (rows of features then a label with two distinct values) and
`pmf-csv:PATH` (rows user,item,rating; a header line naming them is allowed). Bad input raises DataFileError
naming the file, line and column.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse
from scipy.special import expit

from samplers.targets.data import LogisticData, logistic_potential
from samplers.targets.live import LIVE_MODELS, LiveModel
from samplers.targets.potential import Potential, PotentialError

DIGITS_CLASSES = (7, 9)       # the paper's pair (label -1, +1)
TEST_FRACTION = 0.3           # held-out share of the classification data
LOGISTIC_PRIOR_VAR = 1.0      # N(0, I) on standardised features and the intercept

PMF_USERS, PMF_ITEMS, PMF_RANK = 150, 100, 10
PMF_OBSERVED = 0.3            # probability that an entry is observed
PMF_NOISE_SD = 0.5
PMF_TEST_FRACTION = 0.1       # held-out share of the observed entries


class DataFileError(PotentialError):
    """A data file that cannot be read: the message names the file, the line and the column."""


# ----------------------------------------------------------------------------------
# logistic regression
# ----------------------------------------------------------------------------------
def classification_data(x, labels, seed: int = 0, test_fraction: float = TEST_FRACTION,
                        prior_var: float = LOGISTIC_PRIOR_VAR, positive=None) -> LogisticData:
    """Features x (N, p) and two-valued labels as standardised training and test splits with an intercept.

    The split is a seeded permutation; the standardisation uses the training split only, so nothing of the
    test split leaks into the posterior. y = +1 for `positive` (default: the larger label), -1 otherwise."""
    x = np.asarray(x, float)
    labels = np.asarray(labels)
    values = np.unique(labels)
    if len(values) != 2:
        raise PotentialError(f"logistic regression needs labels with exactly two values, got {len(values)}")
    positive = values[1] if positive is None else positive
    y = np.where(labels == positive, 1.0, -1.0)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    mean, sd = x[train].mean(0), x[train].std(0)
    sd = np.where(sd > 0, sd, 1.0)

    def design(rows):
        z = (x[rows] - mean) / sd
        return np.concatenate([z, np.ones((len(rows), 1))], axis=1)
    return LogisticData(design(train), y[train], prior_var, design(test), y[test])


def digits_data(seed: int = 0) -> LogisticData:
    from sklearn.datasets import load_digits
    x, labels = load_digits(return_X_y=True)
    keep = np.isin(labels, DIGITS_CLASSES)
    return classification_data(x[keep] / 16.0, labels[keep], seed, positive=DIGITS_CLASSES[1])


LOGISTIC_FORMULA = r"U(w) = -\sum_{i=1}^N \log\sigma(y_i x_i^\top w) + \frac{|w|^2}{2\sigma^2}"


def digits_logistic(seed: int = 0) -> Potential:
    data = digits_data(seed)
    return logistic_potential(
        data, "digits-logistic",
        f"Bayesian logistic regression on scikit-learn's digits, 7 vs 9 (QNHMC paper §5.2 on MNIST): "
        f"{data.n} training and {len(data.y_test)} test images, 64 standardised pixels and an intercept, "
        f"prior N(0, {LOGISTIC_PRIOR_VAR:g} I); supports real minibatch gradients",
        LOGISTIC_FORMULA.replace(r"2\sigma^2", f"{2 * LOGISTIC_PRIOR_VAR:g}"))


def csv_logistic(path: str, seed: int = 0) -> Potential:
    x, labels = load_classification_csv(path)
    data = classification_data(x, labels, seed)
    return logistic_potential(
        data, f"logistic-csv:{path}",
        f"Bayesian logistic regression on {path}: {data.n} training and {len(data.y_test)} test rows, "
        f"{x.shape[1]} standardised features and an intercept, prior N(0, {LOGISTIC_PRIOR_VAR:g} I)",
        LOGISTIC_FORMULA.replace(r"2\sigma^2", f"{2 * LOGISTIC_PRIOR_VAR:g}"))


def predictive(data: LogisticData, w) -> np.ndarray:
    """P(y = +1 | x) on the test split for each row of w (chains, d): (chains, n_test)."""
    return expit(np.asarray(w) @ data.x_test.T)


def classification_scores(data: LogisticData, p_plus) -> tuple[float, float]:
    """Test error and mean test log-likelihood of predictive probabilities P(y = +1) (n_test,)."""
    p_plus = np.clip(np.asarray(p_plus, float), 1e-300, 1 - 1e-16)
    hit = np.where(data.y_test > 0, p_plus, 1 - p_plus)
    return float(np.mean(hit < 0.5)), float(np.mean(np.log(hit)))


# ----------------------------------------------------------------------------------
# probabilistic matrix factorisation
# ----------------------------------------------------------------------------------
@dataclass
class RatingsData:
    """Observed ratings as parallel arrays (users, items, ratings), centred by `offset`, and a held-out split."""
    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray            # training ratings minus offset
    test_users: np.ndarray
    test_items: np.ndarray
    test_ratings: np.ndarray       # as given (offset not removed)
    n_users: int
    n_items: int
    rank: int
    noise_var: float
    prior_var: float
    offset: float = 0.0
    truth: np.ndarray | None = None   # the generating (U, V) as one theta row, where known

    @property
    def n(self) -> int:
        return len(self.ratings)

    @property
    def dim(self) -> int:
        return (self.n_users + self.n_items) * self.rank

    def factors(self, theta):
        """U (chains, users, rank) and V (chains, items, rank): views into theta (chains, d)."""
        c, k = theta.shape[0], self.rank
        return theta[:, : self.n_users * k].reshape(c, self.n_users, k), \
            theta[:, self.n_users * k:].reshape(c, self.n_items, k)

    def _rows(self, theta, users, items):
        """u_i and v_j for each chain's entries; users, items (chains, b) or (b,) shared by the chains."""
        U, V = self.factors(theta)
        if users.ndim == 1:
            return U[:, users], V[:, items]
        return (np.take_along_axis(U, users[..., None], axis=1),
                np.take_along_axis(V, items[..., None], axis=1))

    def predict(self, theta, users, items) -> np.ndarray:
        """Predicted ratings (offset added back): (chains, b)."""
        u, v = self._rows(theta, users, items)
        return np.einsum("cbk,cbk->cb", u, v) + self.offset

    def _residuals(self, theta, idx):
        users, items = self.users[idx], self.items[idx]
        u, v = self._rows(theta, users, items)
        return self.ratings[idx] - np.einsum("cbk,cbk->cb", u, v), u, v, users, items

    def example_losses(self, theta, idx) -> np.ndarray:
        """-log N(r | u.v, s^2) up to its constant, for the entries idx (chains, b) or (b,): (chains, b)."""
        e = self._residuals(theta, idx)[0]
        return 0.5 * e * e / self.noise_var

    def batch_grad(self, theta, idx) -> np.ndarray:
        """The sum over the entries idx, (chains, b) or (b,) shared, of the gradients of their losses: (chains, d).

        Each entry touches only u_i and v_j: its two rows are scattered into theta's layout by one sparse
        product (a 0/1 matrix from (chain, row) to entries), so repeated users, items or entries add up."""
        c, k = theta.shape[0], self.rank
        e, u, v, users, items = self._residuals(theta, idx)
        coef = (-e / self.noise_var)[..., None]
        if np.ndim(idx) == 1:
            # entries shared by the chains: one (rows x b) scatter, the chains side by side in its columns
            scatter = self._scatter_all if idx is self._all else self._scatter(users, items)
            vals = np.concatenate([coef * v, coef * u], axis=1)              # (c, 2b, k)
            out = scatter @ vals.transpose(1, 0, 2).reshape(vals.shape[1], c * k)
            return out.reshape(-1, c, k).transpose(1, 0, 2).reshape(c, self.dim)
        rows = self.n_users + self.n_items
        base = (np.arange(c) * rows)[:, None]
        to = np.concatenate([(base + users).ravel(), (base + self.n_users + items).ravel()])
        vals = np.concatenate([(coef * v).reshape(-1, k), (coef * u).reshape(-1, k)])
        scatter = sparse.csr_matrix((np.ones(len(to)), (to, np.arange(len(to)))), shape=(c * rows, len(to)))
        return (scatter @ vals).reshape(c, self.dim)

    def _scatter(self, users, items):
        b = len(users)
        to = np.concatenate([users, self.n_users + items])
        return sparse.csr_matrix((np.ones(2 * b), (to, np.arange(2 * b))), shape=(self.n_users + self.n_items, 2 * b))

    @cached_property
    def _scatter_all(self):
        return self._scatter(self.users, self.items)

    def prior_U(self, theta):
        return 0.5 * (theta ** 2).sum(-1) / self.prior_var

    def prior_grad(self, theta):
        return theta / self.prior_var

    @cached_property
    def _all(self) -> np.ndarray:
        return np.arange(self.n)

    def U(self, theta):
        return self.example_losses(theta, self._all).sum(1) + self.prior_U(theta)

    def grad(self, theta):
        return self.batch_grad(theta, self._all) + self.prior_grad(theta)

    def rmse(self, pred) -> float:
        """Root mean squared error of predicted test ratings (n_test,) against the held-out ones."""
        return float(np.sqrt(np.mean((np.asarray(pred) - self.test_ratings) ** 2)))

    def truth_rmse(self, pred) -> float:
        """Against the noise-free truth u*_i.v*_j on the test entries (NaN when the truth is unknown)."""
        if self.truth is None:
            return math.nan
        clean = self.predict(self.truth[None], self.test_users, self.test_items)[0] - self.offset
        return float(np.sqrt(np.mean((np.asarray(pred) - self.offset - clean) ** 2)))


def _split(n: int, seed: int, test_fraction: float):
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(test_fraction * n))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def ratings_data(users, items, ratings, n_users: int, n_items: int, rank: int = PMF_RANK,
                 noise_var: float = PMF_NOISE_SD ** 2, prior_var: float | None = None, seed: int = 0,
                 test_fraction: float = PMF_TEST_FRACTION, truth=None, centre: bool = True) -> RatingsData:
    """Observed (user, item, rating) triples as a seeded training/test split; ratings centred by the training
    mean when `centre` (a user's 1-5 stars), not for the synthetic model, whose mean is 0 by construction."""
    users, items, ratings = (np.asarray(a) for a in (users, items, ratings))
    train, test = _split(len(ratings), seed, test_fraction)
    offset = float(ratings[train].mean()) if centre else 0.0
    prior_var = 1.0 / math.sqrt(rank) if prior_var is None else prior_var
    return RatingsData(users[train], items[train], ratings[train] - offset, users[test], items[test],
                       ratings[test].astype(float), n_users, n_items, rank, noise_var, prior_var, offset, truth)


def synthetic_ratings(seed: int = 0, n_users: int = PMF_USERS, n_items: int = PMF_ITEMS, rank: int = PMF_RANK,
                      observed: float = PMF_OBSERVED, noise_sd: float = PMF_NOISE_SD) -> RatingsData:
    rng = np.random.default_rng(seed)
    prior_sd = rank ** -0.25          # u.v then has unit variance
    U = prior_sd * rng.standard_normal((n_users, rank))
    V = prior_sd * rng.standard_normal((n_items, rank))
    users, items = np.nonzero(rng.random((n_users, n_items)) < observed)
    ratings = np.einsum("bk,bk->b", U[users], V[items]) + noise_sd * rng.standard_normal(len(users))
    truth = np.concatenate([U.ravel(), V.ravel()])
    return ratings_data(users, items, ratings, n_users, n_items, rank, noise_sd ** 2, prior_sd ** 2, seed,
                        truth=truth, centre=False)


PMF_FORMULA = (r"U(\theta) = \sum_{(i,j)\ \mathrm{observed}} \frac{(r_{ij} - u_i^\top v_j)^2}{2 s^2}"
               r" + \frac{\|U\|^2 + \|V\|^2}{2\sigma_0^2}")


def pmf_potential(data: RatingsData, name: str, description: str, seed: int = 0) -> Potential:
    # the start: small random factors, as PMF is started (theta = 0 is a saddle: every gradient vanishes there)
    start = 0.1 * np.sqrt(data.prior_var) * np.random.default_rng(10_000 + seed).standard_normal(data.dim)
    return Potential(name, data.dim, data.U, data.grad, ((-3.0, 3.0), (-3.0, 3.0)), description=description,
                     formula=PMF_FORMULA, data=data, start=start)


def pmf(seed: int = 0) -> Potential:
    data = synthetic_ratings(seed)
    return pmf_potential(
        data, "pmf",
        f"Bayesian matrix factorisation (QNHMC paper §5.3): {data.n_users} users x {data.n_items} items, rank "
        f"{data.rank} (d = {data.dim}), {data.n} training and {len(data.test_ratings)} test ratings drawn from the "
        f"model (noise sd {PMF_NOISE_SD:g}, prior N(0, {data.prior_var:.3g} I)); minibatches over observed entries",
        seed)


def csv_pmf(path: str, seed: int = 0, rank: int = PMF_RANK) -> Potential:
    users, items, ratings, n_users, n_items = load_ratings_csv(path)
    data = ratings_data(users, items, ratings, n_users, n_items, rank, seed=seed)
    return pmf_potential(
        data, f"pmf-csv:{path}",
        f"Bayesian matrix factorisation of {path}: {n_users} users x {n_items} items, rank {rank} "
        f"(d = {data.dim}), {data.n} training and {len(data.test_ratings)} test ratings, centred by the training "
        f"mean {data.offset:.3g}; noise sd {PMF_NOISE_SD:g}, prior N(0, {data.prior_var:.3g} I)", seed)


# ----------------------------------------------------------------------------------
# a user's CSV files
# ----------------------------------------------------------------------------------
def _rows(path: str):
    """(line number, cells) of the non-empty lines of a CSV file."""
    try:
        with open(path, newline="") as f:
            rows = [(n, row) for n, row in enumerate(csv.reader(f), start=1) if any(c.strip() for c in row)]
    except OSError as e:
        raise DataFileError(f"cannot read {path}: {e.strerror or e}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise DataFileError(f"{path}: not a text CSV file ({e})") from None
    if not rows:
        raise DataFileError(f"{path}: no data rows")
    return rows


def _number(path, line, col, text, what) -> float:
    try:
        v = float(text)
    except ValueError:
        raise DataFileError(f"{path}, line {line}, column {col}: {what} '{text.strip()[:30]}' is not a number") \
            from None
    if not math.isfinite(v):
        raise DataFileError(f"{path}, line {line}, column {col}: {what} must be finite, got {text.strip()[:30]}")
    return v


def _is_header(cells) -> bool:
    def number(t):
        try:
            float(t)
            return True
        except ValueError:
            return False
    return not any(number(c) for c in cells)


def load_classification_csv(path: str):
    """Rows of p numeric features then a label (any text, two distinct values); an all-text first line is a
    header. Returns x (N, p) and the labels (N,)."""
    rows = _rows(path)
    if _is_header(rows[0][1]):
        rows = rows[1:]
        if not rows:
            raise DataFileError(f"{path}: a header and no data rows")
    width = len(rows[0][1])
    if width < 2:
        raise DataFileError(f"{path}, line {rows[0][0]}: need at least one feature and a label, got {width} column")
    x = np.empty((len(rows), width - 1))
    labels = []
    for r, (line, cells) in enumerate(rows):
        if len(cells) != width:
            raise DataFileError(f"{path}, line {line}: {len(cells)} columns, the first row has {width}")
        x[r] = [_number(path, line, c + 1, t, "feature") for c, t in enumerate(cells[:-1])]
        labels.append(cells[-1].strip())
    values = sorted(set(labels))
    if len(values) != 2:
        shown = ", ".join(v[:20] for v in values[:5])
        raise DataFileError(f"{path}, column {width}: the label needs exactly two distinct values, got "
                            f"{len(values)} ({shown}{', ...' if len(values) > 5 else ''})")
    return x, np.array(labels)


def load_ratings_csv(path: str):
    """Rows user,item,rating (ids any text, rating a finite number); a header line is allowed. Returns user and
    item indices (in order of first appearance), ratings, and the numbers of users and items."""
    rows = _rows(path)
    if _is_header(rows[0][1]):
        rows = rows[1:]
        if not rows:
            raise DataFileError(f"{path}: a header and no data rows")
    user_ids: dict[str, int] = {}
    item_ids: dict[str, int] = {}
    users, items, ratings = [], [], []
    for line, cells in rows:
        if len(cells) != 3:
            raise DataFileError(f"{path}, line {line}: expected 3 columns user,item,rating, got {len(cells)}")
        u, i = cells[0].strip(), cells[1].strip()
        for col, name in ((1, u), (2, i)):
            if not name:
                raise DataFileError(f"{path}, line {line}, column {col}: empty {'user' if col == 1 else 'item'} id")
        ratings.append(_number(path, line, 3, cells[2], "rating"))
        users.append(user_ids.setdefault(u, len(user_ids)))
        items.append(item_ids.setdefault(i, len(item_ids)))
    if len(ratings) < 10:
        raise DataFileError(f"{path}: {len(ratings)} ratings; need at least 10 to hold some out for testing")
    return np.array(users), np.array(items), np.array(ratings), len(user_ids), len(item_ids)


# ----------------------------------------------------------------------------------
# the app's Models page (samplers/targets/live.py): each model with its score and sampler pair
# ----------------------------------------------------------------------------------
# Settings measured on these targets (docs/notes/qnhmc-models.md, "On the Models page"). Logistic regression:
# minibatches of 10 of the 251 images make the gradient noise large, which naive SGHMC (no friction, nothing
# injected: its only diffusion is that noise) turns into heat; SGHMC's friction C removes it. PMF: SGLD against
# SGHMC on minibatches of 400 of the ~4000 ratings; SGHMC needs a friction C of the order eps * B (its B-hat,
# 0 here, left unestimated) or the noise heats its momentum until the chains diverge.
DIGITS_LIVE = dict(batch=10, chains=8, params={"sghmc-naive": {"eps": 0.05, "Bhat": 0.0}, "sghmc": {"eps": 0.05}})
PMF_LIVE = dict(batch=400, chains=4, params={"sgld": {"eps": 1e-3}, "sghmc": {"eps": 0.03, "C": 15.0}})


def digits_live(seed: int = 0, size: str = "default") -> LiveModel:
    """Logistic regression on the digits, scored by the mean test log-likelihood of the chains' averaged
    predictive; the chains start far out (FAR x N(0, I)) so the burn-in shows."""
    pot = digits_logistic(seed)
    data = pot.data

    def metric(theta):
        return classification_scores(data, predictive(data, theta).mean(0))[1]

    def init(chains, rng):
        return 3.0 * rng.standard_normal((chains, pot.dim))

    return LiveModel("logistic-digits", "Logistic regression, digits 7 vs 9", pot, metric,
                     "test log-likelihood", False, ("sghmc-naive", "sghmc"), init=init,
                     description=pot.description + "; the chains start at 3·N(0, I)",
                     **DIGITS_LIVE)


def pmf_live(seed: int = 0, size: str = "default") -> LiveModel:
    """Synthetic PMF, scored by the test RMSE of the chains' averaged predicted ratings."""
    pot = pmf(seed)
    data = pot.data

    def metric(theta):
        return data.rmse(data.predict(theta, data.test_users, data.test_items).mean(0))

    return LiveModel("pmf", "Matrix factorisation (PMF), synthetic ratings", pot, metric, "test RMSE", True,
                     ("sgld", "sghmc"), description=pot.description,
                     **PMF_LIVE)


# the Models page's entries (live.py imports no model module: each registers itself when it is imported, and the
# presets import this one)
LIVE_MODELS["logistic-digits"] = ("Logistic regression, digits 7 vs 9", digits_live)
LIVE_MODELS["pmf"] = ("Matrix factorisation (PMF), synthetic ratings", pmf_live)
