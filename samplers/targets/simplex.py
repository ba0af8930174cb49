"""Targets on the positive line and the probability simplex (Baker, Fearnhead, Fox & Nemeth 2018).

* ``gamma:a`` -- Gamma(a, 1) on theta > 0, U(theta) = theta - (a - 1) log theta: the stationary law
  of the CIR process d theta = (a - theta) dt + sqrt(2 theta) dW (Eq. 2.1).
* ``dirichlet:c1,...,cd`` (optionally ``;alpha=x``, default 0.1) -- the posterior of omega given N
  categorical observations with counts c and a Dir(alpha) prior, Dir(alpha + c), in the gamma
  parameterisation the SCIR paper uses (§2): theta_j ~ Gamma(alpha_j + c_j, 1) independently and
  omega = theta / sum(theta).
* presets ``sparse-dirichlet`` (d = 10, N = 1000, counts 800/100/100/0..., alpha = 0.1: the running
  experiment of §1.3) and ``dense-dirichlet`` (the same N spread equally, §2.2).

U and grad act on the sampler's state theta (the gamma variables). What a run keeps is
`theta_view(theta)`: theta itself on the line, omega on the simplex; `box`, `marginals`
(exact Beta marginals of omega) and `exact_sampler` describe that view, so the generic scoring
(KS against the marginals) works on omega.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import special, stats

from samplers.diagnostics import ks_distance
from samplers.targets.potential import Potential, PotentialError

SPARSE_COUNTS = (800, 100, 100, 0, 0, 0, 0, 0, 0, 0)
DENSE_COUNTS = (100,) * 10
DEFAULT_ALPHA = 0.1


@dataclass
class CategoricalData:
    """N categorical observations (labels in 0..d-1) and a Dirichlet prior alpha.

    The per-example terms are those of the gamma parameterisation, U(theta) = sum_j theta_j
    - (alpha_j - 1) log theta_j - sum_i log theta_{z_i}, so `gradients.Minibatch` gives generic
    samplers the unbiased estimate with shape alpha + (N/n) sum_{i in S} z_i, the a-hat of Eq. (2.3).
    """
    labels: np.ndarray      # (N,) ints
    alpha: np.ndarray       # (d,)

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def d(self) -> int:
        return len(self.alpha)

    @property
    def counts(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.d).astype(float)

    def batch_counts(self, idx: np.ndarray) -> np.ndarray:
        """Category counts of each chain's minibatch idx (chains, n) -> (chains, d), without a Python loop."""
        chains = idx.shape[0]
        flat = self.labels[idx] + self.d * np.arange(chains)[:, None]
        return np.bincount(flat.ravel(), minlength=chains * self.d).reshape(chains, self.d).astype(float)

    def shape_estimate(self, idx: np.ndarray) -> np.ndarray:
        """a-hat = alpha + (N/n) sum_{i in S} z_i per chain (Eq. 2.3)."""
        return self.alpha + (self.n / idx.shape[1]) * self.batch_counts(idx)

    def example_grads(self, theta, idx):
        chains, b = idx.shape
        out = np.zeros((chains, b, self.d))
        lab = self.labels[idx]
        rows = np.arange(chains)[:, None]
        out[rows, np.arange(b)[None, :], lab] = -1.0 / theta[rows, lab]
        return out

    def example_losses(self, theta, idx):
        return -np.log(theta[np.arange(idx.shape[0])[:, None], self.labels[idx]])

    def prior_U(self, theta):
        return (theta - (self.alpha - 1) * np.log(theta)).sum(-1)

    def prior_grad(self, theta):
        return 1.0 - (self.alpha - 1) / theta


@dataclass
class SimplexPotential(Potential):
    """A product of Gamma(a_j, 1) laws on theta > 0, viewed as theta (line) or omega (simplex)."""
    shape: np.ndarray = field(default_factory=lambda: np.ones(1))   # a_j, the Gamma shapes
    simplex: bool = False

    def theta_view(self, theta: np.ndarray) -> np.ndarray:
        """What runs keep: omega = |theta| / sum |theta| on the simplex, theta on the line.

        |.| because SGRLD's expanded-mean parameterisation is mirrored and a start may be negative.
        """
        if not self.simplex:
            return theta
        a = np.abs(theta)
        return a / a.sum(axis=-1, keepdims=True)


