"""A reference sample of a target of more than two parameters: a long exact run (HMC with its Metropolis test),
its effective sample size, kept in memory and on disk, so that samples can be scored against it marginal by
marginal (`accuracy.marginal_distances`: KS and Wasserstein with error bars from both sides' ESS).

Targets of one or two parameters are scored against their exact law by quadrature instead (`accuracy.score`).
The run's settings are part of the cache key, with the potential's name and a hash of its data: a changed data
set or setting is never served an old sample. The cache directory is $SGMCMC_CACHE, else ~/.cache/sgmcmc-lab.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from samplers import diagnostics as dg
from samplers.cache import BoundedCache
from samplers.errors import InputError
from samplers.registry import build_sampler
from samplers.run import Ensemble

CHAINS = 16
KEPT = 600           # per chain, one per proposal
BURN = 200           # proposals from the mode before any is kept
LEAPFROG = 10
ACCEPT = (0.6, 0.95) # the step size is halved below, grown above, in the pilot
MAX_WORK = 2e11      # chains x gradients x data points x dim beyond which no reference is run
_MEMORY = BoundedCache(8)


class ReferenceError(InputError):
    pass


@dataclass(frozen=True)
class Reference:
    theta: np.ndarray      # (kept, chains, dim)
    ess: np.ndarray        # (dim,)
    eps: float             # HMC's step size
    acceptance: float
    path: str              # where it is cached on disk ('' if not)

    @property
    def draws(self) -> np.ndarray:
        return self.theta.reshape(-1, self.theta.shape[-1])


def cache_dir() -> Path:
    return Path(os.environ.get("SGMCMC_CACHE") or Path.home() / ".cache" / "sgmcmc-lab") / "reference"


def _fingerprint(potential, seed: int, kept: int, chains: int) -> str:
    h = hashlib.sha256(f"{potential.name}|{potential.dim}|{seed}|{kept}|{chains}|{BURN}|{LEAPFROG}".encode())
    data = potential.data
    for key, value in sorted(vars(data).items() if data is not None else ()):
        if isinstance(value, np.ndarray):
            h.update(key.encode() + np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (int, float, str)):
            h.update(f"{key}={value}".encode())
    if potential.start is not None:
        h.update(np.asarray(potential.start, float).tobytes())
    return h.hexdigest()[:24]


def can_reference(potential) -> str:
    """'' if a reference run is affordable and meaningful for this target, else why not."""
    if getattr(potential, "theta_view", None) is not None:
        return "a simplex target is scored in its own parametrisation"
    n = potential.data.n if potential.data is not None else 1
    work = CHAINS * (KEPT + BURN) * (LEAPFROG + 1) * n * potential.dim
    if work > MAX_WORK:
        return f"an exact run on {potential.dim} parameters and {n} data points would take too long"
    return ""


def reference_sample(potential, seed: int = 0, kept: int = KEPT, chains: int = CHAINS, store: bool = True
                     ) -> Reference:
    """The target's reference sample: from memory, from disk, or run now (seconds to minutes)."""
    why = can_reference(potential)
    if why:
        raise ReferenceError(f"no reference sample for '{potential.name}': {why}")
    key = _fingerprint(potential, seed, kept, chains)
    return _MEMORY.get_or_make(key, lambda: _load_or_run(potential, key, seed, kept, chains, store))


def _load_or_run(potential, key, seed, kept, chains, store) -> Reference:
    path = cache_dir() / f"{key}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as f:
                return Reference(f["theta"], f["ess"], float(f["eps"]), float(f["acceptance"]), str(path))
        except (OSError, ValueError, KeyError):
            pass                     # a damaged file is run again and replaced
    ref = exact_run(potential, seed, kept, chains)
    if not store:
        return ref
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, theta=ref.theta, ess=ref.ess, eps=ref.eps, acceptance=ref.acceptance)
        os.replace(tmp, path)
    except OSError:
        return ref                   # a read-only home: the sample is still good, only not kept
    return Reference(ref.theta, ref.ess, ref.eps, ref.acceptance, str(path))


def exact_run(potential, seed: int = 0, kept: int = KEPT, chains: int = CHAINS) -> Reference:
    """HMC with the Metropolis test from the target's start (its mode, for the data posteriors), its step size
    tuned in a pilot to an acceptance rate within ACCEPT, then BURN proposals dropped and `kept` kept per chain."""
    hmc = build_sampler("hmc", potential, L=LEAPFROG)
    eps = float(hmc.params["eps"])
    start = np.zeros(potential.dim) if potential.start is None else np.asarray(potential.start, float)
    rate = np.nan
    for _ in range(12):
        hmc.params["eps"] = eps
        ens = _ensemble(hmc, chains, seed, start, eps)
        ens.advance(40)
        rate = ens.stats.acceptance_rate
        if rate < ACCEPT[0]:
            eps /= 2
        elif rate > ACCEPT[1]:
            eps *= 1.5
        else:
            break
    ens = _ensemble(hmc, chains, seed + 1, start, eps)
    ens.advance(BURN)
    theta = np.empty((kept, chains, potential.dim))
    for k in range(kept):
        ens.advance(1)
        theta[k] = ens.theta
    return Reference(theta, dg.ess_per_dim(theta), eps, float(ens.stats.acceptance_rate), "")


def _ensemble(hmc, chains, seed, start, eps) -> Ensemble:
    ens = Ensemble(hmc, chains, seed)
    ens.z[:, : hmc.dim] = start + eps * ens.rng.standard_normal((chains, hmc.dim))
    return ens
