"""Scoring samples against the exact law of a potential: KL, TV, KS on its plotting box; the share of samples
outside that box; and which chains escaped the target (`escaped_chains`). Beyond two parameters, against a
reference sample (samplers/refsample.py): per-marginal KS and Wasserstein distances with error bars
(`marginal_distances`)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import stats
from scipy.special import gammaln

from samplers import diagnostics as dg
from samplers.targets.potential import Potential, PotentialError


def edges_for(potential: Potential, bins: int | tuple | None = None):
    """Histogram edges on the box: `bins` per axis (a pair gives each of two axes its own)."""
    if potential.dim == 1:
        lo, hi = potential.box[0]
        return np.linspace(lo, hi, (bins or 100) + 1)
    per_axis = bins if isinstance(bins, tuple) else (bins or 50,) * 2
    return tuple(np.linspace(lo, hi, n + 1) for (lo, hi), n in zip(potential.box[:2], per_axis))


def exact_masses(potential: Potential, edges):
    return potential.bin_masses(edges)


def score(potential: Potential, theta: np.ndarray, bins: int | tuple | None = None) -> dict:
    """KL and TV of the (joint, for dim <= 2) histogram, and per-coordinate KS distances.

    theta: (..., dim) samples; higher-dimensional targets are scored on their exact marginals.
    """
    theta = np.asarray(theta, float).reshape(-1, potential.dim)
    out = {}
    if potential.dim <= 2:
        edges = edges_for(potential, bins)
        masses = exact_masses(potential, edges)
        samples = theta[:, 0] if potential.dim == 1 else theta
        out["kl"] = dg.kl_divergence(samples, edges, masses)
        out["tv"] = dg.tv_distance(samples, edges, masses)
        err = potential.bin_mass_errors(edges)
        if err is not None:   # how far the exact bin masses themselves may be off, summed (a bound on their TV)
            out["reference_error"] = float(err.sum())
        n_bins = masses.size
    ks = []
    for i in range(min(potential.dim, 2)):
        cdf = potential.marginal_cdf(i)
        if cdf is None:
            marg = potential.marginals.get(i)
            if marg is None:
                continue
            lo, hi = potential.box[i]
            e = np.linspace(lo, hi, 2001)
            cdf = dg.grid_cdf(e, dg.bin_masses_1d(marg, e, oversample=4))
        ks.append(dg.ks_distance(theta[:, i], cdf))
    if ks:
        out["ks"] = float(max(ks))
    if potential.dim <= 2:
        out["outside"] = outside_box(potential, theta)
    out["n"] = theta.shape[0]
    if potential.dim <= 2:
        out["bins"] = int(n_bins)
    return out


def kl_noise_floor(potential: Potential, theta: np.ndarray, bins: int | None = None) -> float:
    """Expected KL of the histogram from Monte Carlo error alone: the KL an unbiased sampler with these chains'
    effective sample size would show, outside bin included.

    theta: (kept, chains, dim). Chains are independent, so Var(p_b) is the between-chain variance of each chain's
    bin fractions over the number of chains: autocorrelation within chains is accounted for without modelling it.
    Where a bin expects many samples that gives sum_b Var(p_b) / (2 q_b). Where it expects few (n q_b < 20) the
    second-order expansion fails (one stray sample in a bin of mass 1e-300 made it 1e293), and a sample that
    lands there is bias, not noise: those bins get the exact expectation of p log(p / q) for counts that are
    Poisson in visits of q_b n / c, c samples each, with c the samples per visit measured on those bins.
    """
    kept, chains = theta.shape[:2]
    edges = edges_for(potential, bins)
    q = exact_masses(potential, edges).ravel()
    if potential.dim == 1:
        idx = np.digitize(theta[:, :, 0], edges) - 1
        n_b = len(edges) - 1
        inside = (idx >= 0) & (idx < n_b)
    else:
        ix = np.digitize(theta[:, :, 0], edges[0]) - 1
        iy = np.digitize(theta[:, :, 1], edges[1]) - 1
        nx, ny = len(edges[0]) - 1, len(edges[1]) - 1
        inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        idx, n_b = ix * ny + iy, nx * ny
    bin_of = np.where(inside, idx, n_b)
    cell = bin_of + (n_b + 1) * np.arange(chains)[None, :]
    counts = np.bincount(cell.ravel(), minlength=(n_b + 1) * chains).reshape(chains, n_b + 1)
    # visits: a chain's first sample in a bin after a sample elsewhere (samples per visit is the cluster size)
    entered = np.ones_like(bin_of, bool)
    entered[1:] = bin_of[1:] != bin_of[:-1]
    visits = np.bincount(bin_of[entered], minlength=n_b + 1)
    floor = floor_from_counts(counts, kept, np.append(q, max(1.0 - q.sum(), 0.0)), visits=visits)
    err = potential.bin_mass_errors(edges)
    if err is not None:     # the reference's own error is a floor too: the KL of q + err against q
        floor += float((err.ravel() ** 2 / (2 * np.maximum(q, 1e-12))).sum())
    return floor


def kl_sd(potential, theta: np.ndarray, reps: int = 40, seed: int = 0) -> float:
    """The sd of the KL's noise, by resampling whole chains (they are independent; within a chain samples are
    not): a chi-square's sd holds only where every bin expects many effective samples, which slow chains over
    2500 bins do not give. Its noise part is sum_b (p_b - q_b)^2 / (2 q_b); the resamples' spread of that form about
    the sample's own histogram estimates it. (Resampling the KL itself adds the linear term sum (p* - p) log(p / q),
    noise in sparse bins, and made the sd 2.5 times a chi-square's on exact iid draws.) Bins expecting fewer than 5
    samples are left out: a sample there is bias, not noise."""
    kept, chains = theta.shape[:2]
    edges = edges_for(potential)
    q = exact_masses(potential, edges).ravel()
    q = np.maximum(np.append(q, max(1.0 - q.sum(), 0.0)), 1e-12)    # as diagnostics.kl_divergence floors it
    if potential.dim == 1:
        idx = np.digitize(theta[:, :, 0], edges) - 1
        n_b = len(edges) - 1
        inside = (idx >= 0) & (idx < n_b)
    else:
        ix, iy = np.digitize(theta[:, :, 0], edges[0]) - 1, np.digitize(theta[:, :, 1], edges[1]) - 1
        nx, ny = len(edges[0]) - 1, len(edges[1]) - 1
        inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        idx, n_b = ix * ny + iy, nx * ny
    cell = np.where(inside, idx, n_b) + (n_b + 1) * np.arange(chains)[None, :]
    counts = np.bincount(cell.ravel(), minlength=(n_b + 1) * chains).reshape(chains, n_b + 1).astype(float)
    weights = np.random.default_rng(seed).multinomial(chains, np.full(chains, 1.0 / chains), size=reps)
    n = kept * chains
    full = n * q >= 5
    p_hat = counts.sum(axis=0) / n
    p = weights @ counts / n
    noise = ((p[:, full] - p_hat[full]) ** 2 / (2 * q[full])).sum(axis=1)
    return float(noise.std(ddof=1))


def kl_error(potential: Potential, theta: np.ndarray) -> tuple[float, float]:
    """The KL's noise floor (`kl_noise_floor`) and the sd of KL − floor: the KL noise's (`kl_sd`) and the floor
    estimate's (relative sd at most sqrt(2 / (chains - 1)), from the between-chain variance) in quadrature."""
    floor = kl_noise_floor(potential, theta)
    chains = theta.shape[1]
    return floor, float(np.hypot(kl_sd(potential, theta), floor * np.sqrt(2.0 / max(chains - 1, 1))))


