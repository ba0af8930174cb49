"""The compute pool (app/model/pool.py) and the work that goes through it: admission by quota, cap and priority,
a queued session told so, worker processes at a lowered priority, killed with their session, and the Models
page's runs kept in a worker of their session's, whose memory goes with it."""
from __future__ import annotations

import os
import threading
import time

import pytest

from app.model import models as mm
from app.model.models import ModelsConfig, ModelsLab, RemoteRuns
from app.model.pool import HEAVY, LIGHT, POOL, QUEUED, Cancelled, Pool
from app.model.runner import Sandbox, SessionRunner
from samplers.targets.live import LIVE_MODELS
from tests.test_models_model import Loop, slow_model


class Owner:
    """A session, as the pool sees it."""


def hold(pool, owner, priority, order, name, gate, told=None):
    def run():
        try:
            with pool.slot(owner, priority, on_queued=told.append if told is not None else None):
                order.append(name)
                gate.wait(10)
        except Cancelled:
            order.append(f"{name} cancelled")
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def drain(loop):
    while not loop.q.empty():
        loop.q.get()()


def until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_session_over_its_quota_waits_and_is_told_while_another_session_goes_first():
    pool, order, gate, told = Pool(workers=2, quota=1), [], threading.Event(), []
    a, b = Owner(), Owner()
    hold(pool, a, HEAVY, order, "a1", gate)
    until(lambda: order == ["a1"])
    hold(pool, a, HEAVY, order, "a2", gate, told)        # a's second heavy job: over the quota
    until(lambda: told)
    hold(pool, b, HEAVY, order, "b1", gate)               # another session's: admitted at once
    until(lambda: order == ["a1", "b1"])
    assert told == [QUEUED] and pool.waiting(a) == 1
    gate.set()
    until(lambda: len(order) == 3)
    assert order[2] == "a2"


def test_the_cap_admits_light_work_first_then_the_session_computing_least():
    pool, order, gate = Pool(workers=1, quota=2), [], threading.Event()
    a, b, c = Owner(), Owner(), Owner()
    first = threading.Event()
    hold(pool, a, HEAVY, order, "a1", first)
    until(lambda: order == ["a1"])
    hold(pool, a, HEAVY, order, "a2", gate)
    until(lambda: pool.waiting(a) == 1)
    hold(pool, b, HEAVY, order, "b1", gate)
    until(lambda: pool.waiting(b) == 1)
    hold(pool, c, LIGHT, order, "c1", gate)
    until(lambda: pool.waiting(c) == 1)
    first.set()
    until(lambda: len(order) == 2)
    gate.set()
    until(lambda: len(order) == 4)
    # light first; then b, which computes nothing, before a's second; a waited longest but computed already
    assert order == ["a1", "c1", "b1", "a2"]


def test_a_cancelled_session_loses_its_waiting_jobs_and_its_workers():
    pool, order, gate = Pool(workers=1), [], threading.Event()
    a, b = Owner(), Owner()
    hold(pool, b, HEAVY, order, "b1", gate)
    until(lambda: order == ["b1"])
    hold(pool, a, HEAVY, order, "a1", gate)
    until(lambda: pool.waiting(a) == 1)
    box = Sandbox(lambda send: time.sleep(60))
    pool.adopt(a, box)
    pool.cancel(a)
    until(lambda: "a1 cancelled" in order)
    until(lambda: not box._proc.is_alive())
    gate.set()


def _where(send=None):
    return os.getpid(), os.getpriority(os.PRIO_PROCESS, 0)


def test_compute_work_runs_in_another_process_at_a_lower_priority():
    loop, got = Loop(), []
    r = SessionRunner(loop.schedule)
    r.run(_where, got.append, pool="compute")
    loop.run(lambda: got)
    pid, nice = got[0]
    assert pid != os.getpid() and nice > os.getpriority(os.PRIO_PROCESS, 0)


