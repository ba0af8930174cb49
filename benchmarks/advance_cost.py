"""CPU of one frame's `Ensemble.advance` (class_load's presets: 1000 chains, 5 steps, each step's state copied as
LiveRun's frame copies it), of this tree against another tree, and whether they step to the same numbers.

Prints figures (not a test). Each tree's ensembles are built in a process of its own (its code on PYTHONPATH) as a
loaded page builds them, stepped past burn-in, then timed as the least process CPU of many short repeats (10 frames
each): on a shared machine the least is the cost without other processes' interference, which moves a mean by ±20 %
from run to run (benchmarks/step_cost.py measures the whole `Lab.frame` by means). The trees take turns, --rounds
times; after the timing, a digest of each run's state: equal digests are the same numbers, bit for bit.

    python -m benchmarks.advance_cost [--trees /work/main,.] [--rounds 3] [--repeats 300]

(from the repository root, as a module)
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
import timeit
from pathlib import Path


def worker(repeats: int):
    import numpy as np

    from app.views.page import AppView
    from benchmarks.class_load import PRESETS
    out = {}
    for preset, query in PRESETS.items():
        lab = AppView("?" + query).lab
        for run in lab.runs:
            ens = run.ens
            states = np.empty((5, *ens.z.shape), ens.z.dtype)   # as LiveRun's frame keeps them
            n = [0]

            def each(z, states=states, n=n):
                states[n[0] % 5] = z
                n[0] += 1
            ens.advance(100, ahead=False)
            frame = functools.partial(ens.advance, 5, each=each, ahead=False)
            cpu = min(timeit.repeat(frame, number=10, repeat=repeats, timer=time.process_time)) / 10
            digest = hashlib.sha256(ens.z.tobytes()).hexdigest()[:12]
            out[f"{preset.split('/')[0]}: {ens.sampler.name}"] = (1e6 * cpu, digest)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="/work/main,.", help="comma-separated repository roots; the first is the "
                    "reference")
    ap.add_argument("--rounds", type=int, default=3, help="turns of each tree")
    ap.add_argument("--repeats", type=int, default=300, help="timed repeats of 10 frames per run and turn")
    args = ap.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    here = str(Path(__file__).resolve())
    best: list[dict] = [{} for _ in trees]
    digests: list[dict] = [{} for _ in trees]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for _ in range(args.rounds):
        for i, tree in enumerate(trees):
            got = subprocess.run([sys.executable, here, "--worker", str(args.repeats)], cwd=tree, check=True,
                                 capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
            for name, (us, digest) in json.loads(got.stdout).items():
                best[i][name] = min(us, best[i].get(name, float("inf")))
                digests[i][name] = digest
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    names = list(best[0])
    print(f"CPU of Ensemble.advance(5) per run and frame (us, least of {args.repeats} repeats x {args.rounds} rounds)")
    print(f"{'tree':<20}" + "".join(f"{n[:24]:>26}" for n in names) + f"{'sum':>8}{'ratio':>7}")
    for i, tree in enumerate(trees):
        total = sum(best[i].values())
        print(f"{str(tree):<20}" + "".join(f"{best[i][n]:>26.1f}" for n in names)
              + f"{total:>8.0f}{total / sum(best[0].values()):>7.3f}")
        if i:
            print(f"{'  ratio':<20}" + "".join(f"{best[i][n] / best[0][n]:>26.3f}" for n in names))
    same = all(d == digests[0] for d in digests)
    print(f"same numbers in every tree: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(int(sys.argv[2]))
    else:
        main()
