"""A frame's work in the model (issue 28, the frame's fourth round): its steps in one call per run once a frame has
measured a step, the budget still closing a frame; the histograms binned in one pass; the exact spread once a run."""
from __future__ import annotations

import numpy as np
import pytest

from app.model import lab as lab_module
from app.model import live_run
from app.model.config import LabConfig
from app.model.lab import Lab
from app.model.live_run import LiveRun

FIRST_PAIR = dict(compare=True, sampler="sghmc-naive", sampler_b="sghmc", potential="double-well", V=4.0,
                  params={"eps": "0.1"}, params_b={"eps": "0.1", "C": "3"}, chains=300, speed=5)


def counted(lab):
    calls = []
    for run in lab.runs:
        advance = run.advance
        run.advance = lambda steps, run=run, advance=advance: (calls.append((run.label, steps)), advance(steps))[1]
    return calls


def test_a_frame_steps_each_run_in_one_call_once_a_step_is_measured_and_the_budget_still_closes_it(monkeypatch):
    lab = Lab(LabConfig(**FIRST_PAIR))
    calls = counted(lab)
    monkeypatch.setattr(lab_module, "FRAME_BUDGET_S", 10.0)     # every step fits, however loaded the machine
    assert lab.frame()
    assert calls == [("A", 1), ("B", 1), ("A", 4), ("B", 4)]    # the first frame measures a step first
    calls.clear()
    assert lab.frame() and lab.frame()
    assert calls == [("A", 5), ("B", 5)] * 2                    # then one call per run (main: 1 and 4 each frame)
    # the budget still decides: nothing fits, so one step and the frame closes, as on main
    monkeypatch.setattr(lab_module, "FRAME_BUDGET_S", 0.0)
    calls.clear()
    assert lab.frame()
    assert calls == [("A", 1), ("B", 1)] and lab.runs[0].t == 16
    # new runs are measured again before their steps go in one call
    monkeypatch.setattr(lab_module, "FRAME_BUDGET_S", 10.0)
    lab.config.chains = 200
    calls = counted(lab)
    assert lab.frame() and calls == [("A", 1), ("B", 1), ("A", 4), ("B", 4)]


def test_frames_in_one_call_per_run_step_and_count_as_steps_one_by_one(monkeypatch):
    monkeypatch.setattr(lab_module, "FRAME_BUDGET_S", 10.0)
    folded, single = Lab(LabConfig(**FIRST_PAIR)), Lab(LabConfig(**FIRST_PAIR))
    for _ in range(30):          # past burn-in (100 steps): the histograms count
        folded.frame()
    for _ in range(150):
        single.frame(1)
    for a, b in zip(folded.runs, single.runs):
        assert a.t == b.t == 150 and a.kept == b.kept > 0
        np.testing.assert_array_equal(a.ens.z, b.ens.z)
        np.testing.assert_array_equal(a.joint_counts, b.joint_counts)
        np.testing.assert_array_equal(a.group_counts, b.group_counts)
        np.testing.assert_array_equal(a.take_path_points(), b.take_path_points())
        assert _same(a.metrics(), b.metrics())


def _same(m1, m2):
    return m1.keys() == m2.keys() and all(v1 == v2 or (v1 != v1 and v2 != v2) for v1, v2 in
                                          zip(m1.values(), m2.values()))


@pytest.mark.parametrize("cfg", [dict(potential="double-well", sampler="sghmc"),
                                 dict(potential="banana", sampler="sghmc"),
                                 dict(potential="sparse-dirichlet", sampler="scir", batch=10)])