FULL_BIN = 20.0   # expected samples above which a bin's KL term is Var(p)/(2q) to within 5 %


def floor_from_counts(counts: np.ndarray, kept: int, q: np.ndarray, kl_floor: float = 1e-12,
                      visits: np.ndarray | None = None) -> float:
    """The noise floor of `kl_noise_floor` from per-chain bin counts (chains, bins) and exact bin masses q (the
    outside bin included), with q floored as `diagnostics.kl_divergence` floors it. visits: each bin's number of
    visits (runs of consecutive samples in it) over all chains, which sets the cluster size of the sparse bins."""
    chains = counts.shape[0]
    n = kept * chains
    var = (counts / kept).var(axis=0, ddof=1) / chains if chains > 1 else q * (1 - q) / n
    full = n * q >= FULL_BIN
    iid = q * (1 - q) / n
    inflation = var[full].sum() / iid[full].sum() if full.any() and iid[full].sum() > 0 else 1.0
    inflation = inflation if np.isfinite(inflation) and inflation > 1 else 1.0
    # A sparse bin is entered on rare excursions, shorter than the bulk's correlation time: its counts are
    # Poisson in visits of (samples per visit) samples each, measured on the sparse bins themselves and capped by
    # the bulk's variance inflation (measured: docs/notes/typed-targets.md).
    sparse = ~full & (q > 0)
    cluster = inflation
    if visits is not None and visits[sparse].sum() > 0:
        cluster = min(inflation, max(1.0, counts.sum(axis=0)[sparse].sum() / visits[sparse].sum()))
    out = float((var[full] / (2 * q[full])).sum())
    return out + _poisson_kl(q[sparse], n / cluster, kl_floor)


