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

from samplers.errors import InputError
from samplers.targets.potential import Potential


class GradientError(InputError):
    pass


class ExactGradient:
    """Full-data gradient: no noise, no random draws."""
    noisy = False
    scalar_bhat = True   # its B-hat is one number (fast paths need that)
    blockwise = True     # keeps no state between calls: chain blocks may call it on threads

    def __init__(self, potential: Potential):
        self.potential = potential

    def __call__(self, theta, rng, value=False):
        return (self.potential.U(theta) if value else None), self.potential.grad(theta)

    def bhat(self, theta):
        return 0.0

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
        u, g = super().__call__(theta, rng, value)
        noise = rng.standard_normal(theta.shape)
        if not self.scalar_bhat:
            g += noise @ self._scale
        else:
            if self._scale != 1.0:   # V = 1, the benchmarks' case, needs no pass
                noise *= self._scale
            g += noise
        return u, g

    def bhat(self, theta):
        return self.V if self.V.ndim else float(self.V)

    def describe(self) -> str:
        return f"grad U + N(0, V), V = {self.V.tolist()}"


class Minibatch:
    """Real minibatch gradients of a data posterior, Eq. (7): (N/n) sum over a batch of n examples.

    Each chain draws its own batch, with replacement, every call. B-hat is the batch's
    estimate of the covariance of the stochastic gradient, (N^2/n) Cov_i(grad l_i).

    A data set whose per-example gradients would not fit, (chains, n, d) for d in the thousands (the matrix
    factorisation), gives the batch's sum directly (`data.batch_grad`); it has no B-hat.

    per="proposal": one batch per HMC/QNHMC proposal, drawn when the proposal starts (`start_proposal`) and
    shared by its L + 1 gradients. The leapfrog then follows one sub-posterior U_S, whose map is reversible and
    volume preserving for that S, so the Metropolis test with the exact U keeps the kernel exact; and
    QNHMC's curvature pairs are differences of one function's gradients, which it can learn from
    (`consistent_pairs`), unlike differences of two independent batches.
    """
    noisy = True
    scalar_bhat = False
    blockwise = False    # it keeps the last batch (B-hat) and a proposal's batch between calls
    PER = ("call", "proposal")

    def __init__(self, potential: Potential, batch: int, per: str = "call"):
        data = potential.data
        if data is None:
            raise GradientError(f"potential '{potential.name}' has no data: minibatches need a data posterior")
        if not 1 <= int(batch) <= data.n:
            raise GradientError(f"batch size must be between 1 and N = {data.n}, got {batch}")
        if per not in self.PER:
            raise GradientError(f"per must be one of {', '.join(self.PER)}, got {per!r}")
        self.potential, self.data, self.batch = potential, data, int(batch)
        self.consistent_pairs = per == "proposal"
        self._last = None
        self._fixed = None

    def start_proposal(self, chains: int, rng):
        """A proposal begins: with per="proposal", draw the batch its gradients share."""
        if self.consistent_pairs:
            self._fixed = rng.integers(0, self.data.n, size=(chains, self.batch))

    def __call__(self, theta, rng, value=False):
        data, n = self.data, self.batch
        idx = self._fixed if self._fixed is not None else rng.integers(0, data.n, size=(theta.shape[0], n))
        scale = data.n / n
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
        return cov * self.data.n ** 2 / self.batch

    def describe(self) -> str:
        each = ", one batch per proposal" if self.consistent_pairs else ""
        return f"minibatch of {self.batch} of N = {self.data.n}{each}"


def make_oracle(potential: Potential, V=None, batch=None):
    if batch is not None and V not in (None, 0, 0.0):
        raise GradientError("choose either simulated gradient noise V or a minibatch size, not both")
    if batch is not None:
        return Minibatch(potential, batch)
    if V is None or (np.ndim(V) == 0 and float(V) == 0.0):
        return ExactGradient(potential)
    return SimulatedNoise(potential, V)