def _gamma_terms(a):
    a = np.asarray(a, float)

    def U(t):
        with np.errstate(all="ignore"):
            # a = 1 contributes nothing at theta = 0 (not 0 * log 0 = NaN)
            out = (t - np.where(a == 1, 0.0, (a - 1) * np.log(t))).sum(-1)
        ok = ((t > 0) | ((t == 0) & (a == 1))).all(-1)
        return np.where(ok, out, np.inf)

    def grad(t):
        with np.errstate(all="ignore"):
            return np.where(t > 0, 1.0 - (a - 1) / t, np.nan)

    return U, grad


def _u_min(a) -> float:
    """min U = sum_j min_theta [theta - (a_j - 1) log theta], at theta = a_j - 1 for a_j > 1.

    A coordinate with a_j < 1 is unbounded below at theta -> 0; it contributes its value at
    theta = 1e-4 a_j instead, a finite stand-in (the field only sets metric constants and tells the
    grid normaliser that the law is known).
    """
    a = np.asarray(a, float)
    b = a - 1
    at = np.where(b > 0, b, 1e-4 * a)
    with np.errstate(divide="ignore"):
        terms = np.where(b == 0, 0.0, at - b * np.log(at))
    return float(terms.sum())


def gamma_potential(a: float) -> SimplexPotential:
    a = float(a)
    if not (np.isfinite(a) and a > 0):
        raise PotentialError(f"gamma:a needs a shape a > 0, got {a}")
    law = stats.gamma(a)
    U, grad = _gamma_terms([a])
    # The box starts at 0 even for a < 1, where the density is infinite: U = inf at theta = 0 makes the
    # grid quadrature's end node 0, which costs some accuracy in the first bin, while a box starting at a
    # small quantile would count every sample below it as a miss.
    box = ((0.0, float(law.ppf(1 - 1e-6))),)
    at_zero = 0.0 if a < 1 else float(law.pdf(0.0))   # the marginal's value at 0 for the same reason
    return SimplexPotential(
        f"gamma:{a:g}", 1, U, grad, box,
        description=f"Gamma({a:g}, 1) on θ > 0, the stationary law of the CIR process (SCIR paper Eq. 2.1)",
        formula=rf"U(\theta) = \theta - ({a:g} - 1)\log\theta,\ \theta > 0",
        known_u_min=_u_min([a]), known_log_z=float(special.gammaln(a)),
        known_marginals={0: lambda x: np.where(np.asarray(x) > 0, law.pdf(np.clip(x, 1e-300, None)), at_zero)},
        exact_sampler=lambda n, rng: rng.gamma(a, 1.0, size=(n, 1)), start=np.array([a]),
        shape=np.array([a]), simplex=False)


MAX_COMPONENTS = 1000
MAX_TOTAL_COUNT = 10 ** 6


def dirichlet_potential(counts, alpha=DEFAULT_ALPHA, name: str | None = None,
                        description: str = "") -> SimplexPotential:
    counts = np.asarray(counts, float)
    d = counts.size
    if d < 2 or (counts < 0).any() or (counts != np.round(counts)).any():
        raise PotentialError("dirichlet: needs at least two non-negative integer counts, e.g. dirichlet:800,100,100,0")
    # the minibatch data set holds one entry per count, and each component gets its own exact marginal
    if d > MAX_COMPONENTS:
        raise PotentialError(f"dirichlet: at most {MAX_COMPONENTS} counts, got {d}")
    if counts.sum() > MAX_TOTAL_COUNT:
        raise PotentialError(f"dirichlet: the counts may add up to at most {MAX_TOTAL_COUNT:,}, "
                             f"got {counts.sum():,.0f}")
    alpha = np.broadcast_to(np.asarray(alpha, float), (d,)).copy()
    if not (np.isfinite(alpha).all() and (alpha > 0).all()):
        raise PotentialError(f"dirichlet: alpha must be > 0, got {alpha.tolist()}")
    a = alpha + counts
    total = a.sum()
    data = CategoricalData(np.repeat(np.arange(d), counts.astype(int)), alpha)
    U, grad = _gamma_terms(a)
    margs = [stats.beta(aj, total - aj) for aj in a]
    box = tuple((float(m.ppf(1e-9 if aj < 1 else 1e-6)), float(m.ppf(1 - 1e-6))) for m, aj in zip(margs[:2], a[:2]))

    def sample(n, rng):
        g = rng.gamma(a, 1.0, size=(n, d))
        return g / g.sum(1, keepdims=True)

    if name is None:
        name = "dirichlet:" + ",".join(f"{int(c)}" for c in counts)
        if not np.allclose(alpha, DEFAULT_ALPHA):
            name += f";alpha={alpha[0]:g}"
    return SimplexPotential(
        name, d, U, grad, box,
        description=description or f"Dir(α + counts) posterior of ω, d = {d}, N = {int(counts.sum())}, "
                                   f"α = {alpha[0]:g}; runs keep ω = θ/Σθ",
        formula=r"\theta_j \sim \mathrm{Gamma}(\alpha_j + n_j, 1),\ \omega = \theta / \textstyle\sum_j \theta_j",
        known_u_min=_u_min(a), known_log_z=float(special.gammaln(a).sum()),
        known_marginals={j: margs[j].pdf for j in range(d)}, exact_sampler=sample, data=data,
        state_sampler=lambda n, rng: rng.gamma(a, 1.0, size=(n, d)),
        start=a / total, shape=a, simplex=True)


