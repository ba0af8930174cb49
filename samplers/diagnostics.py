"""Sample-quality diagnostics for vectorised SG-MCMC runs.

Conventions: states are ``(chains, dim)``; traces are ``(steps, chains)`` or
``(steps, chains, dim)``. Everything is vectorised over chains; the only
Python loops run over lags, steps of a guard, or a handful of dimensions.

Distances compare an empirical histogram with exact bin masses of a density
known in closed form or on a grid. The mass outside the histogram box is
treated as one extra bin, so a sampler that leaks mass out of the box is
penalised instead of silently renormalised.
"""

import numpy as np
from scipy import fft

__all__ = [
    "bin_masses_1d", "bin_masses_2d", "histogram_probs", "kl_divergence",
    "tv_distance", "kl_mc_bias", "ks_distance", "grid_cdf",
    "autocorrelation", "ess", "ess_per_dim", "sum_autocorrelation",
    "kinetic_temperature", "find_divergent", "DivergenceGuard", "burn_in_length",
]


# ---------------------------------------------------------------------------
# Exact bin masses
# ---------------------------------------------------------------------------

def _simpson_nodes(edges, oversample):
    """Nodes ``(bins, m+1)`` and composite-Simpson weights for each bin."""
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be a strictly increasing 1-D array")
    if not np.all(np.isfinite(edges)):
        raise ValueError("edges must be finite")
    m = int(oversample)
    if m < 1:
        raise ValueError("oversample must be >= 1")
    m += m % 2  # Simpson needs an even number of sub-intervals
    t = np.linspace(0.0, 1.0, m + 1)
    width = np.diff(edges)[:, None]
    nodes = edges[:-1, None] + width * t
    w = np.ones(m + 1)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return nodes, width * w / (3.0 * m)


def bin_masses_1d(density_fn, edges, oversample=16):
    """Exact probability mass of each bin ``[edges[i], edges[i+1])``.

    Parameters
    ----------
    density_fn : callable
        Normalised, vectorised density ``f(x)``.
    edges : array_like, shape (n+1,)
        Strictly increasing, finite bin edges.
    oversample : int
        Simpson sub-intervals per bin (rounded up to even). The error is
        O(width^5 / oversample^4) per bin: ~1e-9 for half-sigma bins of a
        normal, but a bin several sigma wide needs more sub-intervals.

    Returns
    -------
    ndarray, shape (n,)
    """
    nodes, weights = _simpson_nodes(edges, oversample)
    f = np.asarray(density_fn(nodes.ravel()), dtype=float).reshape(nodes.shape)
    return np.sum(f * weights, axis=1)


def bin_masses_2d(density_fn, xedges, yedges, oversample=8):
    """Exact probability mass of each rectangle of a 2-D grid.

    Parameters
    ----------
    density_fn : callable
        Normalised density ``f(X, Y)``, vectorised over equal-shaped arrays.
    xedges, yedges : array_like
        Strictly increasing, finite bin edges along each axis.
    oversample : int
        Simpson sub-intervals per bin and axis (rounded up to even).

    Returns
    -------
    ndarray, shape (nx, ny)
    """
    xn, wx = _simpson_nodes(xedges, oversample)
    yn, wy = _simpson_nodes(yedges, oversample)
    # meshgrid rather than broadcasting: density_fn need not broadcast.
    X, Y = np.meshgrid(xn.ravel(), yn.ravel(), indexing="ij")
    f = np.asarray(density_fn(X, Y), dtype=float)
    f = f.reshape(xn.shape + yn.shape)
    return np.einsum("ia,iajb,jb->ij", wx, f, wy)


# ---------------------------------------------------------------------------
# Histogram distances
# ---------------------------------------------------------------------------

def _is_2d_edges(edges):
    return len(edges) == 2 and np.ndim(edges[0]) == 1


