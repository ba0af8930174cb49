"""The frame loop's scheduling without a browser: a stand-in document records the callbacks it is given."""
from __future__ import annotations

import subprocess
import sys

from app.views.frame_loop import FrameLoop


class FakeDoc:
    session_context = object()

    def __init__(self):
        self.next_tick = []

    def add_next_tick_callback(self, fn):
        self.next_tick.append(fn)


class Owner:
    def __init__(self, calls):
        self.calls = calls

    def redraw(self):
        self.calls.append(self)


def test_with_lock_runs_each_function_once_per_tick_and_tells_same_named_functions_apart():
    loop = FrameLoop(lambda: None, active=lambda: False, ready=lambda: True, on_error=lambda err: None)
    loop.doc = doc = FakeDoc()
    calls = []
    first, second = Owner(calls), Owner(calls)
    loop.with_lock(first.redraw)
    loop.with_lock(first.redraw)          # the same function again before the tick: once
    loop.with_lock(second.redraw)         # another object's method of the same name: its own call
    assert loop.pending(first.redraw) and loop.pending(second.redraw)
    for fn in doc.next_tick:
        fn()
    assert calls == [first, second]
    assert not loop.pending(first.redraw)


# Run in a fresh process: what this test process has imported already would hide a lazy import.
FIRST_FRAMES = """
import sys
from app.views.process import prepare_process
prepare_process()
before = set(sys.modules)
from app.model.config import LabConfig
from app.model.lab import Lab
from app.model.models import ModelsConfig
from app.views.lab import LabView
from app.views.models import ModelsView
from samplers.targets.live import LIVE_MODELS
for cfg in (dict(chains=50), dict(chains=50, potential="expr:x^4/4 + sqrt(1 + y^2)"),
            dict(chains=50, compare=True, sampler="sgrhmc-naive", sampler_b="sgrhmc")):
    view = LabView(Lab(LabConfig(**cfg)), compact=True)
    view.lab.play()
    for _ in range(3):
        view.loop.tick()
    assert view.lab.notice is None, view.lab.notice
for key in LIVE_MODELS:
    view = ModelsView(ModelsConfig(model=key))
    view.lab.step(2)
    view._frame()
    assert not view.lab.error, view.lab.error
print(sorted(m for m in set(sys.modules) - before if not m.startswith(("app.", "samplers."))))
"""


def test_a_first_frame_and_every_models_build_import_nothing_the_server_start_did_not():
    """A first import on a worker leaves the module half-initialised in sys.modules while other sessions'
    frames look it up there: every session's run once stopped at a first logistic regression (issue 28)."""
    out = subprocess.run([sys.executable, "-c", FIRST_FRAMES], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
