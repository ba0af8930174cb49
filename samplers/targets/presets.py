"""The named targets: closed-form presets, the data posteriors and simplex targets, and the prefixes
(`expr:`, `gamma:`, `dirichlet:`, `logistic-csv:`, `pmf-csv:`) that build a target from text. One explicit
table each."""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from samplers.targets.data import logistic, logistic_5d
from samplers.targets.lda import uci_prefix
from samplers.targets.modelfile import EXAMPLES, model_file_potential
from samplers.targets.models import csv_logistic, csv_pmf, digits_logistic, pmf
from samplers.targets.potential import Array, Potential, PotentialError
from samplers.targets.simplex import dense_dirichlet, simplex_prefix, sparse_dirichlet
from samplers.targets.typed import typed_potential

WELLING_TEH = str(EXAMPLES / "welling-teh.yaml")


# ----------------------------------------------------------------------------------
# presets
# ----------------------------------------------------------------------------------
def by_dtype(*values) -> Callable:
    """dtype -> a formula's constants as 0-d arrays of that dtype for float64 and float32, else None. numpy converts
    a Python number operand on every call, about 0.3 us of a 0.8 us product at 10^3 chains; a 0-d array of the
    array's own dtype is that number rounded as numpy rounds it, so the result is the same bits. The live lab calls
    these U and gradients at every step of a frame (issue 28); another dtype takes the formula as written."""
    table = {np.dtype(dt): tuple(np.array(v, dt) for v in values) for dt in ("float64", "float32")}
    return table.get


def gaussian() -> Potential:
    k = by_dtype(0.5)

    def U(t):
        c = k(t.dtype)
        if c is None:
            return 0.5 * t[:, 0] ** 2
        u = t[:, 0] * t[:, 0]   # ** 2 is numpy's square: u * u
        u *= c[0]
        return u

    return Potential(
        "gaussian", 1, U, lambda t: t.copy(), ((-5.0, 5.0),),
        description="standard normal, U = θ²/2 (recipe paper Fig. 2 left)",
        formula=r"U(\theta) = \theta^2/2", known_u_min=0.0, known_log_z=0.5 * np.log(2 * np.pi),
        known_marginals={0: stats.norm().pdf},
        exact_sampler=lambda n, rng: rng.standard_normal((n, 1)),
        start=np.zeros(1))


def double_well() -> Potential:
    # products, not powers: numpy's x**3 calls pow() per element, 20x slower, and this gradient was 40 % of a live
    # frame's cost on the double well. For float states each operation of the formula as written, in place.
    k = by_dtype(2, 1, 4)

    def U(t):
        c = k(t.dtype)
        if c is None:
            return (t[:, 0] * t[:, 0]) * (t[:, 0] * t[:, 0] - 2)
        t0 = t[:, 0]
        u = t0 * t0
        u *= u - c[0]
        return u

    def grad(t):
        c = k(t.dtype)
        if c is None:
            return 4 * t * (t * t - 1)
        a = t * t
        a -= c[1]
        g = t * c[2]   # 4 t
        g *= a
        return g

    return Potential(
        "double-well", 1, U, grad, ((-3.0, 3.0),),
        description="two modes at ±1, U = θ⁴ − 2θ² (recipe paper Fig. 2 left; Chen et al. Fig. 1)",
        formula=r"U(\theta) = \theta^4 - 2\theta^2", known_u_min=-1.0, start=np.zeros(1))


TILT = 0.3


def tilted_double_well() -> Potential:
    """The double well tilted by 0.3 theta: the mode near -1.04 is deeper by about 0.6 than the one near +0.96, so
    exp(-U) puts about 65 % of its mass there, exp(-10 U) more than 99.7 %. Chains start in the shallow mode."""
    crit = np.sort(np.roots([4.0, 0.0, -4.0, TILT]).real)   # U' = 4 theta^3 - 4 theta + TILT
    deep, shallow = crit[0], crit[2]
    return Potential(
        "tilted-double-well", 1, lambda t: (t[:, 0] * t[:, 0]) * (t[:, 0] * t[:, 0] - 2) + TILT * t[:, 0],
        lambda t: 4 * t * (t * t - 1) + TILT, ((-3.0, 3.0),),
        description=f"asymmetric double well, U = θ⁴ − 2θ² + {TILT}θ: the mode at {deep:.2f} is deeper than the one "
        f"at {shallow:.2f}, where chains start (lesson 12: annealing)",
        formula=rf"U(\theta) = \theta^4 - 2\theta^2 + {TILT}\,\theta",
        known_u_min=float(deep ** 4 - 2 * deep ** 2 + TILT * deep), start=np.array([shallow]))


