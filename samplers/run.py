"""Running an ensemble of chains: stepping, divergence handling, keeping samples."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from samplers.diagnostics import DivergenceGuard
from samplers.engine.info import StepInfo
from samplers.sampler import Sampler


@dataclass
class RunStats:
    """What the steps of a run reported: gradient evaluations, and for samplers with a Metropolis
    test the proposals and each chain's acceptances."""
    steps: int = 0
    grad_evals: int = 0                     # per chain
    proposals: int = 0
    accepted: np.ndarray | None = None      # (chains,) accepted proposals
    last: np.ndarray | None = None          # (chains,) whether the last proposal was accepted

    def record(self, info: StepInfo):
        self.steps += 1
        self.grad_evals += info.grad_evals
        if info.accepted is not None:
            if self.accepted is None:
                self.accepted = np.zeros(info.accepted.shape, int)
            self.proposals += 1
            self.accepted += info.accepted
            self.last = info.accepted

    @property
    def acceptance_rate(self) -> float:
        """Fraction of all proposals accepted, over chains and steps (NaN without a Metropolis test)."""
        if not self.proposals:
            return float("nan")
        return float(self.accepted.sum() / (self.proposals * self.accepted.size))

    @property
    def per_chain(self) -> np.ndarray | None:
        return None if self.accepted is None else self.accepted / max(self.proposals, 1)


class Ensemble:
    """Many chains of one sampler, advanced together; diverged chains are frozen and counted."""

    def __init__(self, sampler: Sampler, chains: int, seed: int = 0, theta0=None, bound: float = 1e6,
                 engine: bool = False):
        self.sampler, self.seed, self.engine = sampler, int(seed), engine
        self.rng = np.random.default_rng(self.seed)
        self.z = sampler.init_state(chains, self.rng, theta0)
        self.guard = DivergenceGuard(self.z.shape[0], bound)
        self.stats = RunStats()
        self.t = 0

    @property
    def theta(self) -> np.ndarray:
        """What a run keeps: theta, or the potential's view of it (omega for simplex targets)."""
        theta = self.z[:, : self.sampler.dim]
        view = getattr(self.sampler.potential, "theta_view", None)
        return theta if view is None else view(theta)

    @property
    def aux(self) -> np.ndarray:
        return self.z[:, self.sampler.dim:]

    @property
    def n_diverged(self) -> int:
        return self.guard.n_diverged

    def advance(self, steps: int = 1) -> np.ndarray:
        step = self.sampler.engine_step if self.engine else self.sampler.step
        for _ in range(int(steps)):
            self.t += 1
            with np.errstate(all="ignore"):   # overflow is caught below, per chain
                new, info = step(self.z, self.rng, self.t)
            self.stats.record(info)
            self.z = self.guard.apply(self.z, new)
        return self.z


@dataclass
class RunResult:
    theta: np.ndarray                 # (kept, chains, dim)
    z: np.ndarray                     # final full state (chains, n)
    diverged: int
    alive: np.ndarray                 # (chains,)
    meta: dict = field(default_factory=dict)
    aux: np.ndarray | None = None     # (kept, chains, n_aux) when asked for
    stats: RunStats = field(default_factory=RunStats)


def run(sampler: Sampler, steps: int, chains: int = 1000, burn: int = 0, thin: int = 1, seed: int = 0,
        theta0=None, keep_aux: bool = False, engine: bool = False, progress=None) -> RunResult:
    """Advance `chains` chains for burn + steps steps, keeping every `thin`-th state after burn-in."""
    if steps < 1 or burn < 0 or thin < 1:
        raise ValueError("need steps >= 1, burn >= 0, thin >= 1")
    ens = Ensemble(sampler, chains, seed, theta0, engine=engine)
    ens.advance(burn)
    kept = steps // thin
    theta = np.empty((kept, ens.z.shape[0], sampler.dim))
    aux = np.empty((kept, ens.z.shape[0], ens.z.shape[1] - sampler.dim)) if keep_aux else None
    for k in range(kept):
        ens.advance(thin)
        theta[k] = ens.theta
        if keep_aux:
            aux[k] = ens.aux
        if progress is not None:
            progress(k + 1, kept)
    meta = dict(sampler=sampler.name, potential=sampler.potential.name, params=sampler.params,
                gradient=sampler.oracle.describe(), seed=int(seed), chains=int(chains), steps=int(steps),
                burn=int(burn), thin=int(thin), diverged=ens.n_diverged)
    return RunResult(theta, ens.z, ens.n_diverged, ens.guard.alive.copy(), meta, aux, ens.stats)
