"""Running an ensemble of chains: stepping, divergence handling, keeping samples.

A large ensemble of a blockwise sampler steps in blocks of chains on a thread pool, each block with its own
generator spawned from the ensemble's seed (numpy releases the GIL inside random generation and ufuncs), so
every core works and each block's temporaries stay in cache. The output is a function of the seed and the
block plan, which depends on the chain count and the number of cores only (`block_plan`); with one block it
is the single-stream run of before. A smaller ensemble is one block, whose normal variates another core
draws ahead over a long enough `advance` or `run` (samplers.prefetch), which changes no bit of it. Design
and measurements: docs/notes/throughput.md.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from samplers.accuracy import escaped_chains
from samplers.diagnostics import DivergenceGuard
from samplers.engine.info import StepInfo
from samplers.errors import InputError
from samplers.prefetch import CHUNK, Float32Normals, NormalsAhead
from samplers.sampler import Sampler
from samplers.stepsize import check_bhat_auto


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


def _cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)   # the cores this process may use (Linux)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


# threads that step blocks: every core (SGMCMC_THREADS overrides; 1 keeps every run on one stream)
WORKERS = int(os.environ.get("SGMCMC_THREADS") or _cores())
PARALLEL_FROM = 8_192    # chains from which blocks on threads beat one stream (docs/notes/throughput.md)
BLOCK_MAX = 16_384       # float64 chains per block at most: a block's temporaries stay in the core's cache
                         # (float32: twice as many, the same bytes)
AHEAD_FROM = 8 * CHUNK   # state entries x steps from which one stream's normals are drawn ahead (a chunk or
                         # two are drawn in vain at the end)
AHEAD_DTYPES = ("float64",)   # float32 normals cost less than handing them over between threads at the sizes one
                              # stream steps: drawn ahead, 10^3 float32 chains stepped slower (docs/notes/throughput.md)
DTYPES = ("float64", "float32")   # the state's precision; the engine computes in float64 either way
_POOLS: dict = {}   # by process id: a forked child (the lab's trials, the ladder) has none of its parent's threads


def block_plan(chains: int, workers: int | None = None, dtype="float64") -> list[slice]:
    """The blocks an ensemble of `chains` steps in: one below PARALLEL_FROM chains or on one core, else a
    multiple of the worker count of near-equal blocks of at most BLOCK_MAX float64 chains' bytes (float32:
    2 BLOCK_MAX chains; half as many blocks, so half the Python and thread hand-overs per chain-step)."""
    workers = WORKERS if workers is None else workers
    if workers < 2 or chains < PARALLEL_FROM:
        return [slice(0, chains)]
    most = BLOCK_MAX * 8 // np.dtype(dtype).itemsize
    return even_blocks(chains, workers * -(-chains // (workers * most)))


def even_blocks(chains: int, k: int) -> list[slice]:
    bounds = [i * chains // k for i in range(k + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def block_streams(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    """k generators spawned from rng's SeedSequence, on SFC64: its normal variates cost 7.0 ns against
    PCG64's 8.6, and they are most of a step (docs/notes/throughput.md). One block keeps the ensemble's PCG64
    stream, so small runs (and tests/golden) are what they were."""
    return [np.random.Generator(np.random.SFC64(seq)) for seq in rng.bit_generator.seed_seq.spawn(k)]


def check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.name not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return dt


def pool() -> ThreadPoolExecutor:
    pid = os.getpid()
    if pid not in _POOLS:
        _POOLS[pid] = ThreadPoolExecutor(WORKERS, thread_name_prefix="chain-blocks")
    return _POOLS[pid]


class Ensemble:
    """Many chains of one sampler, advanced together; diverged chains are frozen and counted.

    blocks: how many chain blocks (each with its own generator) a step runs in; None: `block_plan`, for a
    sampler that steps chains independently (`Sampler.blockwise`), else one. Equal seeds and block counts
    give equal runs, on any number of threads.

    dtype: "float64", or "float32": the state is kept in float32 and steps draw float32 normals made from the
    generator's raw words (samplers.prefetch.Float32Normals: another stream); the start is the float64 one,
    rounded. A fast path computes in float32, the
    engine in float64 from the float32 state and normals, its result rounded to float32 every step."""

    def __init__(self, sampler: Sampler, chains: int, seed: int = 0, theta0=None, bound: float = 1e6,
                 engine: bool = False, blocks: int | None = None, dtype="float64"):
        self.sampler, self.seed, self.engine = sampler, int(seed), engine
        self.dtype = check_dtype(dtype)
        self.rng = np.random.default_rng(self.seed)
        self.z = sampler.init_state(chains, self.rng, theta0).astype(self.dtype, copy=False)
        if sampler.blockwise:   # column-major: a step's ufuncs run over contiguous columns (theta, r, xi)
            self.z = np.asfortranarray(self.z)
        n = self.z.shape[0]
        if blocks is None:
            self.blocks = block_plan(n, dtype=self.dtype) if sampler.blockwise else [slice(0, n)]
        elif blocks < 1 or (blocks > 1 and not sampler.blockwise):
            raise ValueError(f"{sampler.name} with {sampler.oracle.describe()} does not step in blocks" if blocks > 1
                             else f"need at least one block, got {blocks}")
        else:
            self.blocks = even_blocks(n, min(int(blocks), n))
        # one block steps on the ensemble's own stream; several on streams spawned from its seed
        self.rngs = [self.rng] if len(self.blocks) == 1 else block_streams(self.rng, len(self.blocks))
        self._streams = self.rngs if self.dtype == np.float64 else [Float32Normals(r) for r in self.rngs]
        self._draws = self._own = self._streams[0]   # what steps draw from: that, or its normals drawn ahead
        self.guard = DivergenceGuard(n, bound)
        self.stats = RunStats()
        self.t = 0
        self._stepper = self._stepper_key = None   # see `stepper`

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

    def advance(self, steps: int = 1, each=None, ahead: bool = True) -> np.ndarray:
        """Advance `steps` steps. each: called as each(z) with the state after every step (the lab records its
        paths and histograms from them), a state that a later step may reuse: copy what is kept. ahead: whether
        the normals may be drawn ahead on another core (`drawing_ahead`)."""
        step = self.sampler.engine_step if self.engine else self.stepper()
        steps = int(steps)
        if len(self.blocks) > 1:
            if each is None:
                return self._advance_blocks(step, steps)
            for _ in range(steps):   # blocks take all their steps in one go: a step at a time, each sees every state
                each(self._advance_blocks(step, 1))
            return self.z
        with self.drawing_ahead(steps) if ahead else nullcontext(), np.errstate(all="ignore"):   # overflow: the guard's
            rng, record, guard, dtype, every = self._draws, self.stats.record, self.guard, self.dtype, slice(None)
            limit = guard.quick_limit(self.z)
            for _ in range(steps):   # a small ensemble's step is mostly Python: this loop's is kept to the least
                self.t += 1
                new, info = step(self.z, rng, self.t)
                record(info)
                if new.dtype != dtype:
                    new = new.astype(dtype)
                # the guard's common case without its calls (limit: see quick_limit), else the guard
                if limit is None or not guard._none_frozen or not (flat := new.ravel("K")).dot(flat) <= limit:
                    new = guard.apply_rows(every, self.z, new, guard.step)
                self.z = new
                guard.step += 1
                if each is not None:
                    each(new)
        return self.z

    def stepper(self):
        """The sampler's `stepper` for this state's dtype (fixed for the ensemble), prepared once and kept across
        `advance` calls while the sampler and its `stepper_key` are what they were: the lab advances a run a step
        at a time, and preparing costs ~15 us a call (docs/notes/throughput.md)."""
        key = (self.sampler, self.sampler.stepper_key())
        try:
            same = key == self._stepper_key
        except ValueError:   # a parameter set to an array (not one `coerce` gives): compared as changed
            same = False
        if not same:
            self._stepper, self._stepper_key = self.sampler.stepper(self.dtype), key
        return self._stepper

    @contextmanager
    def drawing_ahead(self, steps: int):
        """While open, one stream's normal variates for the next `steps` steps are drawn on another core
        ahead of the steps that use them (samplers.prefetch), when there is a core to spare and enough to
        draw; the run is the same bits either way. `run` holds it open across its `advance` calls."""
        if (self._draws is not self._own or len(self.blocks) > 1 or WORKERS < 2 or not self.sampler.blockwise
                or steps * self.z.size < AHEAD_FROM or self.dtype.name not in AHEAD_DTYPES):
            yield
            return
        self._draws = NormalsAhead(self._own)
        try:
            yield
        finally:
            self._draws.close()
            self._draws = self._own

    def _advance_blocks(self, step, steps: int) -> np.ndarray:
        """Every step of a block in one go, blocks taken in turn by the workers: chains do not interact, so a
        block needs no other between its steps, and its state stays in its core's cache. Each worker takes
        the next block left until none is, so a core slowed by another process takes fewer."""
        new = np.empty_like(self.z, order="F")
        t0, g0, guard, dtype = self.t, self.guard.step, self.guard, self.dtype
        infos = [None] * len(self.blocks)
        todo = iter(range(len(self.blocks)))   # next() on it holds the GIL: each block goes to one worker

        def work(_=None):
            with np.errstate(all="ignore"):
                for i in todo:
                    rows, rng, got = self.blocks[i], self._streams[i], []
                    zb = self.z[rows]
                    limit = guard.quick_limit(zb)
                    for k in range(steps):
                        nb, info = step(zb, rng, t0 + k + 1)
                        if nb.dtype != dtype:
                            nb = nb.astype(dtype)
                        got.append(info)
                        if limit is not None and guard._none_frozen:   # as in `advance`
                            flat = nb.ravel(order="K")
                            if flat.dot(flat) <= limit:
                                zb = nb
                                continue
                        zb = guard.apply_rows(rows, zb, nb, g0 + k)
                    new[rows], infos[i] = zb, got

        if self.engine:   # the reference, not a hot path: its blocks run in turn (the output is the same)
            work()
        else:
            list(pool().map(work, range(min(WORKERS, len(self.blocks)))))
        for per_block in zip(*infos):
            self.stats.record(merge_infos(per_block))
        self.t, guard.step, self.z = t0 + steps, g0 + steps, new
        return self.z


def merge_infos(infos) -> StepInfo:
    """The blocks' reports as one: per-chain arrays concatenated in block order."""
    first = infos[0]
    if first.accepted is None and first.energy_error is None:
        return first
    join = lambda name: None if getattr(first, name) is None else np.concatenate([getattr(i, name) for i in infos])
    return StepInfo(first.grad_evals, join("accepted"), join("energy_error"))