def uniform_bin_index(x, lo: float, inv_width: float, nbins: int):
    """Bin index of each value on a uniform grid (inv_width = 1 / bin width), -1 outside; NaN compares
    false, so it lands outside too. The live histograms' fast path: no search, one pass."""
    f = (x - lo) * inv_width
    ok = (f >= 0) & (f < nbins)
    return np.where(ok, f, -1.0).astype(np.intp)   # f >= 0 there, so truncation is floor


def _bin_index(x, edges):
    """Bin index of each value in half-open bins, -1 when outside or non-finite."""
    edges = np.asarray(edges, dtype=float)
    idx = np.searchsorted(edges, x, side="right") - 1
    ok = np.isfinite(x) & (idx >= 0) & (idx < edges.size - 1)
    return np.where(ok, idx, -1)


def histogram_probs(samples, edges):
    """Fraction of samples in each bin and fraction outside the box.

    Parameters
    ----------
    samples : array_like
        1-D edges: any shape, flattened (e.g. a whole ``(steps, chains)``
        trace). 2-D edges: shape ``(..., 2)``.
    edges : array_like or (xedges, yedges)
        Bins are half-open, ``[edges[i], edges[i+1])``.

    Returns
    -------
    probs : ndarray, shape (n,) or (nx, ny)
        Bin fractions over *all* samples, so ``probs.sum() + outside == 1``.
    outside : float
        Fraction outside the box; non-finite samples count as outside.
    """
    if _is_2d_edges(edges):
        pts = np.asarray(samples, dtype=float).reshape(-1, 2)
        shape = (len(edges[0]) - 1, len(edges[1]) - 1)
        ix, iy = _bin_index(pts[:, 0], edges[0]), _bin_index(pts[:, 1], edges[1])
        inside = (ix >= 0) & (iy >= 0)
        flat = np.ravel_multi_index((ix[inside], iy[inside]), shape)
    else:
        pts = np.asarray(samples, dtype=float).ravel()
        shape = (len(edges) - 1,)
        i = _bin_index(pts, edges)
        flat = i[i >= 0]
    n = pts.shape[0]
    if n == 0:
        raise ValueError("no samples")
    counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
    return counts / n, 1.0 - flat.size / n


def _with_outside(samples, edges, masses):
    """Empirical and exact probabilities, flattened, outside bin appended."""
    p, p_out = histogram_probs(samples, edges)
    q = np.asarray(masses, dtype=float)
    if q.shape != p.shape:
        raise ValueError(f"masses shape {q.shape} does not match bins {p.shape}")
    return np.append(p.ravel(), p_out), _exact_with_outside(q)


def _exact_with_outside(masses):
    return np.append(masses.ravel(), max(1.0 - masses.sum(), 0.0))


def exact_bins(masses, floor=1e-12) -> tuple[np.ndarray, np.ndarray]:
    """The exact bin masses with the outside bin's appended, and those floored as the KL floors them: what
    `counts_kl_tv` makes of `masses` at each call, for a caller that scores the same bins again and again."""
    q = _exact_with_outside(np.asarray(masses, dtype=float))
    return q, np.maximum(q, floor)


def _kl(p, q, floor, floored=None):
    q = np.maximum(q, floor) if floored is None else floored
    nz = p > 0  # 0 log 0 = 0
    pz = p[nz]
    return float(np.sum(pz * np.log(pz / q[nz])))


def _tv(p, q):
    return float(0.5 * np.abs(p - q).sum())


def counts_kl_tv(counts, outside, masses, floor=1e-12, exact=None) -> tuple[float, float]:
    """KL and TV of accumulated bin counts (plus a count outside the box) against exact bin masses:
    the same distances as `kl_divergence` and `tv_distance`, for histograms kept as counts. exact: `exact_bins` of
    masses with this floor, for a caller that keeps it (masses is then not read)."""
    n = counts.sum() + outside
    if n <= 0:
        return float("nan"), float("nan")
    p = np.empty(counts.size + 1)
    np.divide(counts.ravel(), n, out=p[:-1])
    p[-1] = outside / n
    q, floored = exact_bins(masses, floor) if exact is None else exact
    return _kl(p, q, floor, floored), _tv(p, q)


