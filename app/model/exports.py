"""Downloads: every chain's states kept since burn-in (thinned to at most 200 000 rows per run, evenly
spaced), or the current state before burn-in ends, as CSV and NPZ with the configuration."""
from __future__ import annotations

import io
import json
import re

import numpy as np

from .live_run import LiveRun


def _columns(run: LiveRun) -> list[str]:
    s = run.sampler
    theta = ["theta"] if run.dim == 1 else [f"theta_{i + 1}" for i in range(run.dim)]
    return theta + list(s.aux_names)


def kept(run: LiveRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps (k,), states (k, chains, n), alive (k, chains)): the kept samples, or the state now."""
    s = run.samples
    if s.steps:
        return np.array(s.steps), np.stack(s.states), np.stack(s.alive)
    return np.array([run.t]), run.ens.z[None], run.ens.guard.alive[None]


def file_name(runs: list[LiveRun], ext: str) -> str:
    """What the file holds: target, sampler(s) and the steps covered, e.g. double-well_sghmc_steps100-2000.csv."""
    steps = np.concatenate([kept(run)[0] for run in runs])
    parts = [runs[0].pot.name] + [run.sampler.name for run in runs]
    span = f"steps{steps.min()}-{steps.max()}" if steps.min() != steps.max() else f"step{steps.min()}"
    return safe_file_name(parts + [span], ext)


def safe_file_name(parts: list[str], ext: str) -> str:
    """The parts joined by _, anything but letters, digits and .+- replaced (names may hold typed text), cut."""
    name = re.sub(r"[^A-Za-z0-9.+-]+", "_", "_".join(parts)).strip("_")
    return f"{name[:120]}.{ext}"


def csv_tables(runs: list[LiveRun]) -> list[tuple]:
    """What the CSV holds, copied out of the live runs (cheap; the formatting is not: see write_csv)."""
    return [(run.label, run.sampler.name, _columns(run), *kept(run)) for run in runs]


def write_csv(tables: list[tuple]) -> io.StringIO:
    """One row per kept (step, chain) and run: run, sampler, chain, alive, step, then theta and the auxiliary
    variables. (Formatting 10^5 rows takes most of a second: the app runs this on a worker.)"""
    out = io.StringIO()
    for k, (label, sampler, cols, steps, states, alive) in enumerate(tables):
        if k == 0 or cols != tables[0][2]:
            out.write(",".join(["run", "sampler", "chain", "alive", "step"] + cols) + "\n")
        n_steps, chains, _ = states.shape
        chain = np.tile(np.arange(chains), n_steps)
        step = np.repeat(steps, chains)
        numbers = np.column_stack([chain, alive.reshape(-1), step, states.reshape(n_steps * chains, -1)])
        prefix = f"{label},{sampler},".replace("%", "%%")
        fmt = prefix + "%d,%d,%d," + ",".join(["%.17g"] * states.shape[2])
        np.savetxt(out, numbers, fmt=fmt)
    out.seek(0)
    return out


def samples_csv(runs: list[LiveRun]) -> io.StringIO:
    return write_csv(csv_tables(runs))


def run_meta(run: LiveRun, chains: int) -> dict:
    """What `python -m samplers sample` writes as meta, for a live run: diagnose rebuilds the target from it."""
    s, pot = run.sampler, run.sampler.potential
    oracle = s.oracle
    meta = dict(sampler=s.name, potential=pot.name, params=s.params, gradient=oracle.describe(),
                batch=getattr(oracle, "batch", None), grad_noise=getattr(oracle, "V", None), chains=int(chains),
                diverged=int(run.n_diverged), steps=int(run.t), burn=int(run.burn), thin=int(run.thin), source="lab")
    if pot.dim <= 2:
        meta["box"] = [list(map(float, b)) for b in pot.box[:pot.dim]]
    return meta


def diagnose_arrays(run: LiveRun, suffix: str = "") -> dict:
    """theta (kept, chains, dim) of the chains alive now and meta (JSON), the format `sample` writes and `diagnose`
    reads (`theta_b`, `meta_b` for the second run: `diagnose FILE --run b`)."""
    steps, states, alive = kept(run)
    live = alive[-1]
    theta = run.theta_of(states.reshape(-1, states.shape[2])).reshape(states.shape[:2] + (-1,))[:, live]
    meta = json.dumps(run_meta(run, int(live.sum())), sort_keys=True, default=_jsonable)
    return {"theta" + suffix: np.ascontiguousarray(theta, float), "meta" + suffix: np.array(meta)}


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    return v.item() if hasattr(v, "item") else str(v)


def npz_arrays(runs: list[LiveRun], config: dict) -> dict:
    """theta and meta of run A as `python -m samplers sample` writes them (and theta_b, meta_b of run B), so
    `python -m samplers diagnose` reads the file; then per run (prefix a_, b_): the kept states z (steps, chains,
    n), theta, alive and steps, the column names, histogram counts and edges; config as JSON."""
    arrays = {"config": np.array(json.dumps(config, default=str))}
    for run, suffix in zip(runs, ("", "_b")):
        arrays |= diagnose_arrays(run, suffix)
    for run in runs:
        p = run.label.lower() + "_"
        steps, states, alive = kept(run)
        arrays[p + "z"] = states
        arrays[p + "theta"] = run.theta_of(states.reshape(-1, states.shape[2])).reshape(states.shape[:2] + (-1,))
        arrays[p + "alive"] = alive
        arrays[p + "steps"] = steps
        arrays[p + "names"] = np.array(_columns(run))
        arrays[p + "hist_counts"] = run.joint_counts.copy()
        for i, e in enumerate(run.edges):
            arrays[p + f"hist_edges_{i}"] = e
    return arrays


def write_npz(arrays: dict) -> io.BytesIO:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    buf.seek(0)
    return buf


def samples_npz(runs: list[LiveRun], config: dict) -> io.BytesIO:
    return write_npz(npz_arrays(runs, config))
