"""Downloads: the current samples of every chain as CSV and NPZ (with the configuration)."""
from __future__ import annotations

import io
import json

import numpy as np

from .live_run import LiveRun


def _columns(run: LiveRun) -> list[str]:
    s = run.sampler
    theta = ["theta"] if run.dim == 1 else [f"theta_{i + 1}" for i in range(run.dim)]
    return theta + list(s.aux_names)


def samples_csv(runs: list[LiveRun]) -> io.StringIO:
    """One row per chain and run: run, sampler, chain, alive, step, then theta and the auxiliary variables."""
    out = io.StringIO()
    for k, run in enumerate(runs):
        cols = _columns(run)
        if k == 0 or cols != _columns(runs[0]):
            out.write(",".join(["run", "sampler", "chain", "alive", "step"] + cols) + "\n")
        z = run.ens.z
        alive = run.ens.guard.alive
        for i in range(z.shape[0]):
            vals = ",".join(repr(float(v)) for v in z[i])
            out.write(f"{run.label},{run.sampler.name},{i},{int(alive[i])},{run.t},{vals}\n")
    out.seek(0)
    return out


def samples_npz(runs: list[LiveRun], config: dict) -> io.BytesIO:
    """Per run (prefix a_, b_): z (chains, n), alive, names, histogram counts and edges; config as JSON."""
    arrays = {"config": np.array(json.dumps(config, default=str))}
    for run in runs:
        p = run.label.lower() + "_"
        arrays[p + "z"] = run.ens.z
        arrays[p + "theta"] = run.ens.theta
        arrays[p + "alive"] = run.ens.guard.alive
        arrays[p + "names"] = np.array(_columns(run))
        arrays[p + "step"] = np.array(run.t)
        arrays[p + "hist_counts"] = run.joint_counts
        for i, e in enumerate(run.edges):
            arrays[p + f"hist_edges_{i}"] = e
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    buf.seek(0)
    return buf