def kl_divergence(samples, edges, masses, floor=1e-12):
    """KL(empirical histogram || exact bin masses), outside bin included.

    Parameters
    ----------
    samples, edges
        As in `histogram_probs`.
    masses : ndarray
        Exact bin masses, e.g. from `bin_masses_1d`; the outside bin gets
        ``max(1 - masses.sum(), 0)``.
    floor : float
        Lower bound on exact masses, so samples in a zero-mass bin give a
        large but finite value.

    Returns
    -------
    float
        Biased upward by about `kl_mc_bias` for a finite exact sample.
    """
    return _kl(*_with_outside(samples, edges, masses), floor)


def tv_distance(samples, edges, masses):
    """Total variation ``0.5 * sum |p_hat - q|``, outside bin included."""
    return _tv(*_with_outside(samples, edges, masses))


def kl_mc_bias(n_bins, n_eff):
    """Expected KL of an exact sample against its own law.

    ``(n_bins - 1) / (2 n_eff)`` (first-order chi-square approximation).
    Count only bins with non-negligible mass (plus the outside bin if it
    has any); use the ESS, not the raw count, for correlated samples.
    """
    return (n_bins - 1) / (2.0 * n_eff)


def ks_distance(samples, cdf):
    """Kolmogorov-Smirnov distance ``sup |F_n - F|``.

    Same arithmetic as ``scipy.stats.kstest(samples, cdf).statistic`` but
    without the p-value, which is costly for large samples. Samples of any
    shape are flattened; a NaN sample gives NaN.
    """
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    n = x.size
    F = np.asarray(cdf(x), dtype=float)
    d_plus = (np.arange(1.0, n + 1) / n - F).max()
    d_minus = (F - np.arange(0.0, n) / n).max()
    return float(max(d_plus, d_minus))


def grid_cdf(edges, masses):
    """CDF callable from bin masses, linear within each bin.

    The masses are renormalised to sum to one: a density known only on a
    grid is taken to live inside it (0 left of the grid, 1 right of it).
    """
    edges = np.asarray(edges, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(masses, dtype=float)])
    if edges.shape != cum.shape or cum[-1] <= 0:
        raise ValueError("need len(edges) == len(masses) + 1 and positive mass")
    cum /= cum[-1]

    def cdf(x):
        return np.interp(x, edges, cum)

    return cdf


# ---------------------------------------------------------------------------
# Autocorrelation and effective sample size
# ---------------------------------------------------------------------------

def _acf(x):
    """Chain-combined autocorrelation of ``x (steps, chains, k)`` -> ``(steps, k)``.

    Stan's multi-chain estimator (Vehtari et al. 2021, eq. 10):
    ``rho_t = 1 - (W - mean_m acov_m(t)) / var_plus`` with
    ``var_plus = (n-1)/n W + B/n``. The between-chain term B makes chains
    that disagree look strongly correlated, so they get a small ESS.
    """
    n, m = x.shape[:2]
    if n < 2:
        raise ValueError("need at least 2 steps")
    means = x.mean(axis=0)
    xc = x - means
    nfft = fft.next_fast_len(2 * n, real=True)  # zero padding avoids wrap-around
    power = np.abs(fft.rfft(xc, n=nfft, axis=0)) ** 2
    # Averaging spectra before the inverse FFT is cheaper and equivalent.
    acov = fft.irfft(power.mean(axis=1), n=nfft, axis=0)[:n] / n
    w = acov[0] * n / (n - 1)  # mean within-chain variance
    b_over_n = means.var(axis=0, ddof=1) if m > 1 else 0.0
    var_plus = acov[0] + b_over_n
    # Test constancy on x itself: rounding in the mean can leave xc ~ 1e-17.
    var_plus = np.where(np.all(x == x[:1, :1], axis=(0, 1)), np.nan, var_plus)
    rho = 1.0 - (w - acov) / var_plus
    rho[0] = np.where(np.isnan(var_plus), np.nan, 1.0)
    return rho