@dataclass
class RunResult:
    theta: np.ndarray                 # (kept, chains, dim)
    z: np.ndarray                     # final full state (chains, n)
    diverged: int
    alive: np.ndarray                 # (chains,)
    meta: dict = field(default_factory=dict)
    aux: np.ndarray | None = None     # (kept, chains, n_aux) when asked for
    stats: RunStats = field(default_factory=RunStats)
    escaped: int = 0                  # chains alive but at an energy no draw of the target plausibly has
    escaped_mask: np.ndarray | None = None   # (chains,) which, or None where it cannot be told (accuracy.py)


def run(sampler: Sampler, steps: int, chains: int = 1000, burn: int = 0, thin: int = 1, seed: int = 0,
        theta0=None, keep_aux: bool = False, engine: bool = False, progress=None,
        blocks: int | None = None, dtype="float64") -> RunResult:
    """Advance `chains` chains for burn + steps steps, keeping every `thin`-th state after burn-in (kept in
    `dtype`, the ensemble's: see `Ensemble`)."""
    if steps < 1 or burn < 0 or thin < 1:
        raise InputError(f"need steps >= 1, burn >= 0, thin >= 1 (got steps {steps}, burn {burn}, thin {thin})")
    ens = Ensemble(sampler, chains, seed, theta0, engine=engine, blocks=blocks, dtype=dtype)
    check_bhat_auto(sampler, ens.z, seed)     # a step size that Bhat=auto cannot take: now, not midway
    kept = steps // thin
    theta = np.empty((kept, ens.z.shape[0], sampler.dim), ens.dtype)
    aux = np.empty((kept, ens.z.shape[0], ens.z.shape[1] - sampler.dim), ens.dtype) if keep_aux else None
    with ens.drawing_ahead(burn + kept * thin):
        ens.advance(burn)
        for k in range(kept):
            ens.advance(thin)
            theta[k] = ens.theta
            if keep_aux:
                aux[k] = ens.aux
            if progress is not None:
                progress(k + 1, kept)
    alive = ens.guard.alive.copy()
    escaped = escaped_chains(sampler.potential, theta, sampler.beta, alive) if kept else None
    n_escaped = 0 if escaped is None else int(escaped.sum())
    meta = dict(sampler=sampler.name, potential=sampler.potential.name, params=sampler.params,
                gradient=sampler.oracle.describe(), seed=int(seed), chains=int(chains), steps=int(steps),
                burn=int(burn), thin=int(thin), diverged=ens.n_diverged)
    if ens.dtype != np.float64:   # written only when not float64: the goldens' bytes
        meta["dtype"] = str(ens.dtype)
    if n_escaped:   # written only when there are any: a file without the key has none (the goldens' bytes)
        meta["escaped"] = n_escaped
    return RunResult(theta, ens.z, ens.n_diverged, alive, meta, aux, ens.stats, n_escaped, escaped)
