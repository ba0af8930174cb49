"""A user's own data model, p(theta | x) ∝ p(theta) prod_i p(x_i | theta), for notebooks and model files.

`DataModel` takes a data array and numpy callables for one row's log-likelihood and its gradient (and the log prior
and its gradient), vectorised over chains and rows by broadcasting; `DataModel.from_jax` derives the gradients by
JAX (the `jax` extra; the base install does not need it). A model file (`modelfile.py`) makes the same object from
YAML and a CSV, its gradients derived by sympy. `potential()` gives the posterior as a `Potential` whose `data` is
the model itself, so `gradients.Minibatch` (and every estimator built on its protocol: `n`, `example_grads`,
`example_losses`, `prior_U`, `prior_grad`) draws real minibatches of it; with one or two parameters the exact
posterior is normalised on a grid over a box fitted to where its mass is. docs/models.md is the user's guide.

Shapes: theta (chains, d); a row batch idx (chains, b). The callables see theta as (chains, 1, d) and the rows as
(chains, b, k) (or (1, r, k) when the whole data set is summed), and return (chains, b) log-likelihoods and
(chains, b, d) gradients: write them with `theta[..., j]` and `x[..., m]` and they broadcast.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

from samplers.targets.potential import NotIntegrable, Potential, PotentialError

MAX_CELLS = 1_000_000       # chains x rows evaluated at once when the whole data set is summed


class DataModel:
    """The minibatch protocol over a user's callables (see the module docstring for their shapes).

    loglik(theta, x) -> (chains, b); loglik_grad(theta, x) -> (chains, b, d); logprior(theta) -> (chains,);
    logprior_grad(theta) -> (chains, d). `names` names the d parameters (the plotted ones first)."""

    def __init__(self, x, loglik: Callable, loglik_grad: Callable, logprior: Callable, logprior_grad: Callable,
                 names=None, dim: int | None = None):
        x = np.asarray(x, float)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or len(x) < 1:
            raise PotentialError(f"the data must be an array of rows (N, columns), got shape {x.shape}")
        if not np.isfinite(x).all():
            raise PotentialError("the data hold NaN or infinite values")
        self.x = x
        self.loglik, self.loglik_grad = loglik, loglik_grad
        self.logprior, self.logprior_grad = logprior, logprior_grad
        if names is None and dim is None:
            raise PotentialError("name the parameters (names=[...]) or give their number (dim=...)")
        self.names = tuple(names) if names is not None else tuple(f"theta{i + 1}" for i in range(dim))
        self.dim = len(self.names)

    @classmethod
    def from_jax(cls, x, loglik, logprior, names=None, dim=None) -> DataModel:
        """Gradients by JAX's autodiff: loglik(theta, x_row) -> a scalar, for one parameter vector (d,) and one row
        (k,), written with jax.numpy; logprior(theta) -> a scalar. Both are vectorised by jax.vmap and compiled
        once. Needs the `jax` extra (`pip install -e '.[jax]'`)."""
        try:
            import jax
            import jax.numpy as jnp
        except ImportError:
            raise PotentialError("DataModel.from_jax needs JAX: pip install -e '.[jax]'") from None
        jax.config.update("jax_enable_x64", True)
        # rows inside a batch, then batches of chains: (chains, b, d) x (chains, b, k) -> (chains, b)
        row = jax.vmap(jax.vmap(loglik, in_axes=(None, 0)), in_axes=(0, 0))
        row_grad = jax.vmap(jax.vmap(jax.grad(loglik), in_axes=(None, 0)), in_axes=(0, 0))
        prior = jax.jit(jax.vmap(logprior))
        prior_grad = jax.jit(jax.vmap(jax.grad(logprior)))
        row, row_grad = jax.jit(row), jax.jit(row_grad)

        def batched(fn):
            def call(theta, xb):
                theta = jnp.asarray(theta[:, 0, :])
                xb = jnp.broadcast_to(jnp.asarray(xb), (theta.shape[0],) + xb.shape[1:])
                return np.asarray(fn(theta, xb))
            return call
        return cls(x, batched(row), batched(row_grad), lambda t: np.asarray(prior(jnp.asarray(t))),
                   lambda t: np.asarray(prior_grad(jnp.asarray(t))), names, dim)

    # -- the minibatch protocol (gradients.Minibatch) --------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.x)

    def _take(self, idx):
        return self.x[idx]

    def example_grads(self, theta, idx):
        """Gradients of -log p(x_i | theta) for rows idx (chains, b): (chains, b, d)."""
        g = self.loglik_grad(theta[:, None, :], self._take(idx))
        return -np.broadcast_to(g, idx.shape + (self.dim,))

    def example_losses(self, theta, idx):
        return -np.broadcast_to(self.loglik(theta[:, None, :], self._take(idx)), idx.shape)

    def prior_U(self, theta):
        return -np.broadcast_to(self.logprior(theta), theta.shape[:1])

    def prior_grad(self, theta):
        return -np.broadcast_to(self.logprior_grad(theta), theta.shape)

    # -- the whole data set ----------------------------------------------------------------------------------
    def _blocks(self, chains: int):
        step = max(1, MAX_CELLS // max(chains, 1))
        for lo in range(0, self.n, step):
            yield np.arange(lo, min(lo + step, self.n))[None, :]

    def U(self, theta):
        theta = np.asarray(theta, float)
        with np.errstate(all="ignore"):
            out = self.prior_U(theta).astype(float)
            for rows in self._blocks(len(theta)):
                out = out - np.broadcast_to(self.loglik(theta[:, None, :], self._take(rows)),
                                            (len(theta), rows.shape[1])).sum(1)
        return out

    def grad(self, theta):
        theta = np.asarray(theta, float)
        with np.errstate(all="ignore"):
            out = self.prior_grad(theta).astype(float)
            for rows in self._blocks(len(theta)):
                out = out - np.broadcast_to(self.loglik_grad(theta[:, None, :], self._take(rows)),
                                            (len(theta), rows.shape[1], self.dim)).sum(1)
        return out

    def potential(self, name: str = "data model", description: str = "", formula: str = "", box=None,
                  start=None) -> Potential:
        """The posterior as a Potential, started at its mode. With one or two parameters its exact law is
        normalised on a grid over `box`, by default fitted to where the mass is (PotentialError if exp(-U) has
        not decayed at the edge of the box, or U is not finite inside it)."""
        return model_potential(self, name, description, formula, box, start)


def find_mode(model: DataModel, start=None) -> tuple[np.ndarray, np.ndarray]:
    """The posterior mode from `start` (default zeros) by L-BFGS, and the posterior sd there from the Hessian of U
    by finite differences of its gradient (1 where the Hessian is not positive definite)."""
    d = model.dim
    x0 = np.zeros(d) if start is None else np.asarray(start, float).reshape(d)

    def f(t):
        return float(model.U(t[None])[0])

    def g(t):
        return model.grad(t[None])[0]
    u0 = f(x0)
    if not np.isfinite(u0) or not np.isfinite(g(x0)).all():
        raise PotentialError(f"U or its gradient is not finite at the start ({', '.join(f'{v:g}' for v in x0)}): "
                             "give a start where the log-likelihood and the prior are finite")
    res = optimize.minimize(f, x0, jac=g, method="L-BFGS-B")
    mode = res.x if np.isfinite(res.fun) and res.fun <= u0 else x0
    h = 1e-5 * np.maximum(1.0, np.abs(mode))
    pts = np.concatenate([mode + np.diag(h), mode - np.diag(h)])
    gs = model.grad(pts)
    hess = (gs[:d] - gs[d:]) / (2 * h[:, None])
    hess = 0.5 * (hess + hess.T)
    try:
        cov = np.linalg.inv(hess)
        sd = np.sqrt(np.diag(cov)) if np.all(np.linalg.eigvalsh(hess) > 0) else np.ones(d)
    except np.linalg.LinAlgError:
        sd = np.ones(d)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    return mode, sd


def _nice(lo: float, hi: float) -> tuple[float, float]:
    """lo, hi padded by a twentieth and rounded outward to a step a twentieth of the width, to one digit."""
    pad = 0.05 * (hi - lo)
    step = 10.0 ** np.floor(np.log10(max(hi - lo, 1e-12) / 20))
    lo, hi = step * np.floor((lo - pad) / step), step * np.ceil((hi + pad) / step)
    return float(np.round(lo, 12)), float(np.round(hi, 12))


def model_potential(model: DataModel, name: str, description: str = "", formula: str = "", box=None,
                    start=None) -> Potential:
    d = model.dim
    mode, sd = find_mode(model, start)

    def build(b, **kw):
        return Potential(name, d, model.U, model.grad, tuple(tuple(map(float, s)) for s in b),
                         description=description, formula=formula, data=model, start=mode.copy(), **kw)

    if box is not None:
        return build(box).normalise() if d <= 2 else build(box)
    if d > 2:
        return build([(m - 6 * s, m + 6 * s) for m, s in zip(mode[:2], sd[:2])])
    # a search box wide enough to hold a second mode a dozen sds away, widened until exp(-U) decays inside it;
    # then the box where the density is above 1e-5 of its peak
    half = 12 * sd
    for _ in range(4):
        search = build([(m - h, m + h) for m, h in zip(mode, half)])
        try:
            search.normalise()
            break
        except NotIntegrable:
            half = 2 * half
    else:
        raise PotentialError(f"exp(-U) has not decayed within {', '.join(f'{h:.3g}' for h in half / 2)} of the mode "
                             f"({', '.join(f'{m:.3g}' for m in mode)}): is the posterior proper?")
    axes, u = search._u_grid
    keep = (u - u.min()) <= np.log(1e5)
    fitted = []
    for k, a in enumerate(axes):
        hit = np.flatnonzero(keep.any(axis=tuple(j for j in range(d) if j != k)))
        fitted.append(_nice(a[max(hit[0] - 1, 0)], a[min(hit[-1] + 1, len(a) - 1)]))
    return build(fitted).normalise()
