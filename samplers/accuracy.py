"""Scoring samples against the exact law of a potential: KL, TV, KS on its plotting box."""
from __future__ import annotations

import numpy as np

from samplers import diagnostics as dg
from samplers.targets.potential import Potential


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