def _as_traces(x):
    """View a trace as (steps, chains, k); a 1-D trace is a single chain."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        return x[:, None, None]
    if x.ndim == 2:
        return x[:, :, None]
    if x.ndim == 3:
        return x
    raise ValueError("trace must be (steps,), (steps, chains) or (steps, chains, dim)")


def autocorrelation(x, max_lag=None):
    """FFT-based autocorrelation, combined over chains as in Stan.

    Each chain is centred on its own mean; between-chain disagreement
    enters through Stan's ``var_plus`` (see Vehtari et al. 2021).

    Parameters
    ----------
    x : array_like, shape (steps,) or (steps, chains)
    max_lag : int, optional
        Largest lag returned; default ``steps - 1``.

    Returns
    -------
    rho : ndarray, shape (max_lag + 1,)
        ``rho[0] == 1``; all NaN for a constant input.
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError("x must be (steps,) or (steps, chains)")
    rho = _acf(_as_traces(x))[:, 0]
    return rho if max_lag is None else rho[: max_lag + 1]


def _geyer_ess(rho, n_total):
    """ESS from autocorrelations ``rho (steps, k)`` via Geyer's initial
    positive, monotone sequence, vectorised over the k columns."""
    n = rho.shape[0] - rho.shape[0] % 2
    pairs = rho[:n:2] + rho[1:n:2]  # Gamma_k = rho_2k + rho_2k+1
    # Keep pairs up to the first non-positive one (initial positive sequence)
    # and force them non-increasing (initial monotone sequence).
    keep = np.cumprod(pairs > 0, axis=0, dtype=bool)
    gamma = np.minimum.accumulate(pairs, axis=0) * keep
    tau = -1.0 + 2.0 * gamma.sum(axis=0)
    # Stan's truncation refinement: add the first dropped even lag if positive.
    k = np.minimum(2 * keep.sum(axis=0), rho.shape[0] - 1)
    tau += np.maximum(np.take_along_axis(rho, k[None], axis=0)[0], 0.0)
    # Antithetic chains can make tau tiny; cap ESS at n log10 n as Stan does.
    tau = np.maximum(tau, 1.0 / np.log10(n_total))
    return n_total / tau  # NaN columns stay NaN: NaN * False is NaN


def ess(x):
    """Effective sample size of a scalar quantity, total over chains.

    Stan's chain-combined autocorrelation (see `autocorrelation`) summed
    with Geyer's initial positive monotone sequence, as in Vehtari et al.
    (2021) but without rank normalisation or chain splitting.

    Parameters
    ----------
    x : array_like, shape (steps,) or (steps, chains)

    Returns
    -------
    float
        NaN for a constant input or fewer than 4 steps.
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError("x must be (steps,) or (steps, chains)")
    return float(ess_per_dim(_as_traces(x))[0])


def ess_per_dim(x):
    """ESS of each coordinate of a ``(steps, chains, dim)`` trace.

    Returns
    -------
    ndarray, shape (dim,)
        NaN for constant coordinates.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError("x must be (steps, chains, dim)")
    if x.shape[0] < 4:
        return np.full(x.shape[2], np.nan)
    return _geyer_ess(_acf(x), x.shape[0] * x.shape[1])