def banana() -> Potential:
    # products, not powers (see double_well); for float states each operation as written, in place and into the
    # gradient's columns
    k = by_dtype(1.2, 4, 10, 2, 0.4)

    def U(t):
        a, b = t[:, 0], t[:, 1]
        c = k(t.dtype)
        if c is None:
            a2 = a * a
            s = 4 * (b + 1.2) - a2
            return a2 * a2 / 10 + s * s / 2
        a2 = a * a
        s = b + c[0]
        s *= c[1]
        s -= a2
        a2 *= a2
        a2 /= c[2]
        s *= s
        s /= c[3]
        a2 += s
        return a2

    def grad(t):
        a, b = t[:, 0], t[:, 1]
        c = k(t.dtype)
        if c is None:
            a2 = a * a
            s = 4 * (b + 1.2) - a2
            out = np.empty_like(t)
            out[:, 0] = a * (0.4 * a2 - 2 * s)
            out[:, 1] = 4 * s
            return out
        a2 = a * a
        s = b + c[0]
        s *= c[1]
        s -= a2
        out = np.empty_like(t)
        o0, o1 = out[:, 0], out[:, 1]
        np.multiply(s, c[3], out=o1)   # 2 s, for now
        np.multiply(a2, c[4], out=o0)
        o0 -= o1
        o0 *= a
        np.multiply(s, c[1], out=o1)
        return out

    return Potential(
        "banana", 2, U, grad, ((-4.0, 4.0), (-2.5, 3.5)),
        description="banana-shaped, U = θ₁⁴/10 + (4(θ₂ + 1.2) − θ₁²)²/2 (recipe paper Fig. 2 right)",
        formula=r"U(\theta) = \theta_1^4/10 + \left(4(\theta_2+1.2) - \theta_1^2\right)^2/2",
        known_u_min=0.0, start=np.array([0.0, -1.2]))


def gaussian_nd(name: str, cov: Array, description: str, formula: str, box_sd: float = 5.0) -> Potential:
    cov = np.asarray(cov, float)
    d = cov.shape[0]
    prec = np.linalg.inv(cov)
    sd = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov)
    # einsum, not `t @ prec`: numpy's own loops sum in one order on every machine, a BLAS kernel in its own
    # (the golden runs on this target must not depend on the processor: tests/test_golden.py)
    return Potential(
        name, d, lambda t: 0.5 * np.einsum("ni,ij,nj->n", t, prec, t), lambda t: np.einsum("ni,ij->nj", t, prec),
        tuple((-box_sd * s, box_sd * s) for s in sd[:2]), description=description, formula=formula,
        known_u_min=0.0, known_log_z=0.5 * (d * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]),
        known_marginals={i: stats.norm(0, sd[i]).pdf for i in range(d)},
        exact_sampler=lambda n, rng: rng.standard_normal((n, d)) @ chol.T, start=np.zeros(d),
        # exp(-beta U) is the Gaussian of covariance cov / beta: its marginals stay closed-form in any dimension
        temper=lambda beta: _renamed(gaussian_nd(name, cov / beta, description, formula, box_sd), beta))


def _renamed(pot: Potential, beta: float) -> Potential:
    pot.name, pot.temper = f"{pot.name} at beta={beta:g}", None
    pot.description += f" (tempered: exp(-{beta:g} U))"
    return pot


def correlated_gaussian(rho: float = 0.9) -> Potential:
    if not -1 < rho < 1:
        raise PotentialError(f"correlated-gaussian needs -1 < rho < 1, got {rho}")
    return gaussian_nd(
        "correlated-gaussian", [[1.0, rho], [rho, 1.0]],
        f"2-D Gaussian, unit variances, correlation ρ = {rho:g}",
        r"U(\theta) = \tfrac12 \theta^\top \Sigma^{-1}\theta,\ \Sigma = \begin{pmatrix}1&\rho\\\rho&1\end{pmatrix}")


def gaussian_100d() -> Potential:
    d = 100
    return gaussian_nd(
        "gaussian-100d", np.ones((d, d)) + 4 * np.eye(d),
        "100-d Gaussian with covariance 11ᵀ + 4I (QNHMC paper §5.1)",
        r"U(\theta) = \tfrac12 \theta^\top (\mathbf 1\mathbf 1^\top + 4I)^{-1}\theta", box_sd=4.0)


MIXTURE_MEANS = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
MIXTURE_WEIGHTS = np.array([0.4, 0.35, 0.25])
MIXTURE_SD = 0.6


