"""Scoring samples against the exact law of a potential: KL, TV, KS on its plotting box; the share of samples
outside that box; and which chains escaped the target (`escaped_chains`)."""
from __future__ import annotations

import numpy as np
from scipy import stats

from samplers import diagnostics as dg
from samplers.targets.potential import Potential, PotentialError


def edges_for(potential: Potential, bins: int | None = None):
    if potential.dim == 1:
        lo, hi = potential.box[0]
        return np.linspace(lo, hi, (bins or 100) + 1)
    return tuple(np.linspace(lo, hi, (bins or 50) + 1) for lo, hi in potential.box[:2])


def exact_masses(potential: Potential, edges):
    if potential.dim == 1:
        return dg.bin_masses_1d(potential.density_xy, edges)
    return dg.bin_masses_2d(potential.density_xy, *edges)


def score(potential: Potential, theta: np.ndarray, bins: int | None = None) -> dict:
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
        n_bins = masses.size
    ks = []
    for i in range(min(potential.dim, 2)):
        marg = potential.marginals.get(i)
        if marg is None:
            continue
        lo, hi = potential.box[i]
        e = np.linspace(lo, hi, 2001)
        m = dg.bin_masses_1d(marg, e, oversample=4)
        ks.append(dg.ks_distance(theta[:, i], dg.grid_cdf(e, m)))
    if ks:
        out["ks"] = float(max(ks))
    if potential.dim <= 2:
        out["outside"] = outside_box(potential, theta)
    out["n"] = theta.shape[0]
    if potential.dim <= 2:
        out["bins"] = int(n_bins)
    return out


def kl_noise_floor(potential: Potential, theta: np.ndarray, bins: int | None = None) -> float:
    """Expected KL of the histogram from Monte Carlo error alone, sum_b Var(p_b) / (2 q_b).

    theta: (kept, chains, dim). Chains are independent, so Var(p_b) is the between-chain
    variance of each chain's bin fractions over the number of chains: autocorrelation
    within chains is accounted for without modelling it.
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
    cell = np.where(inside, idx, n_b) + (n_b + 1) * np.arange(chains)[None, :]
    counts = np.bincount(cell.ravel(), minlength=(n_b + 1) * chains).reshape(chains, n_b + 1)[:, :n_b]
    frac = counts / kept
    var = frac.var(axis=0, ddof=1) / chains
    keep = q > 0
    return float((var[keep] / (2 * q[keep])).sum())


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
