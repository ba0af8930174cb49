"""Stochastic gradients: what a sampler sees in place of grad U.

An oracle is called as `oracle(theta, rng, value=False)` and returns (u, g): u is the
estimate of U(theta) (None unless asked for: only state-dependent metrics need it), g the
estimate of grad U(theta), both per chain. `oracle.bhat(theta)` is its estimate of the
gradient-noise covariance V, the B-hat of Eq. (9). Every oracle draws its randomness from
the rng it is given, in a fixed order, so two samplers handed equal generators see equal
gradients.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize

from samplers.errors import InputError
from samplers.targets.potential import Potential


class GradientError(InputError):
    pass


def add_in_order(a: np.ndarray, b: np.ndarray) -> None:
    """a += b, iterated in a's own memory order. The noise is drawn row-major; added in numpy's own order to a
    column-major a (a blockwise state's columns, samplers.run) it ran an inner loop over the d columns: 13 us at 10^3
    chains and d = 2, 2.4 in a's order. The same sums either way."""
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        np.add(a, b, out=a, order="F")
    else:
        a += b


class ExactGradient:
    """Full-data gradient: no noise, no random draws."""
    noisy = False
    scalar_bhat = True   # its B-hat is one number (fast paths need that)
    constant_bhat = True   # and the same at every theta: a prepared step reads it once (families.common.fixed_bhat)
    blockwise = True     # keeps no state between calls: chain blocks may call it on threads

    def __init__(self, potential: Potential):
        self.potential = potential

    def __call__(self, theta, rng, value=False):
        return (self.potential.U(theta) if value else None), self.potential.grad(theta)

    def bhat(self, theta):
        return 0.0

    def gradient(self):
        """(theta, rng) -> grad U~, the call without U for a prepared step (samplers.families.common)."""
        grad = self.potential.grad
        return lambda theta, rng: grad(theta)

    def value_gradient(self):
        """(theta, rng) -> (U, grad U), the call with U for a prepared step."""
        U, grad = self.potential.U, self.potential.grad
        return lambda theta, rng: (U(theta), grad(theta))

    def describe(self) -> str:
        return "exact gradient"


class SimulatedNoise(ExactGradient):
    """grad U~ = grad U + N(0, V), Eq. (8); V a scalar (times I) or a (d, d) covariance."""
    noisy = True
    # HMC's leapfrog asks again at every half-kick when set (Chen et al.'s Fig. 1 code; families/hmc.py)
    fresh_half_kicks = False

    def __init__(self, potential: Potential, V=1.0):
        super().__init__(potential)
        V = np.asarray(V, float)
        d = potential.dim
        if V.ndim == 0:
            if not np.isfinite(V) or V < 0:
                raise GradientError(f"gradient-noise variance V must be a finite number >= 0, got {float(V)}")
            self._scale = np.sqrt(float(V))
        elif V.shape == (d, d):
            if not np.allclose(V, V.T) or np.linalg.eigvalsh(V).min() < -1e-12:
                raise GradientError("gradient-noise covariance V must be symmetric positive semidefinite")
            w, vecs = np.linalg.eigh(V)
            self._scale = (vecs * np.sqrt(np.clip(w, 0, None))).T   # rows: z @ scale has covariance V
        else:
            raise GradientError(f"V must be a scalar or a {d}x{d} matrix, got shape {V.shape}")
        self.V = V
        self.scalar_bhat = V.ndim == 0

    def __call__(self, theta, rng, value=False):
        u, g = (self.potential.U(theta) if value else None), self.potential.grad(theta)   # ExactGradient's
        noise = rng.standard_normal(theta.shape)
        if not self.scalar_bhat:
            g += noise @ self._scale
        else:
            if self._scale != 1.0:   # V = 1, the benchmarks' case, needs no pass
                noise *= self._scale
            add_in_order(g, noise)
        return u, g

    def gradient(self):
        """As `__call__` without U, in one Python call (at 10^3 chains a step is mostly Python)."""
        if not self.scalar_bhat:
            return lambda theta, rng: self(theta, rng)[1]
        grad, scale, unit = self.potential.grad, self._scale, self._scale == 1.0

        def noisy(theta, rng):
            g = grad(theta)
            noise = rng.standard_normal(theta.shape)
            if not unit:
                noise *= scale
            add_in_order(g, noise)
            return g
        return noisy

    def value_gradient(self):
        """As `__call__` with U, in one Python call."""
        if not self.scalar_bhat:
            return lambda theta, rng: self(theta, rng, value=True)
        U, noisy = self.potential.U, self.gradient()
        return lambda theta, rng: (U(theta), noisy(theta, rng))

    def bhat(self, theta):
        return self.V if self.V.ndim else float(self.V)

    def describe(self) -> str:
        return f"grad U + N(0, V), V = {self.V.tolist()}"


SAMPLING = ("replace", "epochs")


class Minibatch:
    """Real minibatch gradients of a data posterior, Eq. (7): (N/n) sum over a batch of n examples.

    sampling="replace": each chain draws its own batch, with replacement, every call. sampling="epochs": each
    chain walks through a permutation of the data of its own, n examples a call, and draws a new one when fewer
    than n are left (an epoch; the remainder waits for a later epoch). Either way each batch is, marginally, a
    uniform draw, so the estimate is unbiased.

    B-hat is the batch's estimate of the covariance of the stochastic gradient, (N^2/n) Cov_i(grad l_i), times
    the finite-population factor (N - n)/N without replacement (Cochran 1977, "Sampling techniques", Thm 2.2).

    A data set whose per-example gradients would not fit, (chains, n, d) for d in the thousands (the matrix
    factorisation), gives the batch's sum directly (`data.batch_grad`); it has no B-hat.

    per="proposal": one batch per HMC/QNHMC proposal, drawn when the proposal starts (`start_proposal`) and
    shared by its L + 1 gradients. The leapfrog then follows one sub-posterior U_S, whose map is reversible and
    volume preserving for that S, so the Metropolis test with the exact U keeps the kernel exact; and
    QNHMC's curvature pairs are differences of one function's gradients, which it can learn from
    (`consistent_pairs`), unlike differences of two independent batches.

    `evaluations` counts per-example gradients computed per chain (setup included): the currency in which
    estimators are compared (benchmarks/sgld_cv.py).
    """
    noisy = True
    scalar_bhat = False
    blockwise = False    # it keeps the last batch (B-hat), a proposal's batch and an epoch's permutation
    PER = ("call", "proposal")
    name = "minibatch"

    def __init__(self, potential: Potential, batch: int, per: str = "call", sampling: str = "replace"):
        data = potential.data
        if data is None:
            raise GradientError(f"potential '{potential.name}' has no data: minibatches need a data posterior")
        if not 1 <= int(batch) <= data.n:
            raise GradientError(f"batch size must be between 1 and N = {data.n}, got {batch}")
        if per not in self.PER:
            raise GradientError(f"per must be one of {', '.join(self.PER)}, got {per!r}")
        if sampling not in SAMPLING:
            raise GradientError(f"sampling must be one of {', '.join(SAMPLING)}, got {sampling!r}")
        self.potential, self.data, self.batch, self.sampling = potential, data, int(batch), sampling
        self.consistent_pairs = per == "proposal"
        self._last = None
        self._fixed = None
        self._perm, self._pos = None, 0
        self.evaluations = 0

    def start_proposal(self, chains: int, rng):
        """A proposal begins: with per="proposal", draw the batch its gradients share."""
        if self.consistent_pairs:
            self._fixed = self._draw(chains, rng)

    def _draw(self, chains: int, rng) -> np.ndarray:
        """(chains, n) example indices: one batch per chain."""
        n_data, n = self.data.n, self.batch
        if self.sampling == "replace":
            return rng.integers(0, n_data, size=(chains, n))
        if self._perm is None or self._perm.shape[0] != chains or self._pos + n > n_data:
            # every chain's own permutation, in one call (numpy shuffles the rows in C)
            self._perm = rng.permuted(np.broadcast_to(np.arange(n_data), (chains, n_data)), axis=1)
            self._pos = 0
        idx = self._perm[:, self._pos: self._pos + n]
        self._pos += n
        return idx

    def _indices(self, chains: int, rng) -> np.ndarray:
        return self._fixed if self._fixed is not None else self._draw(chains, rng)

    def __call__(self, theta, rng, value=False):
        data, n = self.data, self.batch
        idx = self._indices(theta.shape[0], rng)
        scale = data.n / n
        self.evaluations += n
        if getattr(data, "latent", False):      # latent variables (LDA's topics) are drawn from this rng too
            g = scale * data.batch_grad(theta, idx, rng) + data.prior_grad(theta)
        elif hasattr(data, "batch_grad"):
            g = scale * data.batch_grad(theta, idx) + data.prior_grad(theta)
        else:
            per = data.example_grads(theta, idx)
            self._last = per
            g = scale * per.sum(1) + data.prior_grad(theta)
        u = scale * data.example_losses(theta, idx).sum(1) + data.prior_U(theta) if value else None
        return u, g

    def bhat(self, theta):
        """Per-chain covariance estimate from the last batch drawn: (chains, d, d)."""
        if hasattr(self.data, "batch_grad"):
            raise GradientError(f"'{self.potential.name}' has no B-hat estimate: a (d, d) covariance per chain "
                                f"does not fit for d = {self.potential.dim}; set Bhat to a number")
        if self._last is None or self.batch < 2:
            return 0.0
        per = self._last - self._last.mean(1, keepdims=True)
        cov = np.einsum("cbi,cbj->cij", per, per) / (self.batch - 1)
        n_data = self.data.n
        fpc = (n_data - self.batch) / n_data if self.sampling == "epochs" else 1.0
        return cov * n_data ** 2 / self.batch * fpc

    def _sampling_text(self) -> str:
        each = ", one batch per proposal" if self.consistent_pairs else ""
        how = ", without replacement (epochs)" if self.sampling == "epochs" else ""
        return f"minibatch of {self.batch} of N = {self.data.n}{how}{each}"

    def describe(self) -> str:
        return self._sampling_text()


class _Differenced(Minibatch):
    """Minibatch gradients of differences against anchor points: G(anchor) + (N/n) sum_S [grad l_i(theta) -
    grad l_i(anchor)] + grad prior(theta), G the full likelihood gradient at the anchor. Unbiased for any anchor;
    its noise is the batch's spread of the differences, small while theta stays near the anchor."""

    def _check(self):
        if getattr(self.data, "latent", False):
            raise GradientError(f"'{self.potential.name}' draws latent variables in its minibatch gradient: "
                                f"{self.name} needs per-example gradients of the data alone")

    def _anchor_terms(self, theta, idx, value):
        """(anchor's full likelihood gradient (chains or 1, d), the batch's anchor gradients (chains, n, d) or
        their sum (chains, d), the anchor's full likelihood loss, the batch's anchor losses)."""
        raise NotImplementedError

    def __call__(self, theta, rng, value=False):
        data, n = self.data, self.batch
        idx = self._indices(theta.shape[0], rng)
        scale = data.n / n
        g_full, g_anchor, u_full, u_anchor = self._anchor_terms(theta, idx, value)
        if hasattr(data, "batch_grad"):
            diff_sum = data.batch_grad(theta, idx) - g_anchor
        else:
            diff = data.example_grads(theta, idx) - g_anchor
            self._last = diff
            diff_sum = diff.sum(1)
        g = g_full + scale * diff_sum + data.prior_grad(theta)
        u = None
        if value:
            u = u_full + scale * (data.example_losses(theta, idx) - u_anchor).sum(1) + data.prior_U(theta)
        return u, g


class ControlVariate(_Differenced):
    """Control variates about the posterior mode (Baker, Fearnhead, Fox & Nemeth 2019, "Control variates for
    stochastic gradient MCMC", Statistics and Computing 29, Eq. (3)): the anchor is one point, the mode found
    once by scipy.optimize (L-BFGS-B on the full U), where every example's gradient is kept (an (N, d) table),
    so a call costs n per-example gradients, as a plain minibatch's. SGLD and SGHMC with it are SGLD-CV and
    SGHMC-CV. The setup (the optimiser's full-data passes and the table) is counted in `evaluations`.

    mode: the anchor to use instead of searching for one (any point keeps the estimate unbiased); start: where
    the search starts (default the potential's start, which for the data posteriors is already their mode)."""
    name = "cv"
    MAX_TABLE = 50_000_000     # entries of the (N, d) table of the mode's per-example gradients

    def __init__(self, potential: Potential, batch: int, per: str = "call", sampling: str = "replace",
                 mode=None, start=None):
        super().__init__(potential, batch, per, sampling)
        self._check()
        data = self.data
        if mode is None:
            mode, passes = find_mode(potential, start)
        else:
            mode, passes = np.asarray(mode, float).reshape(potential.dim), 0
        self.mode, self.optimiser_passes = mode, passes
        m = mode[None]
        self._g_full = potential.grad(m) - data.prior_grad(m)          # (1, d): the likelihood part
        self._u_full = potential.U(m) - data.prior_U(m)
        self._table = self._losses = None
        if not hasattr(data, "batch_grad") and data.n * potential.dim <= self.MAX_TABLE:
            everything = np.arange(data.n)[None]
            self._table = data.example_grads(m, everything)[0]          # (N, d)
            self._losses = data.example_losses(m, everything)[0]
        self.evaluations = (passes + 1) * data.n

    def _anchor_terms(self, theta, idx, value):
        chains = theta.shape[0]
        self.evaluations += self.batch
        if self._table is not None:
            return self._g_full, self._table[idx], self._u_full, (self._losses[idx] if value else None)
        m = np.broadcast_to(self.mode, (chains, self.mode.size))
        self.evaluations += self.batch      # the anchor's batch gradients, again each call
        g_anchor = self.data.batch_grad(m, idx) if hasattr(self.data, "batch_grad") else \
            self.data.example_grads(m, idx)
        return self._g_full, g_anchor, self._u_full, (self.data.example_losses(m, idx) if value else None)

    def describe(self) -> str:
        return f"control variates about the mode, {self._sampling_text()}"


class SVRG(_Differenced):
    """Stochastic variance-reduced gradients (Dubey, Reddi, Póczos, Smola, Xing & Williamson 2016, "Variance
    reduction in stochastic gradient Langevin dynamics", NeurIPS, SVRG-LD): each chain's anchor is its own state,
    taken afresh every `epoch` calls (default N/n, one pass of the data) with a full-data gradient there; between,
    each call costs 2n per-example gradients (at theta and at the anchor)."""
    name = "svrg"

    def __init__(self, potential: Potential, batch: int, per: str = "call", sampling: str = "replace",
                 epoch: int | None = None):
        super().__init__(potential, batch, per, sampling)
        self._check()
        self.epoch = max(1, self.data.n // self.batch) if epoch is None else int(epoch)
        if self.epoch < 1:
            raise GradientError(f"the SVRG epoch must be >= 1 call, got {epoch}")
        self._anchor = None
        self._calls = 0

    def _anchor_terms(self, theta, idx, value):
        data = self.data
        if self._anchor is None or self._anchor.shape != theta.shape or self._calls % self.epoch == 0:
            self._anchor = np.array(theta, float)
            self._g_full = self.potential.grad(self._anchor) - data.prior_grad(self._anchor)
            self._u_full = self.potential.U(self._anchor) - data.prior_U(self._anchor)
            self.evaluations += data.n
        self._calls += 1
        self.evaluations += 2 * self.batch
        a = self._anchor
        g_anchor = data.batch_grad(a, idx) if hasattr(data, "batch_grad") else data.example_grads(a, idx)
        return self._g_full, g_anchor, self._u_full, (data.example_losses(a, idx) if value else None)

    def describe(self) -> str:
        return f"SVRG, anchors renewed every {self.epoch} calls, {self._sampling_text()}"


def find_mode(potential: Potential, start=None) -> tuple[np.ndarray, int]:
    """The mode of exp(-U) by L-BFGS-B from `start` (default the potential's, else 0), and the full-data passes
    it took."""
    start = potential.start if start is None else start
    x0 = np.zeros(potential.dim) if start is None else np.asarray(start, float).reshape(potential.dim)

    def fun(x):
        x = x[None]
        return float(potential.U(x)[0]), potential.grad(x)[0]

    res = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B")
    if not np.all(np.isfinite(res.x)):
        raise GradientError(f"no mode found for '{potential.name}' ({res.message})")
    return res.x, int(res.nfev)


ESTIMATORS = {"minibatch": Minibatch, "cv": ControlVariate, "svrg": SVRG}


def estimator_names() -> list[str]:
    return list(ESTIMATORS)


def make_oracle(potential: Potential, V=None, batch=None, estimator: str | None = None, sampling: str = "replace",
                **options):
    """The gradient oracle: exact, simulated noise of variance V, or a minibatch estimator by name
    (`ESTIMATORS`: minibatch, cv, svrg) drawing `batch` examples a call with replacement or in epochs."""
    if batch is not None and V not in (None, 0, 0.0):
        raise GradientError("choose either simulated gradient noise V or a minibatch size, not both")
    if estimator is not None and estimator not in ESTIMATORS:
        raise GradientError(f"unknown gradient estimator '{estimator}' (choose from {', '.join(ESTIMATORS)})")
    if batch is not None:
        return ESTIMATORS[estimator or "minibatch"](potential, batch, sampling=sampling, **options)
    if estimator not in (None, "minibatch") or sampling != "replace":
        raise GradientError(f"the '{estimator or sampling}' estimator draws minibatches: give a batch size")
    if V is None or (np.ndim(V) == 0 and float(V) == 0.0):
        return ExactGradient(potential)
    return SimulatedNoise(potential, V)