def mixture() -> Potential:
    means, w, s = MIXTURE_MEANS, MIXTURE_WEIGHTS, MIXTURE_SD
    log_w = np.log(w) - np.log(2 * np.pi * s ** 2)

    def parts(t):
        diff = t[:, None, :] - means[None]
        return log_w - 0.5 * (diff ** 2).sum(-1) / s ** 2, diff

    def U(t):
        return -logsumexp(parts(t)[0], axis=1)

    def grad(t):
        logp, diff = parts(t)
        resp = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
        return (resp[:, :, None] * diff).sum(1) / s ** 2

    def sample(n, rng):
        k = rng.choice(len(w), size=n, p=w)
        return means[k] + s * rng.standard_normal((n, 2))

    marg = {i: (lambda x, i=i: sum(wk * stats.norm(m[i], s).pdf(x) for wk, m in zip(w, means)))
            for i in range(2)}
    u_min = float(U(means).min())
    return Potential(
        "mixture", 2, U, grad, ((-4.5, 4.5), (-4.5, 4.5)),
        description="three well-separated Gaussian modes (weights 0.4, 0.35, 0.25, sd 0.6)",
        formula=r"U(\theta) = -\log \sum_k w_k\, \mathcal N(\theta; \mu_k, 0.6^2 I)",
        known_u_min=u_min, known_log_z=0.0, known_marginals=marg, exact_sampler=sample, start=np.zeros(2))


def welling_teh() -> Potential:
    """Welling & Teh's (2011) mixture posterior, §5.1, from the shipped model file and its 100 points."""
    return model_file_potential(WELLING_TEH, name="welling-teh")


PRESETS: dict[str, Callable[..., Potential]] = {
    "gaussian": gaussian,
    "double-well": double_well,
    "tilted-double-well": tilted_double_well,
    "banana": banana,
    "correlated-gaussian": correlated_gaussian,
    "mixture": mixture,
    "gaussian-100d": gaussian_100d,
    "sparse-dirichlet": sparse_dirichlet,
    "dense-dirichlet": dense_dirichlet,
    "logistic": logistic,
    "logistic-5d": logistic_5d,
    "digits-logistic": digits_logistic,
    "pmf": pmf,
    "welling-teh": welling_teh,
}


# prefix -> builder(text after the prefix, **kwargs)
PREFIXES: dict[str, Callable[..., Potential]] = {
    "expr:": typed_potential,
    "gamma:": simplex_prefix("gamma"),
    "dirichlet:": simplex_prefix("dirichlet"),
    "logistic-csv:": csv_logistic,     # a user's file: features..., label
    "pmf-csv:": csv_pmf,               # a user's file: user,item,rating
    "lda-uci:": uci_prefix,            # a user's corpus: a UCI bag-of-words docword file[;K=topics]
    "model:": model_file_potential,    # a user's model file (docs/models.md): YAML and a CSV
}


def parse_box(text: str) -> tuple:
    """'lo,hi' (1-d) or 'lo,hi,lo,hi' (2-d, x then y) as ((lo, hi), ...), or PotentialError saying what it takes:
    the one reading of a typed box, for the CLI's --box and the lab's `box=`."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise PotentialError(f"a box is numbers lo,hi per coordinate, e.g. -10,10,-8,8; got '{text[:60]}'") from None
    if len(values) not in (2, 4) or not all(np.isfinite(values)) or any(
            lo >= hi for lo, hi in zip(values[::2], values[1::2])):
        raise PotentialError(f"a box is lo,hi (1-d) or lo,hi,lo,hi (2-d) with each lo < hi, e.g. -10,10,-8,8; "
                             f"got '{text[:60]}'")
    return tuple(zip(values[::2], values[1::2]))


def preset_names() -> list[str]:
    return list(PRESETS)


def get_potential(spec: str, box=None, **kwargs) -> Potential:
    """A preset by name, or `expr:<U in x (and y)>` for a typed potential; `box` ((lo, hi) per plotted coordinate)
    replaces the box it is drawn and scored on.

    Presets are built once per process (their grids cost a moment); treat them as read-only.
    """
    spec = spec.strip()
    for prefix, build in PREFIXES.items():
        if spec.startswith(prefix):
            if box is not None and build is typed_potential:
                return build(spec[len(prefix):], box=box, **kwargs)   # its checks run on the box it is drawn on
            pot = build(spec[len(prefix):], **kwargs)
            return pot if box is None else pot.boxed(box)
    if spec not in PRESETS:
        raise PotentialError(f"unknown potential '{spec}' (choose from {', '.join(PRESETS)}, or expr:...)")
    pot = _preset(spec, tuple(sorted(kwargs.items())))
    return pot if box is None else pot.boxed(box)


@lru_cache(maxsize=32)
def _preset(name: str, kwargs: tuple) -> Potential:
    return PRESETS[name](**dict(kwargs))
