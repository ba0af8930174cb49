"""The frame loop's scheduling without a browser: a stand-in document records the callbacks it is given."""
from __future__ import annotations

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