def test_the_histograms_count_as_numpys_histogram_does_outside_and_nan_included(cfg):
    """The one-pass binning against np.histogram on the same edges (1-D joint, 2-D joint, a marginal beyond 2-D):
    states inside, outside the box on either side, NaN (a diverged row's) and ±inf, which count as outside."""
    run = Lab(LabConfig(chains=64, **cfg)).runs[0]
    rng = np.random.default_rng(3)
    lo, hi = np.array([e[0] for e in run.edges]), np.array([e[-1] for e in run.edges])
    width = hi - lo
    theta = np.zeros((4000, run.dim)) + 0.5
    k = len(run.edges)
    theta[:, :k] = lo + width * rng.uniform(-0.2, 1.2, (4000, k))
    theta[::97, 0] = np.nan
    theta[5::89, 0], theta[7::83, k - 1] = np.inf, -np.inf
    run._accumulate(theta)
    x = theta[:, 0]
    if run.dim == 2:
        joint = np.histogram2d(x, theta[:, 1], run.edges)[0]
        inside = ((x >= lo[0]) & (x < hi[0]) & (theta[:, 1] >= lo[1]) & (theta[:, 1] < hi[1])).sum()
    else:
        joint = np.histogram(x[np.isfinite(x)], run.edges[0])[0]
        inside = joint.sum()
    np.testing.assert_array_equal(run.joint_counts, joint)
    assert run.joint_outside == len(theta) - inside > 0 and run.kept == len(theta)
    for i, (edges, counts) in enumerate(zip(run.edges, run.marg_counts)):
        np.testing.assert_array_equal(counts, np.histogram(theta[:, i][np.isfinite(theta[:, i])], edges)[0])


def test_the_exact_spread_is_computed_once_a_run_and_the_ratio_is_unchanged():
    run = LiveRun(Lab(LabConfig(potential="double-well", sampler="sghmc", chains=64)).sides[0].sampler, 64, seed=1)
    e = run.edges[0]
    mid = 0.5 * (e[1:] + e[:-1])
    dens = np.exp(-0.5 * mid ** 2)

    def sd(w):
        w = w / w.sum()
        return np.sqrt((w * (mid - (w * mid).sum()) ** 2).sum())

    exact = sd(run.masses)
    assert run.spread(dens) == pytest.approx(sd(dens) / exact, rel=1e-12)
    run.masses = run.masses * 0      # the exact law is not read again: what the first call found is kept
    assert run.spread(dens) == pytest.approx(sd(dens) / exact, rel=1e-12)
    assert np.isnan(run.spread(dens * 0))


def reference_records(run: LiveRun, steps: int) -> dict:
    """What a frame of `steps` steps records, made from the states of another run of the same sampler and seed
    stepped one step at a time, each step's records made from its state as the lab made them until issue 28's
    fifth round: path row, ESS slot, kept theta of the live chains binned by `uniform_bin_index`, downloads."""
    from samplers import diagnostics as dg
    ens, out = run.ens, dict(rows=[], kept=[], groups=[])
    for _ in range(steps):
        ens.advance(1)
        z, alive, t = ens.z, ens.guard.alive, ens.t
        th = run.theta_of(z[run.path_chains])
        cols = [th[:, i] for i in range(run.plot_dims)] + ([z[run.path_chains, run.r_cols[0]]] if run.r_cols else [])
        out["rows"].append(np.concatenate([[float(t)], np.stack(cols, axis=1).ravel()]))
        run._ess_buf[run._ess_n % len(run._ess_buf)] = run.theta_of(z[: run._ess_chains])[:, 0]
        run._ess_n += 1
        if t > run.burn and t % run.thin == 0:
            run.samples.offer(t, z, alive)
            out["kept"].append(run.theta_of(z)[alive])
            out["groups"].append(run._group_of[alive])
    theta = np.concatenate(out["kept"]) if out["kept"] else np.zeros((0, run.dim))
    idx = [dg.uniform_bin_index(theta[:, i], run._lo[i], run._inv[i], run._nb[i]) for i in range(len(run.edges))]
    inside = (idx[0] >= 0) & (idx[1] >= 0) if run.dim == 2 else idx[0] >= 0
    cell = np.where(inside, idx[0] * run._nb[1] + idx[1] if run.dim == 2 else idx[0], run.masses.size)
    groups = np.concatenate(out["groups"]) if out["groups"] else np.zeros(0, int)
    per_group = np.zeros_like(run.group_counts)
    np.add.at(per_group, (groups, cell), 1)
    return dict(rows=out["rows"], kept=len(theta), outside=float((~inside).sum()), group_counts=per_group,
                marg=[np.bincount(ix[ix >= 0], minlength=nb) for ix, nb in zip(idx, run._nb)],
                joint=np.bincount(cell[inside], minlength=run.masses.size).reshape(run.masses.shape))


