"""A data posterior with real minibatches: Bayesian logistic regression (two weights here; any number of
features through `logistic_potential`, which models.py uses for the digits and a user's CSV).

U(w) = -sum_i log sigmoid(y_i x_i.w) + |w|^2 / (2 prior_var), y_i in {-1, +1}.
The full-data U gives the exact density on a grid (two weights); the minibatch gradient in
`gradients.Minibatch` uses the per-example terms below.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from samplers.targets.potential import Potential


@dataclass
class LogisticData:
    x: np.ndarray          # (N, d)
    y: np.ndarray          # (N,) in {-1, +1}
    prior_var: float
    x_test: np.ndarray | None = None   # a held-out split, where the data set has one (models.py)
    y_test: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.y)

    def example_grads(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Gradients of -log p(y_i | x_i, w) for examples idx (chains, b) at w (chains, d): (chains, b, d)."""
        xb, yb = self.x[idx], self.y[idx]
        m = yb * np.einsum("cbk,ck->cb", xb, w)
        return -(yb * expit(-m))[..., None] * xb

    def example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        xb, yb = self.x[idx], self.y[idx]
        return -log_expit(yb * np.einsum("cbk,ck->cb", xb, w))

    def prior_U(self, w):
        return 0.5 * (w ** 2).sum(-1) / self.prior_var

    def prior_grad(self, w):
        return w / self.prior_var


def make_logistic_data(n: int = 500, seed: int = 7, w_true=(1.0, -1.0), prior_var: float = 10.0) -> LogisticData:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    y = np.where(rng.random(n) < expit(x @ np.asarray(w_true)), 1.0, -1.0)
    return LogisticData(x, y, prior_var)


def make_regression_data(n: int, features: int, seed: int, prior_var: float = 10.0, test: int = 2000
                         ) -> LogisticData:
    """n points of `features` standard normal features, labels drawn from the model at weights that are
    themselves standard normal draws, and `test` held-out points drawn after them: all from one seed."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(features)

    def draw(m):
        x = rng.standard_normal((m, features))
        return x, np.where(rng.random(m) < expit(x @ w_true), 1.0, -1.0)

    x, y = draw(n)
    x_test, y_test = draw(test)
    return LogisticData(x, y, prior_var, x_test, y_test)


def logistic_potential(data: LogisticData, name: str, description: str, formula: str) -> Potential:
    """The posterior of `data` as a Potential, started at its mode, with a box of +-6 posterior sd about the
    mode on the first two weights (the plotted ones)."""
    def U(w):
        m = data.y[None, :] * (w @ data.x.T)
        return -log_expit(m).sum(1) + data.prior_U(w)

    def grad(w):
        m = data.y[None, :] * (w @ data.x.T)
        return -(data.y[None, :] * expit(-m)) @ data.x + data.prior_grad(w)

    # the mode by a few Newton steps; the inverse Hessian there gives the box's scale
    d = data.x.shape[1]
    w = np.zeros((1, d))
    for _ in range(30):
        p = expit(data.x @ w[0])
        hess = (data.x.T * (p * (1 - p))) @ data.x + np.eye(d) / data.prior_var
        w = w - np.linalg.solve(hess, grad(w)[0])[None]
    sd = np.sqrt(np.diag(np.linalg.inv(hess)))
    box = tuple((float(c - 6 * s), float(c + 6 * s)) for c, s in zip(w[0][:2], sd[:2]))
    return Potential(name, d, U, grad, box, description=description, formula=formula, data=data,
                     start=w[0].copy())


def logistic(n: int = 500, seed: int = 7) -> Potential:
    return logistic_potential(
        make_logistic_data(n, seed), "logistic",
        f"Bayesian logistic regression, 2 weights, N = {n} synthetic points, prior N(0, 10 I); "
        "supports real minibatch gradients",
        r"U(w) = -\sum_{i=1}^N \log\sigma(y_i x_i^\top w) + \frac{|w|^2}{20}")


REGRESSION_SEED = 2019


def logistic_5d(n: int = 10_000, features: int = 5, seed: int = REGRESSION_SEED) -> Potential:
    """The control-variate benchmark's posterior (benchmarks/sgld_cv.py): five weights, 10^4 points."""
    return logistic_potential(
        make_regression_data(n, features, seed), "logistic-5d",
        f"Bayesian logistic regression, {features} weights, N = {n} synthetic points (seed {seed}), prior N(0, 10 I); "
        "supports real minibatch gradients; scored against a cached HMC reference",
        r"U(w) = -\sum_{i=1}^N \log\sigma(y_i x_i^\top w) + \frac{|w|^2}{20}")


# The Models page's pair: SGLD against SGLD-CV at one step size, where SGLD's gradient noise is ~ the injected
# noise's size (eps in units of the posterior's smallest variance; benchmarks/sgld_cv.py scans them)
LIVE_EPS = 0.3
LIVE_BATCH = 100
LIVE_CHAINS = 100
LIVE_SIZES = {"default": 10_000, "small": 1000}     # training points


def expected_test_loss(data: LogisticData):
    """The held-out log loss (nats per point) of each chain's weights, averaged over the chains: the expected loss
    under the law the chains sample. Baker et al. (2019, Fig. 1) score their samplers by test log loss; taken per
    chain, it grows with the spread a noisy gradient adds to the law (by tr(H Cov) / 2 to second order), which the
    averaged predictive would mostly hide."""
    def metric(theta):
        m = data.y_test[None, :] * (np.asarray(theta, float) @ data.x_test.T)
        return float(-log_expit(m).mean())
    return metric


def live_fields(seed: int = 0, size: str = "default") -> dict:
    """The Models page's `LiveModel` fields for the control-variate pair (targets/live.py builds it)."""
    if size not in LIVE_SIZES:
        raise ValueError(f"size must be one of {', '.join(LIVE_SIZES)}, got {size!r}")
    n = LIVE_SIZES[size]
    pot = logistic_5d(n, seed=REGRESSION_SEED + seed)
    data = pot.data
    p = expit(data.x @ pot.start)
    hess = (data.x.T * (p * (1 - p))) @ data.x + np.eye(pot.dim) / data.prior_var
    eps = LIVE_EPS / float(np.linalg.eigvalsh(hess).max())       # the smallest posterior variance, by Laplace
    return dict(
        key="logistic-cv", title="Logistic regression: SGLD against SGLD-CV (Baker et al. 2019)", potential=pot,
        metric=expected_test_loss(data), metric_name="held-out log loss (nats per point, averaged over chains)",
        lower_is_better=True, pair=("sgld", "sgld-cv"), params={"sgld": {"eps": eps}, "sgld-cv": {"eps": eps}},
        batch=LIVE_BATCH, chains=LIVE_CHAINS,
        init=lambda chains, rng: pot.start + np.sqrt(eps) * rng.standard_normal((chains, pot.dim)),
        description=f"{pot.description}; both samplers take minibatches of {LIVE_BATCH} at the same step size, "
        "SGLD-CV's gradients centred on the mode (control variates)")