def sum_autocorrelation(x, max_lag):
    """``sum_{k=1}^{max_lag} rho_k`` of a trace.

    A ``(steps, chains, dim)`` trace is first projected onto the ones
    vector (coordinate sum), the scalar summary reported by the QNHMC paper.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 3:
        x = x.sum(axis=2)
    return float(autocorrelation(x, max_lag)[1:].sum())


def burn_in_length(neg_log_density, band=None, q=0.005):
    """Steps to discard: the first step after which the median over chains of ``-log p`` stays in the stationary band.

    The QNHMC paper's convergence diagnostic (§5.1, Fig. 1) monitors the negative log density of
    the samples from a start far from the mode; burn-in ends once the chain has reached the
    high-density region for good.

    Parameters
    ----------
    neg_log_density : array_like, shape (steps,) or (steps, chains)
        U(theta_t) (any constant offset is irrelevant).
    band : (lo, hi), optional
        Stationary range of ``-log p``. Default: the ``q`` and ``1 - q`` quantiles of every
        chain's values over the second half of the trace, which must then be stationary.
    q : float
        Tail probability of the default band.

    Returns
    -------
    int
        0 if the median never leaves the band, ``steps`` if it does not settle in it.
    """
    x = np.asarray(neg_log_density, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError("trace must be (steps,) or (steps, chains) with at least 2 steps")
    lo, hi = np.quantile(x[x.shape[0] // 2:], [q, 1 - q]) if band is None else band
    med = np.median(x, axis=1)
    outside = ~((med >= lo) & (med <= hi))   # NaN counts as outside
    return int(np.flatnonzero(outside)[-1] + 1) if outside.any() else 0


# ---------------------------------------------------------------------------
# Dynamics health
# ---------------------------------------------------------------------------

def kinetic_temperature(r):
    """Per-chain kinetic temperature ``r.r / d`` of momenta ``r (chains, d)``.

    Equipartition (unit mass, unit temperature) says its mean is 1; a drift
    away from 1 flags a discretisation or friction error.
    """
    r = np.asarray(r, dtype=float)
    return np.einsum("...i,...i->...", r, r) / r.shape[-1]


def all_within(z, bound=1e6) -> bool:
    """Whether every entry is finite and within the bound: the common case, in two reductions without
    temporaries (a NaN makes max NaN, which fails the test). float32: first in one pass, the sum of squares,
    which bounds every |z| (a NaN or an overflow fails it too); the reductions decide where it does not pass."""
    limit = sumsq_limit(z, bound)
    if limit is not None:
        flat = z.ravel(order="K")
        if flat.dot(flat) <= limit:
            return True
    # the ufuncs' reduce directly: ndarray.max goes through a Python wrapper, a third of the cost at 10^3 chains;
    # compared as Python floats: a float32 max compared with a bound past float32's range would round the bound to inf
    return bool(z.size and z.dtype.kind == "f" and float(np.maximum.reduce(z, axis=None)) <= bound
                and float(np.minimum.reduce(z, axis=None)) >= -bound)


# The sum of squares: BLAS's sdot or ddot, one pass against two reductions (docs/notes/throughput.md), called as
# the array's method (np.dot's dispatch is a third of it at 2000 entries). float64 only up to _SUMSQ_MAX64
# entries: OpenBLAS threads ddot above 10^4 entries (docs/notes/throughput.md), which inside the chain
# blocks' threads would contend with them. A sum of n squares is within n u (u = 2^-24, float32) of the
# exact one, so below a quarter of bound^2 the exact sum is below bound^2 for n up to 2^22. A bound whose
# square overflows has no limit: an infinite sum would pass it.
_SUMSQ_MAX = 1 << 22
_SUMSQ_MAX64 = 1 << 13
_SUMSQ_SHARE = 0.25


def sumsq_limit(z, bound) -> float | None:
    """A number that the sum of squares of z's entries at or below it shows every entry finite and within the
    bound, or None where that test is not made (then the reductions of `all_within`)."""
    most = _SUMSQ_MAX if z.dtype == np.float32 else _SUMSQ_MAX64 if z.dtype == np.float64 else 0
    limit = _SUMSQ_SHARE * bound * bound
    return limit if 0 < z.size <= most and limit < np.inf else None


def find_divergent(z, bound=1e6):
    """Mask of chains whose row has a non-finite entry or ``|z| > bound``.

    Parameters
    ----------
    z : array_like, shape (chains,) or (chains, ...)

    Returns
    -------
    ndarray of bool, shape (chains,)
    """
    z = np.asarray(z)
    if all_within(z, bound):
        return np.zeros(z.shape[0], bool)
    # NaN fails every comparison, so one test catches NaN, inf and huge.
    return ~np.all(np.abs(z) <= bound, axis=tuple(range(1, z.ndim)))


class DivergenceGuard:
    """Freeze diverged chains so NaN/inf never propagate and none are dropped.

    Parameters
    ----------
    n_chains : int
    bound : float
        Rows with any ``|z| > bound`` count as diverged (see `find_divergent`).

    Attributes
    ----------
    alive : ndarray of bool, shape (n_chains,)
    first_step : ndarray of int, shape (n_chains,)
        Value of `step` at the `apply` call where each chain diverged,
        -1 while alive.
    step : int
        Number of `apply` calls since construction or `reset`.

    Examples
    --------
    >>> guard = DivergenceGuard(n_chains)
    >>> for t in range(T):
    ...     z = guard.apply(z, update(z))
    """

    def __init__(self, n_chains, bound=1e6):
        self.n_chains = int(n_chains)
        self.bound = bound
        self.reset()

    def reset(self):
        """Revive every chain and restart the step counter."""
        self.alive = np.ones(self.n_chains, dtype=bool)
        self.first_step = np.full(self.n_chains, -1, dtype=int)
        self.step = 0
        self._none_frozen = True   # alive.all(), known without a pass while no chain has diverged

    @property
    def n_diverged(self):
        """Number of frozen chains (a live run asks several times a frame)."""
        return 0 if self._none_frozen else int(self.n_chains - np.count_nonzero(self.alive))

    def apply(self, z_old, z_new):
        """Return `z_new` with dead and newly diverged rows taken from `z_old`.

        Parameters
        ----------
        z_old : array_like, shape (n_chains, ...)
            The array returned by the previous call (or the finite start).
        z_new : array_like, same shape
            The proposed update.

        Returns
        -------
        ndarray
            `z_new` itself while no chain is frozen, else a new array; neither input is modified.
        """
        z_old, z_new = np.asarray(z_old), np.asarray(z_new)
        if z_old.shape != z_new.shape or z_new.shape[:1] != (self.n_chains,):
            raise ValueError(
                f"expected matching shapes ({self.n_chains}, ...), "
                f"got {z_old.shape} and {z_new.shape}")
        out = self.apply_rows(slice(None), z_old, z_new, self.step)
        self.step += 1
        return out

    def quick_limit(self, z):
        """For a caller that inlines the common case: a number that `flat.dot(flat)` of z raveled below it
        shows every entry within the bound (the first test of `all_within`), or None where that test does
        not apply (then `apply_rows`). Only while no chain is frozen: `apply_rows` keeps frozen rows."""
        return sumsq_limit(z, self.bound)

    def apply_rows(self, rows: slice, z_old, z_new, step: int):
        """`apply` for the chains `rows` only, at the given step count, which the caller advances: blocks of
        chains stepped apart (on threads, samplers.run) each guard their own rows."""
        if all_within(z_new, self.bound) and (self._none_frozen or self.alive[rows].all()):
            return z_new   # the common case, and a step of every lab frame
        alive = self.alive[rows]
        newly = alive & find_divergent(z_new, self.bound)
        frozen = ~alive | newly
        # Freezing at a bad z_old would leak the NaN we promised to stop.
        if find_divergent(z_old[frozen], self.bound).any():
            raise ValueError("z_old has diverged rows for frozen chains; "
                             "pass the array returned by the previous apply")
        self.first_step[rows][newly] = step
        alive &= ~newly
        self._none_frozen = self._none_frozen and not newly.any()
        mask = frozen.reshape((-1,) + (1,) * (z_new.ndim - 1))
        return np.where(mask, z_old, z_new)
