"""The lab's ladder job: a forked worker, polled; cancelled by a new configuration."""
from __future__ import annotations

import time

from app.model.config import LabConfig
from app.model.lab import Lab
from app.model.ladder import LadderJob


def _wait(job, until, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        job.poll()
        time.sleep(0.05)
    return until()


def test_the_job_runs_both_sides_reports_progress_and_writes_csv(monkeypatch):
    monkeypatch.setattr("app.model.ladder.LADDER_CHAINS", 200)
    lab = Lab(LabConfig(potential="double-well", compare=True, sampler="sghmc-naive", sampler_b="sghmc", V=4.0,
                        params={"eps": "0.2"}, params_b={"eps": "0.2"}, chains=100))
    job = LadderJob(lab)
    seen = []
    job.param.watch(lambda e: seen.append(e.new), "progress")
    job.start()
    assert job.status == "running"
    assert _wait(job, lambda: job.status != "running")
    assert job.status == "done", job.message
    assert [r.title for r in job.results] == ["A: naive SGHMC", "B: SGHMC"]
    assert all(len(r.points) == 6 for r in job.results) and seen[-1] == 1.0 and len(seen) > 3
    assert job.csv().count("\n") == 13


def test_a_new_configuration_cancels_a_running_ladder_at_once():
    lab = Lab(LabConfig(potential="double-well", sampler="sgrhmc", chains=100))
    job = LadderJob(lab)
    job.start()
    assert _wait(job, lambda: job.progress > 0, timeout=30)
    proc = job._box._proc
    lab.config.seed = 7                      # any change rebuilds the runs
    assert job.status == "cancelled" and "configuration changed" in job.message
    assert not proc.is_alive()