@pytest.mark.parametrize("cfg", [dict(potential="banana", sampler="sghmc"),
                                 dict(potential="double-well", sampler="sgld", params={"eps": "0.12"}),
                                 dict(potential="sparse-dirichlet", sampler="scir", batch=10)],
                         ids=["2-D", "diverging", "simplex view"])
def test_a_frames_records_are_those_of_its_steps_one_by_one(cfg, monkeypatch):
    """LiveRun.advance records a frame's states after its steps (issue 28): the same paths, ESS trace, histograms,
    group counts (counted as they wait and when read), downloads and frozen chains as a step-by-step reference,
    over frames longer than the ESS buffer and the path cap, with chains diverging within a frame, and for a
    target whose runs keep a view (omega)."""
    monkeypatch.setattr(live_run, "GROUP_FOLD", 1000)
    sampler = Lab(LabConfig(chains=200, **cfg)).runs[0].sampler
    run, ref = (LiveRun(sampler, 200, seed=3, burn=4, thin=2, ess_len=32) for _ in range(2))
    run.path_cap = ref.path_cap = 60
    ref.take_path_points()
    rows = []
    for steps in (3, 1, 6, 40, 2, 75):
        run.advance(steps)
        want = reference_records(ref, steps)
        rows += want["rows"]
        for acc, c in zip(ref.marg_counts, want["marg"]):
            acc += c
        ref.joint_counts += want["joint"]
        ref.joint_outside += want["outside"]
        ref.kept += want["kept"]
        ref._group_counts += want["group_counts"]
        np.testing.assert_array_equal(run.ens.z, ref.ens.z)
        np.testing.assert_array_equal(run.alive, ref.alive)
    assert run.kept == ref.kept > 0 and run.joint_outside == ref.joint_outside
    for a, b in zip(run.marg_counts + [run.joint_counts, run.group_counts, run._ess_buf],
                    ref.marg_counts + [ref.joint_counts, ref.group_counts, ref._ess_buf]):
        np.testing.assert_array_equal(a, b)
    assert run._ess_n == ref._ess_n and run.samples.steps == ref.samples.steps
    for a, b in zip(run.samples.states + run.samples.alive, ref.samples.states + ref.samples.alive):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(run.take_path_points(), np.array(rows[-60:]))
    if cfg["sampler"] == "sgld":
        assert 0 < run.n_diverged < run.chains


def test_the_path_rows_taken_between_frames_are_the_last_path_cap_rows_of_each_step():
    """The rows written into an array (issue 28, the frame-cost round) against the rows of each step kept as a list
    capped at path_cap after every append, as until then: taken after some frames and not others, frames longer
    than the cap, the array moving its rows and growing."""
    sampler = Lab(LabConfig(potential="banana", sampler="sghmc", chains=50)).runs[0].sampler
    run, ref = (LiveRun(sampler, 50, seed=5) for _ in range(2))
    run.path_cap = ref.path_cap = 9
    pending = [ref.take_path_points()[0]]          # the start's row
    for steps, take in [(3, False), (4, False), (5, True), (1, True), (12, False), (2, True), (8, False),
                        (8, False), (3, True), (20, True), (9, True), (6, False), (7, True)]:
        run.advance(steps)
        for _ in range(steps):
            ref.advance(1)
            pending += list(ref.take_path_points())
            del pending[: max(len(pending) - ref.path_cap, 0)]
        if take:
            np.testing.assert_array_equal(run.take_path_points(), np.array(pending))
            pending = []
    run.advance(7)
    assert run.take_path_points().shape == (7, 1 + 3 * 3) and run.take_path_points().shape[0] == 0