@lru_cache(maxsize=64)
def _parse(kind: str, text: str, kwargs: tuple) -> SimplexPotential:
    kw = dict(kwargs)
    if kind == "gamma":
        try:
            a = float(text)
        except ValueError:
            raise PotentialError(f"gamma:a needs a number, got 'gamma:{text}'") from None
        return gamma_potential(a)
    body, _, opts = text.partition(";")
    alpha = kw.get("alpha", DEFAULT_ALPHA)
    if opts:
        key, _, value = opts.partition("=")
        if key.strip() != "alpha":
            raise PotentialError(f"dirichlet: the only option is ;alpha=<x>, got ';{opts}'")
        try:
            alpha = float(value)
        except ValueError:
            raise PotentialError(f"dirichlet: alpha must be a number, got '{value}'") from None
    try:
        counts = [float(c) for c in body.split(",")]
    except ValueError:
        raise PotentialError(f"dirichlet: counts must be integers separated by commas, got '{body}'") from None
    return dirichlet_potential(counts, alpha)


def simplex_prefix(kind):
    """The builder of `gamma:a` or `dirichlet:c1,...,cd[;alpha=x]` targets from the text after the prefix."""
    def build(text, **kwargs):
        return _parse(kind, text.strip(), tuple(sorted(kwargs.items())))
    return build


def sparse_dirichlet() -> SimplexPotential:
    return dirichlet_potential(SPARSE_COUNTS, DEFAULT_ALPHA, "sparse-dirichlet",
                               "sparse Dirichlet posterior: d = 10, N = 1000, counts 800/100/100/0…, α = 0.1 "
                               "(SCIR paper §1.3); runs keep ω = θ/Σθ")


def dense_dirichlet() -> SimplexPotential:
    return dirichlet_potential(DENSE_COUNTS, DEFAULT_ALPHA, "dense-dirichlet",
                               "dense Dirichlet posterior: d = 10, N = 1000 spread equally, α = 0.1 "
                               "(SCIR paper §2.2); runs keep ω = θ/Σθ")


# -- the Rosenblatt transform of a Dirichlet and the KS score (SCIR paper §2.2, Fig. 2) --------
def dirichlet_rosenblatt(omega: np.ndarray, a) -> np.ndarray:
    """u (n, d-1), i.i.d. Uniform(0, 1) under Dir(a) (Rosenblatt 1952, by stick breaking).

    omega_j / sum_{k>=j} omega_k ~ Beta(a_j, sum_{k>j} a_k) given the earlier coordinates; the tail
    sums are accumulated from the end, so that tiny sparse coordinates keep their precision
    (1 - omega_1 - ... would cancel to zero).
    """
    omega = np.asarray(omega, float).reshape(-1, np.size(a))
    a = np.asarray(a, float)
    tail = np.cumsum(omega[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(all="ignore"):
        x = np.where(tail[:, :-1] > 0, omega[:, :-1] / tail[:, :-1], 0.0)
    b = np.cumsum(a[::-1])[::-1][1:]
    return special.betainc(a[:-1], b, np.clip(x, 0.0, 1.0))


def dirichlet_ks(omega: np.ndarray, a) -> np.ndarray:
    """KS distance of each Rosenblatt coordinate from Uniform(0, 1), shape (d-1,)."""
    u = dirichlet_rosenblatt(omega, a)
    return np.array([ks_distance(u[:, j], lambda x: np.clip(x, 0.0, 1.0)) for j in range(u.shape[1])])
