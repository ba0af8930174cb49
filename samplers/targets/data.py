"""A data posterior with real minibatches: Bayesian logistic regression with two weights.

U(w) = -sum_i log sigmoid(y_i x_i.w) + |w|^2 / (2 prior_var), y_i in {-1, +1}.
The full-data U gives the exact density on a grid; the minibatch gradient in
`gradients.Minibatch` uses the per-example terms below.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from samplers.targets.potential import Potential


@dataclass
class LogisticData:
    x: np.ndarray          # (N, 2)
    y: np.ndarray          # (N,) in {-1, +1}
    prior_var: float

    @property
    def n(self) -> int:
        return len(self.y)

    def example_grads(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Gradients of -log p(y_i | x_i, w) for examples idx (chains, b) at w (chains, 2): (chains, b, 2)."""
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


def logistic(n: int = 500, seed: int = 7) -> Potential:
    data = make_logistic_data(n, seed)

    def U(w):
        m = data.y[None, :] * (w @ data.x.T)
        return -log_expit(m).sum(1) + data.prior_U(w)

    def grad(w):
        m = data.y[None, :] * (w @ data.x.T)
        return -(data.y[None, :] * expit(-m)) @ data.x + data.prior_grad(w)

    # a box of +-6 posterior sd around the mode (found with a few Newton steps)
    w = np.zeros((1, 2))
    for _ in range(30):
        p = expit(data.x @ w[0])
        hess = (data.x.T * (p * (1 - p))) @ data.x + np.eye(2) / data.prior_var
        w = w - np.linalg.solve(hess, grad(w)[0])[None]
    sd = np.sqrt(np.diag(np.linalg.inv(hess)))
    box = tuple((float(c - 6 * s), float(c + 6 * s)) for c, s in zip(w[0], sd))
    return Potential(
        "logistic", 2, U, grad, box,
        description=f"Bayesian logistic regression, 2 weights, N = {n} synthetic points, prior N(0, 10 I); "
                    "supports real minibatch gradients",
        formula=r"U(w) = -\sum_{i=1}^N \log\sigma(y_i x_i^\top w) + \frac{|w|^2}{20}",
        data=data, start=w[0].copy())

