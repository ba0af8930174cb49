"""Chain-steps per second of this project and of BlackJAX, side by side, on this machine's CPU, each in
float64 and in float32.

SGLD, SGHMC and SGNHT on the 1-D Gaussian with simulated gradient noise V = 1 (grad U~ = theta + N(0, 1)),
at each sampler's default step, for 10^3 to 10^6 independent chains. This project: `Ensemble.advance`,
what runs and the lab step (divergence guard included; chain blocks on every core from the threshold of
samplers.run on, below it one stream whose normals the other core draws ahead), with dtype float64 and
float32. BlackJAX: `blackjax.sgmcmc.diffusions` under `jax.jit` + `lax.scan` on the CPU, in float64 and in
JAX's default float32, at its best: XLA is given one CPU device per core, and each configuration runs both
on one device (XLA's own threads) and with the chains sharded over all devices (one scan per core); the
faster of the two, warm (compiled, called once), best of the rounds. SGLD and SGHMC step the whole ensemble
as one array (their chains do not interact); SGNHT's thermostat is one scalar per state, so its diffusion
is vmapped over chains, each with its own key. Every round runs all configurations in turn (interleaved),
so a busy machine slows all alike; the ratios are within one run.

floor: the rate at which all cores (one thread and generator each, of the kind chain blocks use) draw the
two float64 normal variates one chain-step needs; "of floor" is this project's float64 share of it.

Needs the optional `bench` extra (`pip install -e .[bench]`); it installs nothing itself.

    python benchmarks/vs_blackjax.py [--rounds 5] [--sizes 1000,10000] [--samplers sgld,sghmc]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from samplers.registry import build_sampler
from samplers.run import Ensemble, block_plan, block_streams
from samplers.targets.presets import get_potential

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
SAMPLERS = ("sgld", "sghmc", "sgnht")
SIZES = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)


def steps_for(chains: int) -> int:
    return max(6, 3_000_000 // chains)


def timed(fn) -> tuple[float, float]:
    """Wall time and process CPU time (every thread) of one call."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


# -- this project ------------------------------------------------------------------
def project_runner(name: str, chains: int, dtype: str = "float64"):
    s = build_sampler(name, get_potential("gaussian"), V=1.0)
    ens = Ensemble(s, chains, seed=1, dtype=dtype)
    steps = steps_for(chains)
    ens.advance(2)   # warm up (threads, caches)
    return lambda: ens.advance(steps)


def floor_runner(chains: int):
    """Two normal variates per chain-step, drawn on all cores into preallocated buffers."""
    workers = CORES
    steps = steps_for(chains)
    parts = np.array_split(np.arange(2 * chains), workers)
    bufs = [np.empty(len(p)) for p in parts]
    gens = block_streams(np.random.default_rng(0), workers)   # the generators chain blocks draw from
    pool = ThreadPoolExecutor(workers)

    def draw(i):
        for _ in range(steps):
            gens[i].standard_normal(out=bufs[i])

    return lambda: list(pool.map(draw, range(workers)))


# -- BlackJAX ----------------------------------------------------------------------
def blackjax_runner(name: str, chains: int, x64: bool, sharded: bool = False):
    import jax
    enable_x64 = getattr(jax, "enable_x64", None)
    if enable_x64 is None:   # before jax 0.8 it was experimental
        from jax.experimental import enable_x64
    with enable_x64(x64):   # jit caches by this flag: compile and call under it
        go, init, key = _blackjax_scan(name, chains)
        if sharded:   # the chain axis split over the CPU devices: each runs its part of the scan
            from jax.sharding import Mesh, NamedSharding, PartitionSpec
            mesh = Mesh(np.array(jax.devices()), ("chains",))
            init = jax.device_put(init, NamedSharding(mesh, PartitionSpec("chains")))
        jax.block_until_ready(go(init, key))   # compile
        jax.block_until_ready(go(init, key))   # warm

    def call():
        with enable_x64(x64):
            jax.block_until_ready(go(init, key))
    return call


