"""CPU of the lab's stepping per frame (Lab.frame: advance every run `speed` steps, with the histograms, paths and
ESS trace it keeps), of this tree against another tree, measured side by side; and whether their numbers agree.

Prints figures (not a test). Each tree runs in a process of its own (its code on PYTHONPATH) with class_load's
presets built as a loaded page builds them (1000 chains, 5 steps a frame), playing; the trees take a few frames
each in turn (a load that comes and goes weighs on both alike, as in benchmarks/frame_cost.py --in-process). The
first tree is the reference: the others' CPU per frame is printed as a ratio of its. After the frames, a digest of
each run's state, histograms, path points and ESS trace: equal digests are the same numbers, bit for bit.

    python -m benchmarks.step_cost [--trees /work/main,.] [--frames 600] [--presets banana/sghmc,...]

(from the repository root, as a module)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.class_load import PRESETS


def digest(lab) -> str:
    """The numbers a frame leaves behind, hashed: each run's state, counts, pending path rows and ESS trace."""
    h = hashlib.sha256()
    for run in lab.runs:
        # the pending path rows: a list of arrays before issue 28's fifth round, rows kept in one array since
        rows = run._pending if hasattr(run, "_pending") else [run._rows[:run._n_rows]]
        for a in (run.ens.z, run.joint_counts, run.group_counts, run._ess_buf, *run.marg_counts,
                  *rows, *run.samples.states):
            h.update(a.tobytes())
        h.update(repr((run.t, run.kept, run.joint_outside, run._ess_n, run.samples.steps)).encode())
    return h.hexdigest()[:16]


def worker(presets: dict[str, str]):
    """Counts of frames on stdin; answers each with the CPU ms per frame so far per preset, and the digests."""
    from app.views.page import AppView
    labs = {}
    for name, query in presets.items():
        lab = AppView("?" + query).lab
        lab.playing = True
        for _ in range(15):   # past burn-in, as the frame benchmarks warm up
            lab.frame(lab.steps_per_frame)
        labs[name] = lab
    cpu, done = dict.fromkeys(labs, 0.0), 0
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line)
        done += n
        for _ in range(n):
            for name, lab in labs.items():   # interleaved: a busy machine slows all alike
                t0 = time.process_time()
                lab.frame(lab.steps_per_frame)   # all of them: a busy machine's frame cut short would change the run
                cpu[name] += time.process_time() - t0
        print(json.dumps({name: (1e3 * cpu[name] / done, digest(lab), lab.playing, lab.runs[0].t)
                          for name, lab in labs.items()}),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="/work/main,.", help="comma-separated repository roots; the first is the "
                    "reference")
    ap.add_argument("--frames", type=int, default=600, help="frames per preset")
    ap.add_argument("--batch", type=int, default=5, help="frames of one tree before the next tree's")
    ap.add_argument("--presets", default=",".join(PRESETS), help=f"of {', '.join(PRESETS)}")
    args = ap.parse_args()
    trees = [Path(t) for t in args.trees.split(",")]
    names = args.presets.split(",")
    chosen = json.dumps({name: PRESETS[name] for name in names})
    here = str(Path(__file__).resolve())   # this file, run with each tree's code first on the path
    workers = {t: subprocess.Popen([sys.executable, here, "--worker", chosen], cwd=t,
                                   text=True, env={**os.environ, "PYTHONPATH": str(t.resolve())},
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE) for t in trees}
    got = {}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    try:
        for t, w in workers.items():
            if w.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the stepping benchmark did not start in {t}")
        for _ in range(0, args.frames, args.batch):
            for t, w in workers.items():
                w.stdin.write(f"{args.batch}\n")
                w.stdin.flush()
                got[t] = json.loads(w.stdout.readline())
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait(60)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"CPU of Lab.frame (ms per frame), {args.frames} frames a preset, the trees {args.batch} frames each in turn")
    print(f"{'tree':<20}" + "".join(f"{n[:26]:>28}" for n in names) + f"{'mean':>8}{'ratio':>7}")
    ref = None
    for t in trees:
        ms = [got[t][n][0] for n in names]
        mean = statistics.mean(ms)
        ref = ref or mean
        print(f"{str(t):<20}" + "".join(f"{m:>10.3f} {got[t][n][1]:>17}" for m, n in zip(ms, names))
              + f"{mean:>8.3f}{mean / ref:>7.2f}")
    same = all(got[t][n][1] == got[trees[0]][n][1] for t in trees for n in names)
    playing = all(got[t][n][2] for t in trees for n in names)
    print(f"same numbers in every tree: {'yes' if same else 'NO'}; every preset still playing: "
          f"{'yes' if playing else 'NO'}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(json.loads(sys.argv[2]))
    else:
        main()
