"""CPU of a live run's work around its steps (app/model/live_run.py), this tree against another, side by side.

Prints figures (not a test). For each of class_load's presets, each tree's runs (in a process of its own, that tree
on PYTHONPATH) play frames of 5 steps as the lab does, and the view's reads of each frame are made: its path
rows, ensemble points and histograms every frame, `metrics()` every other frame (as the KL history and the numbers
ask on average), so that ESS, noise floor and escaped chains refresh every 100 steps as they do. Per frame and
run it prints µs of: the steps (`Ensemble.advance`, with the per-step copies of `_Frame`), the records after them
(`_record_steps`), the reads, and `metrics()`; the trees take a few frames each in turn (a load that comes and goes
weighs on both), and the ratio of the records, reads and metrics together is the figure.

    python -m benchmarks.live_run_cost [--trees /work/main,.] [--frames 400]

(from the repository root, as a module, like benchmarks/frame_cost.py)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("steps", "records", "reads", "metrics")


def worker(presets: dict[str, str]):
    """Runs in a tree's process: answers each count of frames on stdin with the totals so far (µs per frame)."""
    from app.model.config import LabConfig
    from app.model.lab import Lab
    from app.model.urlstate import from_query, parse_search

    runs = {}
    for name, query in presets.items():
        upd, _ = from_query({k: v for k, v in parse_search("?" + query).items() if k != "play"})
        runs[name] = Lab(LabConfig(**upd)).runs
    cpu = {name: dict.fromkeys(PARTS, 0.0) for name in runs}
    stepped = [0.0]
    for rs in runs.values():
        for run in rs:
            advance = run.ens.advance

            def timed(*a, advance=advance, **k):
                t0 = time.process_time()
                try:
                    return advance(*a, **k)
                finally:
                    stepped[0] += time.process_time() - t0
            run.ens.advance = timed
    done = 0
    print("ready", flush=True)
    for line in sys.stdin:
        for _ in range(int(line)):
            done += 1
            for name, rs in runs.items():
                c = cpu[name]
                for run in rs:
                    stepped[0] = 0.0
                    t0 = time.process_time()
                    run.advance(5)
                    t1 = time.process_time()
                    run.take_path_points()
                    run.ensemble_xy()
                    run.histograms()
                    t2 = time.process_time()
                    if done % 2 == 0:
                        run.metrics()
                    t3 = time.process_time()
                    c["steps"] += stepped[0]
                    c["records"] += t1 - t0 - stepped[0]
                    c["reads"] += t2 - t1
                    c["metrics"] += t3 - t2
        print(json.dumps({name: {p: 1e6 * v / done / len(runs[name]) for p, v in c.items()}
                          for name, c in cpu.items()}), flush=True)


def main():
    from benchmarks.class_load import PRESETS
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="/work/main,.",
                    help="comma-separated repository roots; the first is the reference")
    ap.add_argument("--frames", type=int, default=400)
    args = ap.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    here = str(Path(__file__).resolve())     # this file runs in each tree's process: the tree need not have it
    procs = {t: subprocess.Popen([sys.executable, here, "--worker", json.dumps(PRESETS)],
                                 cwd=t, env={**os.environ, "PYTHONPATH": str(t)}, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE) for t in trees}
    got = {}
    try:
        for t, p in procs.items():
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the worker did not start in {t}")
        for _ in range(0, args.frames, 10):
            for t, p in procs.items():
                p.stdin.write("10\n")
                p.stdin.flush()
                got[t] = json.loads(p.stdout.readline())
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait(60)
    print("µs per frame and run (5 steps of 1000 chains; metrics every other frame), "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'preset':<30}{'tree':<22}" + "".join(f"{p:>10}" for p in PARTS) + f"{'after steps':>13}{'ratio':>7}")
    for name in PRESETS:
        ref = None
        for t in trees:
            c = got[t][name]
            after = c["records"] + c["reads"] + c["metrics"]
            ref = ref or after
            print(f"{name[:29]:<30}{str(t)[-21:]:<22}" + "".join(f"{c[p]:>10.1f}" for p in PARTS)
                  + f"{after:>13.1f}{after / ref:>7.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(json.loads(sys.argv[2]))
    else:
        main()