EXP_ZERO = -760.0   # np.exp is 0.0 at and below it (tests/test_accuracy_floor.py)


def _poisson_kl(q: np.ndarray, n: float, kl_floor: float) -> float:
    """sum_b E[p log(p / q_b)], p = k / n, k ~ Poisson(n q_b): bins that expect few samples, summed exactly."""
    if not q.size:
        return 0.0
    lam = n * q
    k = np.arange(1, int(lam.max() + 10 * np.sqrt(lam.max()) + 30))
    log_pmf = np.multiply.outer(np.log(lam), k)      # log P(k) per bin, made in place, then P(k)
    log_pmf -= lam[:, None]
    log_pmf -= gammaln(k + 1)
    # exp is exactly 0 below the log of the least subnormal (-745.1), and there ~10x slower than elsewhere: over half
    # of a 2-D histogram's sparse bins and counts (docs/notes/app-frames.md), so left at 0 without calling it
    pmf = np.zeros_like(log_pmf)
    np.exp(log_pmf, out=pmf, where=log_pmf > EXP_ZERO)
    p = k / n
    # p log(p / q_b) = p log p - p log q_b: two products with the Poisson weights, no logarithm per bin and count
    return float(pmf.sum(axis=0) @ (p * np.log(p)) - (pmf @ p) @ np.log(np.maximum(q, kl_floor)))


def outside_box(potential: Potential, theta: np.ndarray) -> float:
    """The share of samples outside the target's box, where the histograms (and so KL and TV) do not look.
    For a target of one or two dimensions the exact law puts next to none there: the box is where exp(-U) has
    fallen below 1e-4 of its peak at every edge (`Potential._check_contained`); in more, the box is only the
    plotted coordinates' window."""
    theta = np.asarray(theta, float).reshape(-1, potential.dim)
    k = min(len(potential.box), potential.dim)
    lo, hi = np.array(potential.box[:k], float).T
    inside = ((theta[:, :k] >= lo) & (theta[:, :k] <= hi)).all(axis=1)
    return float(1.0 - inside.mean()) if theta.shape[0] else 0.0


ESCAPE_ALPHA = 0.01   # the chance, at most, that a run of exact draws of a log-concave target counts one escaped


@lru_cache(256)   # a live run asks again every 100 steps with the same arguments, and scipy's isf is slow
def energy_bound(dim: int, n: int, alpha: float = ESCAPE_ALPHA) -> float:
    """The energy above U's minimum that none of n draws of the target plausibly reaches.

    For a log-concave density exp(-U) on R^d, U(X) - min U is stochastically dominated by Gamma(d, 1)
    (Fradelizi, Madiman & Wang 2016, "Optimal concentration of information content for log-concave
    densities"; the product of d exponentials attains it), so the chance that any of n exact draws lies above
    the Gamma(d, 1) quantile at alpha/n is at most alpha (a union bound). A Gaussian's U - min U is
    Gamma(d/2, 1), well inside it. The targets here that are not log-concave (a ring, two wells) are sums of
    such bumps, whose energies sit below it too; a draw above it is a chain that left the target.
    """
    return float(stats.gamma.isf(alpha / max(int(n), 1), max(int(dim), 1)))


