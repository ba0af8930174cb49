"""Chain-steps per second of the fast paths and the generic engine, against the RNG floor.

The floor of a sampler is numpy's normal-variate rate divided by the number of normal
variates one chain-step draws (gradient noise plus injected noise): no step can be faster
than drawing its random numbers. All figures come from one run, so they are comparable.

    python benchmarks/sampler_speed.py [--quick]
    python benchmarks/sampler_speed.py --blocks   # one stream vs two blocks on threads: PARALLEL_FROM
    python benchmarks/sampler_speed.py --cpu      # CPU ns per chain-step: where the time goes, on one core
    python benchmarks/sampler_speed.py --ahead    # one stream with and without its normals drawn ahead

--blocks times `Ensemble.advance` with one block and with two (one per core) at chain counts around the
threshold of samplers.run, a step per call (the lab) and 50 per call (runs), in interleaved rounds.
--ahead times one block's `advance(steps)` with its normals drawn ahead on the other core (samplers.prefetch)
and without, below the threshold, in interleaved rounds; cpu/wall shows how much of a second core it took.
"""
from __future__ import annotations

import sys
import time
from functools import partial

import numpy as np

from samplers.registry import build_sampler
from samplers.run import Ensemble
from samplers.targets.presets import get_potential


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def normal_rate(n, repeat):
    rng = np.random.default_rng(0)
    steps = max(1, 200000 // n)
    return n * steps / best_time(lambda: [rng.standard_normal((n, 1)) for _ in range(steps)], repeat)


def step_rate(sampler, chains, engine, repeat):
    rng = np.random.default_rng(1)
    z = sampler.init_state(chains, rng)
    step = sampler.engine_step if engine else sampler.step
    steps = max(2, 200000 // chains)

    def go():
        nonlocal z
        for t in range(steps):
            z, _ = step(z, rng, t + 1)
    go()  # warm up (sympy lambdify caches, allocations)
    return chains * steps / best_time(go, repeat)


def main(quick: bool = False):
    pot = get_potential("gaussian")
    sizes = [10 ** 3, 10 ** 4, 10 ** 5] if quick else [10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6]
    repeat = 2 if quick else 5
    # normal variates per chain-step on a 1-D target with gradient noise: one for the noise, one injected
    draws = {"sgld": 2, "sghmc": 2, "sgnht": 2}
    print(f"{'sampler':8s} {'chains':>8s} {'steps/s':>12s} {'floor':>12s} {'of floor':>9s} {'engine/fast':>12s}")
    for name, k in draws.items():
        s = build_sampler(name, pot, V=1.0)
        for n in sizes:
            floor = normal_rate(n, repeat) / k
            fast = step_rate(s, n, False, repeat)
            eng = step_rate(s, n, True, repeat)
            print(f"{name:8s} {n:8d} {fast:12.3e} {floor:12.3e} {fast / floor:9.2f} {eng / fast:12.2f}")


def blocks(rounds: int = 7):
    pot = get_potential("gaussian")
    print(f"{'sampler':8s} {'chains':>8s} {'per call':>9s} {'1 block':>11s} {'2 blocks':>11s} {'2 / 1':>6s}")
    for name in ("sgld", "sghmc", "sgnht"):
        s = build_sampler(name, pot, V=1.0)
        for n in (1000, 2000, 5000, 10_000, 20_000, 50_000):
            for per_call in (1, 50):
                ens = {k: Ensemble(s, n, seed=1, blocks=k) for k in (1, 2)}
                calls = max(2, 400_000 // (n * per_call))
                best = dict.fromkeys(ens, np.inf)
                for _ in range(rounds):
                    for k, e in ens.items():
                        go = lambda e=e, p=per_call, c=calls: [e.advance(p) for _ in range(c)]
                        best[k] = min(best[k], best_time(go, 1))
                rate = {k: n * per_call * calls / v for k, v in best.items()}
                print(f"{name:8s} {n:8d} {per_call:9d} {rate[1]:11.3e} {rate[2]:11.3e} {rate[2] / rate[1]:6.2f}",
                      flush=True)


def ahead(rounds: int = 5):
    from samplers import run as R
    pot = get_potential("gaussian")
    print(f"{'sampler':8s} {'chains':>8s} {'steps':>6s} {'one stream':>11s} {'ahead':>11s} {'ratio':>6s} "
          f"{'cpu/wall':>9s}")
    for name in ("sgld", "sghmc", "sgnht"):
        s = build_sampler(name, pot, V=1.0)
        for n in (1000, 2000, 4000, 8000):
            steps = 2_000_000 // n
            ens = Ensemble(s, n, seed=1, blocks=1)
            wall, cpu_used = {}, {}
            for _ in range(rounds):
                for key, at in (("one", 10 ** 18), ("ahead", 0)):
                    R.AHEAD_FROM = at
                    w, c = time.perf_counter(), time.process_time()
                    ens.advance(steps)
                    w, c = time.perf_counter() - w, time.process_time() - c
                    if w < wall.get(key, np.inf):
                        wall[key], cpu_used[key] = w, c
            rate = {k: n * steps / v for k, v in wall.items()}
            print(f"{name:8s} {n:8d} {steps:6d} {rate['one']:11.3e} {rate['ahead']:11.3e} "
                  f"{rate['ahead'] / rate['one']:6.2f} {cpu_used['ahead'] / wall['ahead']:9.2f}", flush=True)


def cpu(rounds: int = 5):
    """CPU time per chain-step on one thread (robust to other processes): the two normal variates, one
    block (a whole-array step), and the block plan of a 2-core machine stepped in turn on one worker."""
    from samplers import run as R
    pot = get_potential("gaussian")

    def per(fn, steps, chains):
        best = np.inf
        for _ in range(rounds):
            t0 = time.process_time()
            fn(steps)
            best = min(best, time.process_time() - t0)
        return best / (steps * chains) * 1e9

    R.WORKERS = 1   # one worker: the blocks run in turn, so process time is one core's
    print("ns of CPU per chain-step; 2 normals: drawn by the ensemble's PCG64 (one block) and SFC64 (blocks)")
    print(f"{'sampler':8s} {'chains':>8s} {'2 normals':>10s} {'one block':>10s} {'blocks':>7s} {'2 normals':>10s}"
          f" {'in blocks':>10s}")
    for name in ("sgld", "sghmc", "sgnht"):
        s = build_sampler(name, pot, V=1.0)
        for n in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6):
            steps = max(5, 1_000_000 // n)
            pcg = partial(normals, np.random.default_rng(0), np.empty(2 * n))
            sfc = partial(normals, R.block_streams(np.random.default_rng(0), 1)[0], np.empty(2 * n))
            k = len(R.block_plan(n, 2))
            one, blocked = Ensemble(s, n, seed=1, blocks=1), Ensemble(s, n, seed=1, blocks=k)
            one.advance(2)
            blocked.advance(2)
            print(f"{name:8s} {n:8d} {per(pcg, steps, n):10.1f} {per(one.advance, steps, n):10.1f} {k:7d} "
                  f"{per(sfc, steps, n):10.1f} {per(blocked.advance, steps, n):10.1f}", flush=True)


def normals(rng, buf, steps):
    for _ in range(steps):
        rng.standard_normal(out=buf)


if __name__ == "__main__":
    if "--cpu" in sys.argv:
        cpu()
        sys.exit()
    if "--ahead" in sys.argv:
        ahead()
    elif "--blocks" in sys.argv:
        blocks()
    else:
        main("--quick" in sys.argv)
