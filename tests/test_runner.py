"""The session runner (app/model/runner.py) on its own: superseded jobs, time limits, failures told apart, and
the sandbox killed at its limit."""
from __future__ import annotations

import logging
import os
import threading
import time

from app.model import runner
from app.model.runner import Failure, Sandbox, SessionRunner
from samplers.sampler import SamplerError


class Loop:
    """A session's event loop stand-in: what the workers deliver waits here until `run_until`."""

    def __init__(self):
        self.pending = []
        self.lock = threading.Lock()

    def __call__(self, fn):
        with self.lock:
            self.pending.append(fn)

    def run_until(self, condition, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "nothing came back"
            with self.lock:
                todo, self.pending = self.pending, []
            for fn in todo:
                fn()
            time.sleep(0.01)


def test_without_a_loop_work_runs_in_place():
    got = []
    SessionRunner().run(lambda: 42, got.append)
    assert got == [42]


def test_a_newer_job_of_a_tag_supersedes_the_older_one():
    loop, got = Loop(), []
    r = SessionRunner(loop)
    gate = threading.Event()
    r.run(lambda: gate.wait(5) and "old", got.append, tag="build")
    r.run(lambda: "new", got.append, tag="build")
    gate.set()
    loop.run_until(lambda: got)
    time.sleep(0.1)
    loop.run_until(lambda: True)
    assert got == ["new"]


def test_a_user_error_is_its_message_and_a_bug_is_logged_and_said_to_be_one(caplog):
    loop, got = Loop(), []
    r = SessionRunner(loop)

    def user():
        raise SamplerError("eps must be > 0, got -1")

    def bug():
        raise KeyError("oops")
    with caplog.at_level(logging.ERROR):
        r.run(user, got.append)
        r.run(bug, got.append)
        loop.run_until(lambda: len(got) == 2)
    user_failure, bug_failure = got
    assert isinstance(user_failure, Failure) and not user_failure.bug
    assert user_failure.message == "eps must be > 0, got -1"
    assert bug_failure.bug and "internal error" in bug_failure.message and "oops" not in bug_failure.message
    assert any(rec.exc_info and isinstance(rec.exc_info[1], KeyError) for rec in caplog.records)


def test_a_job_without_done_reports_its_failure_to_the_session():
    loop, failures = Loop(), []
    r = SessionRunner(loop, on_failure=failures.append)
    r.run(lambda: [][1], pool="step")
    loop.run_until(lambda: failures)
    assert failures[0].bug


def test_past_its_limit_a_job_is_given_up_and_its_late_result_dropped(monkeypatch):
    loop, got, late = Loop(), [], []
    r = SessionRunner(loop)
    gate = threading.Event()
    r.run(lambda: gate.wait(5) and "late", got.append, tag="build", pool="model build", limit_s=0.1,
          late=lambda: late.append(True))
    loop.run_until(lambda: late)
    gate.set()
    time.sleep(0.2)
    loop.run_until(lambda: True)
    assert late == [True] and got == []


def test_a_result_in_time_stops_the_clock():
    loop, got, late = Loop(), [], []
    r = SessionRunner(loop)
    r.run(lambda: "done", got.append, tag="build", limit_s=0.3, late=lambda: late.append(True))
    loop.run_until(lambda: got)
    time.sleep(0.5)
    loop.run_until(lambda: True)
    assert got == ["done"] and late == []


def test_a_closed_session_hears_nothing_more():
    loop, got = Loop(), []
    r = SessionRunner(loop)
    gate = threading.Event()
    r.run(lambda: gate.wait(5) and "x", got.append)
    r.close()
    gate.set()
    runner.POOLS["build"].submit(lambda: None).result()
    loop.run_until(lambda: True)
    assert got == []


def _sleep_forever(send):
    send(("pid", os.getpid()))
    time.sleep(60)


def test_the_sandbox_is_killed_at_its_limit():
    box = Sandbox(_sleep_forever)
    assert box.first(5)[0] == "pid"        # its first message; then it is killed
    assert not box._proc.is_alive()
    box = Sandbox(lambda send: time.sleep(60))
    assert box.first(0.2) == ("time", None) and not box._proc.is_alive()