def escaped_chains(potential: Potential, theta: np.ndarray, beta: float = 1.0, alive=None) -> np.ndarray | None:
    """(chains,) bool: the chains whose kept states reach an energy no draw of exp(-beta U) plausibly has,
    beta (U - min U) above `energy_bound` for that many draws. theta: (kept, chains, dim). Chains frozen by the
    divergence guard (alive False) are counted as diverged, not here. None where U is not U of the kept theta
    (a simplex target keeps omega, a view of the state).

    Leaving the box alone does not count: at the box's edge the density is still up to 1e-4 of its peak, and a
    long run of exact draws crosses it (`outside_box` scores that share). A data posterior's U costs a pass
    over the data, more than a minibatch run's steps: there only each chain's last kept state is tested."""
    if getattr(potential, "theta_view", None) is not None:
        return None
    theta = np.asarray(theta, float)
    kept, chains, dim = theta.shape
    if potential.data is not None:
        theta = theta[-1:]
    with np.errstate(all="ignore"):
        u = np.asarray(potential.U_chunked(theta.reshape(-1, dim)), float).reshape(theta.shape[:2])
        # the smaller of the known minimum and the least seen: the energies measured from it are never larger
        u_min = np.nanmin(u) if np.isfinite(u).any() else np.inf
        try:
            known = potential.u_min
        except PotentialError:      # a box the law does not fit: the run is scored elsewhere, counted here
            known = None
        if known is not None:
            u_min = min(u_min, known)
        bad = ~(beta * (u - u_min) <= energy_bound(dim, theta.shape[0] * chains))    # NaN counts
    out = bad.any(axis=0)
    if alive is not None:
        out &= np.asarray(alive, bool)
    return out


KOLMOGOROV_MEAN = float(stats.kstwobign.mean())   # E sup|B(u)| of a Brownian bridge: sqrt(pi/2) log 2


def effective_size(theta: np.ndarray) -> np.ndarray:
    """(dim,) ESS of a (kept, chains, dim) sample; with fewer than 4 kept states the chains count as independent
    draws."""
    theta = np.asarray(theta, float)
    if theta.shape[0] >= 4:
        return dg.ess_per_dim(theta)
    return np.full(theta.shape[2], float(theta.shape[0] * theta.shape[1]))


def marginal_distances(theta: np.ndarray, ess, reference: np.ndarray, reference_ess) -> dict:
    """Per-marginal two-sample KS and Wasserstein-1 distances of samples from a reference sample, with error bars.

    theta (..., dim) and reference (..., dim) are flattened to draws; ess and reference_ess (dim,) are their
    effective sizes, which set the Monte Carlo scale s = sqrt(1/ess + 1/reference_ess) of each marginal. For each
    distance the result holds, per marginal:
    - the value;
    - `_noise`: what an exact sampler of that ESS would show, from the asymptotic laws of the statistics: KS's
      sqrt(n) D -> sup|B(F)| with mean sqrt(pi/2) log 2 (Kolmogorov), W1's sqrt(n) W1 -> int |B(F(x))| dx with
      mean sqrt(2/pi) int sqrt(F(1 - F)) dx (del Barrio, Giné & Matrán 1999, Ann. Probab. 27, Thm 2.1), n the
      combined effective size 1/s^2;
    - `_err`: a bound on the standard deviation of the value, biased sampler or not (to first order): for KS the
      sd of F_n - G_m at one point, at most s/2; for W1 the integral of those sds, s int sqrt(F(1 - F)) dx.
    F is the reference's marginal law.
    """
    theta = np.asarray(theta, float).reshape(-1, np.shape(theta)[-1])
    reference = np.asarray(reference, float).reshape(-1, theta.shape[1])
    s = np.sqrt(1.0 / np.asarray(ess, float) + 1.0 / np.asarray(reference_ess, float))
    u = np.linspace(0.0, 1.0, 401)
    ks, w1, spread = [], [], []
    for i in range(theta.shape[1]):       # a handful of marginals; each is vectorised over the draws
        ks.append(stats.ks_2samp(theta[:, i], reference[:, i], method="asymp").statistic)
        w1.append(stats.wasserstein_distance(theta[:, i], reference[:, i]))
        q = np.quantile(reference[:, i], u)
        mid = 0.5 * (u[1:] + u[:-1])
        spread.append(float((np.sqrt(mid * (1 - mid)) * np.diff(q)).sum()))   # int sqrt(F(1 - F)) dx
    spread = np.array(spread)
    return dict(ks=np.array(ks), ks_noise=KOLMOGOROV_MEAN * s, ks_err=0.5 * s,
                w1=np.array(w1), w1_noise=np.sqrt(2 / np.pi) * s * spread, w1_err=s * spread,
                ess=np.asarray(ess, float), reference_ess=np.asarray(reference_ess, float))
