"""The lab's ladder job: a forked worker, polled; cancelled by a new configuration."""
from __future__ import annotations

import time

from app.model.config import LabConfig
from app.model.lab import Lab
from app.model.ladder import LadderJob
from app.model.runner import LIMIT_S


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


# -- eps = auto (issue 25, item 7): the ladder's largest step whose bias is under its noise, in the lab -------------

def test_eps_auto_from_a_link_measures_then_builds_at_the_ladders_choice_and_the_link_keeps_auto():
    """a.eps=auto: the side runs at its fitted default while the ladder measures off the loop, then at the ε that
    samplers.ladder.auto_eps picks for the same sampler and seed (what `sample --set eps=auto` picks), and says
    which and why with the ladder's numbers; the link still says auto."""
    from app.model.autoeps import explain
    from app.model.ladder import AutoEpsJob
    from app.model.urlstate import apply_query, to_query
    from samplers.ladder import auto_eps
    from samplers.registry import build_sampler
    from samplers.targets.presets import get_potential

    cfg = LabConfig(chains=100)
    assert apply_query(cfg, {"pot": "double-well", "s": "sgld", "a.eps": "auto", "seed": "3"}) == []
    lab = Lab(cfg)
    side = lab.sides[0]
    assert not lab.blocks and side.auto is not None and side.auto.found is None
    assert side.sampler.params["eps"] == side.auto.default_eps == 0.01          # the fitted default, meanwhile
    assert "measuring" in explain(side.auto)
    job = AutoEpsJob(lab, "A")
    seen = []
    job.param.watch(lambda e: seen.append(e.new), "progress")
    assert job.status == "running"
    assert _wait(job, lambda: job.status != "running")
    assert job.status == "done", job.message
    expected = auto_eps(build_sampler("sgld", get_potential("double-well"), V=1.0), seed=3)
    side = lab.sides[0]
    assert side.auto.found.eps == expected.eps and side.sampler.params["eps"] == expected.eps
    assert [p.kl for p in side.auto.found.points] == [p.kl for p in expected.points]
    said = explain(side.auto)
    last = expected.points[-1]
    assert said.startswith(f"auto ε = {expected.eps:.3g}: the largest step") and f"KL {last.kl:.2g} ≤ 2 × " in said
    assert len(seen) > 2 and seen[-1] == 1.0
    assert to_query(cfg)["a.eps"] == "auto"
    # another session opening the same link builds at the choice at once, and starts no ladder
    lab2 = Lab(LabConfig(**{k: v for k, v in cfg.param.values().items() if k != "name"}))
    assert lab2.sides[0].sampler.params["eps"] == expected.eps
    assert AutoEpsJob(lab2, "A").status == "idle"


def test_eps_auto_is_refused_naming_the_field_where_the_ladder_cannot_run():
    from app.model.urlstate import from_query
    lab = Lab(LabConfig(potential="logistic-5d", sampler="sgld", params={"eps": "auto"}, chains=20))
    reason = lab.blocks["config"].message
    assert "eps = auto (sampler A)" in reason and "exact law of θ₁" in reason, reason
    _, errors = from_query({"s": "scir", "a.eps": "auto"})
    assert errors == ["URL key 'a.eps': scir has no parameter 'eps'"]
    _, errors = from_query({"s": "sgld", "a.eps": "autox"})
    assert errors and errors[0].startswith("URL 'a.eps'='autox': eps must be"), errors


def test_eps_auto_goes_on_through_rebuilds_that_do_not_change_it_and_gives_up_past_its_limit(monkeypatch):
    from app.model import ladder
    from samplers.cache import BoundedCache
    real = ladder._auto_work

    def slow(send, sampler, seed):      # the ladder at its own pace ends between two polls on a quiet machine
        send(("progress", 0.01))
        time.sleep(30)
        real(send, sampler, seed)

    monkeypatch.setattr(ladder, "_auto_work", slow)       # the sandbox is a fork: it runs the patched one
    monkeypatch.setattr("app.model.autoeps._CHOSEN", BoundedCache(8))
    lab = Lab(LabConfig(potential="double-well", sampler="sghmc", params={"eps": "auto"}, chains=100, seed=11))
    job = ladder.AutoEpsJob(lab, "A")
    assert _wait(job, lambda: job.progress > 0, timeout=30)
    proc = job._box._proc
    lab.config.chains = 150                    # rebuilds; the ladder's runs do not depend on it
    assert job.status == "running" and proc.is_alive()
    lab.config.V = 2.0                         # they do on this: a new measurement
    assert job.status == "running" and not proc.is_alive()
    monkeypatch.setitem(LIMIT_S, "ladder", 0.0)
    job.poll()
    assert job.status == "cancelled" and "took longer than 0 s" in job.message
    lab.config.chains = 200
    assert job.status == "cancelled"           # not started again for the same configuration
    assert lab.sides[0].sampler.params["eps"] == lab.sides[0].auto.default_eps     # it runs at the fitted default
    lab.config.params = {}
    assert lab.sides[0].auto is None


def test_an_invalid_eps_says_auto_is_taken_too():
    """The lab takes eps = auto, which the library's own message does not know: the field's reason says so, in
    Japanese too (issue 25)."""
    from app.model.i18n import tr_message
    from app.model.presets import validate_params
    assert validate_params("sgld", {"eps": "auto"}) is None and validate_params("sgld", {"eps": "0.02"}) is None
    for typed in ("abc", "-1", "nan"):
        reason = validate_params("sgld", {"eps": typed})
        assert reason.startswith("eps must be") and reason.endswith("(or auto: the step-size ladder picks it)"), reason
        ja = tr_message(reason, "ja")
        assert "auto" in ja and "ladder" not in ja and "must" not in ja, ja