def test_a_closed_session_s_worker_is_killed():
    loop = Loop()
    r = SessionRunner(loop.schedule)
    r.run(lambda: time.sleep(60), pool="compute")
    until(lambda: POOL.workers_alive() and r in POOL._procs)
    box = next(iter(POOL._procs[r]))
    r.close()
    until(lambda: not box._proc.is_alive())


@pytest.fixture
def slow(monkeypatch):
    monkeypatch.setitem(LIVE_MODELS, "slow", ("slow", slow_model(0.002)))


def test_a_models_run_lives_in_a_worker_and_goes_with_the_session(slow):
    loop = Loop()
    lab = ModelsLab(ModelsConfig(model="slow", seed=5), schedule=loop.schedule)
    loop.run(lambda: lab.runs is not None)
    runs = lab.runs
    assert isinstance(runs, RemoteRuns) and runs.box.pid != os.getpid()
    assert ("slow", 5) not in {k[:2] for k in mm._MODELS._items}      # its data is not held here
    lab.play()
    deadline = time.monotonic() + 20
    while runs.t < 20:                                   # the page's frames take the points
        assert time.monotonic() < deadline
        drain(loop)
        lab.take_points()
        time.sleep(0.02)
    assert runs.history()[0][-1] > 0
    lab.close()
    until(lambda: not runs.box._proc.is_alive())


def test_a_new_build_replaces_the_worker(slow):
    loop = Loop()
    lab = ModelsLab(ModelsConfig(model="slow"), schedule=loop.schedule)
    loop.run(lambda: lab.runs is not None)
    old = lab.runs
    lab.config.seed = 3
    loop.run(lambda: lab.runs is not old)
    until(lambda: not old.box._proc.is_alive())
    assert lab.runs.box._proc.is_alive()
    lab.close()


def test_a_sessions_second_heavy_job_is_queued_behind_its_first_and_the_session_is_told():
    loop, got, told = Loop(), [], []
    r = SessionRunner(loop.schedule, on_queued=told.append)
    r.run(lambda: time.sleep(1.0), pool="compute")
    until(lambda: r in POOL._procs)                     # the first computes
    r.run(os.getpid, got.append, pool="compute")
    loop.run(lambda: got)
    assert told[0] == QUEUED and told[-1] is None       # told while it waited, and told once it no longer does
    r.close()


def test_the_queued_notice_is_the_sessions_and_goes_once_admitted():
    from app.model.config import LabConfig
    from app.model.lab import Lab
    from app.model.reasons import NoticeKind
    lab = Lab(LabConfig(chains=10))
    lab.queued(QUEUED)
    assert lab.notice.kind is NoticeKind.QUEUED and lab.notice.message.startswith("Queued behind your other runs")
    assert lab.notice.level == "warning"
    lab.queued(None)
    assert lab.notice is None


def test_heavy_frames_are_paced_and_light_ones_only_in_a_class_of_them():
    from app.views import frame_loop as fl
    saved = dict(fl._COSTS)
    fl._COSTS.clear()
    try:
        fl._COSTS.update({1: 0.004, 2: 0.040, 3: 0.040, 4: 0.040})     # a probe beside three heavy tabs
        assert fl.pace(0.004) == fl.FRAME_MS / 1e3
        period = fl.pace(0.040)
        used = 3 * 0.040 / period + 0.004 / (fl.FRAME_MS / 1e3)
        assert period > fl.FRAME_MS / 1e3 and used <= fl.LOOP_SHARE + 1e-9
        fl._COSTS.clear()
        fl._COSTS.update({k: 0.004 for k in range(4)})                # a few light sessions: never slowed
        assert fl.pace(0.004) == fl.FRAME_MS / 1e3
        fl._COSTS.update({k: 0.004 for k in range(80)})               # a class of them: 10 updates/s, no slower
        assert fl.pace(0.004) == fl.SLOWEST_MS / 1e3
    finally:
        fl._COSTS.clear()
        fl._COSTS.update(saved)