def _blackjax_scan(name: str, chains: int):
    import jax
    import jax.numpy as jnp
    from blackjax.sgmcmc import diffusions

    steps = steps_for(chains)
    key = jax.random.key(0)
    theta = jax.random.normal(key, (chains,)) * 0.5

    def grad_logdensity(x, k):   # -grad U~ = -(x + N(0, V)), V = 1
        return -(x + jax.random.normal(k, x.shape, x.dtype))

    if name == "sgld":
        step = diffusions.overdamped_langevin()

        def body(carry, k):
            kg, kn = jax.random.split(k)
            return step(kn, carry, grad_logdensity(carry, kg), 0.01), None
        init = theta
    elif name == "sghmc":
        step = diffusions.sghmc(alpha=1.0)

        def body(carry, k):
            x, r = carry
            kg, kn = jax.random.split(k)
            return step(kn, x, r, grad_logdensity(x, kg), 0.05), None
        init = (theta, jax.random.normal(jax.random.key(1), (chains,)))
    else:
        step = jax.vmap(diffusions.sgnht(alpha=1.0), in_axes=(0, 0, 0, 0, 0, None))

        def body(carry, k):
            x, r, xi = carry
            kg, kn = jax.random.split(k)
            return step(jax.random.split(kn, chains), x, r, xi, grad_logdensity(x, kg), 0.02), None
        init = (theta, jax.random.normal(jax.random.key(1), (chains,)), jnp.ones(chains))

    @jax.jit
    def go(carry, k):
        return jax.lax.scan(body, carry, jax.random.split(k, steps))[0]

    return go, init, key


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    args = ap.parse_args()
    if importlib.util.find_spec("blackjax") is None:
        sys.exit("benchmarks/vs_blackjax.py needs BlackJAX: pip install -e .[bench]")
    # one XLA CPU device per core, before jax is imported: the sharded BlackJAX runs put one scan on each
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={CORES}"
    import blackjax
    import jax

    print(f"chain-steps/s, best of {args.rounds} interleaved rounds; {CORES} cores, {len(jax.devices())} XLA CPU "
          f"devices; BlackJAX {blackjax.__version__}, jax {jax.__version__}, numpy {np.__version__}; "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    print("blocks: the project's chain blocks in float64/float32")
    print("BJ: BlackJAX's best of one device and sharded over all (which one: 1 or s); ratio: project / BJ, "
          "same precision; ns: each one's least process CPU (all threads) per chain-step over the rounds, "
          "which another process's load moves less")
    print(f"{'sampler':8s}{'chains':>9s}{'blocks':>7s}{'proj f64':>11s}{'BJ f64':>13s}{'ratio':>7s}"
          f"{'proj f32':>11s}{'BJ f32':>13s}{'ratio':>7s}{'of floor':>9s}"
          f"{'ns p64':>8s}{'BJ64':>8s}{'p32':>8s}{'BJ32':>8s}")
    for name in args.samplers.split(","):
        for chains in map(int, args.sizes.split(",")):
            runs = {"p64": project_runner(name, chains), "p32": project_runner(name, chains, "float32"),
                    "bj64": blackjax_runner(name, chains, True), "bj64s": blackjax_runner(name, chains, True, True),
                    "bj32": blackjax_runner(name, chains, False),
                    "bj32s": blackjax_runner(name, chains, False, True), "floor": floor_runner(chains)}
            best, cpu = dict.fromkeys(runs, np.inf), dict.fromkeys(runs, np.inf)
            for _ in range(args.rounds):
                for key, fn in runs.items():
                    wall, used = timed(fn)
                    best[key], cpu[key] = min(best[key], wall), min(cpu[key], used)
            rate = {k: chains * steps_for(chains) / v for k, v in best.items()}
            ns = {k: 1e9 * v / (chains * steps_for(chains)) for k, v in cpu.items()}
            bj = {}
            for p in ("64", "32"):
                one, sharded = rate["bj" + p], rate["bj" + p + "s"]
                bj[p] = (max(one, sharded), "s" if sharded > one else "1", min(ns["bj" + p], ns["bj" + p + "s"]))
            blocks = f"{len(block_plan(chains))}/{len(block_plan(chains, dtype='float32'))}"
            print(f"{name:8s}{chains:9d}{blocks:>7s}"
                  f"{rate['p64']:11.3e}{bj['64'][0]:11.3e} {bj['64'][1]}{rate['p64'] / bj['64'][0]:7.2f}"
                  f"{rate['p32']:11.3e}{bj['32'][0]:11.3e} {bj['32'][1]}{rate['p32'] / bj['32'][0]:7.2f}"
                  f"{rate['p64'] / rate['floor']:9.2f}"
                  f"{ns['p64']:8.1f}{bj['64'][2]:8.1f}{ns['p32']:8.1f}{bj['32'][2]:8.1f}", flush=True)


if __name__ == "__main__":
    main()
