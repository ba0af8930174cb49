"""The frame loop of one session: a self-scheduled callback on the session's document.

Each frame runs the view's `frame` (advance the runs, update the ColumnDataSources) with every
change sent to the page as one message (see `one_message`), then the loop schedules the next
frame FRAME_MS after this one started. (A fixed-period periodic callback skips a whole period
whenever a frame ends late, which under load with many sessions halves the frame rate; a
self-scheduled one just runs a little later.) The loop stops with the session.

A frame's timer is the event loop's own (`call_later`), and the tick runs under the session's document lock, taken
as Bokeh takes it for the callbacks it runs (`ServerSession.with_document_locked`: a frame's changes reach the
session, which refuses them without it), with the document current. A Bokeh timeout callback a frame did the same
with bookkeeping that cost more than all the rest of the loop's work around a frame: an event to the session for
each callback added and each removed, a copy and two wrappers of the callback, and a Task (issue 28;
benchmarks/frame_schedule.py). The usual frame finds the lock free and runs at once (`_drive`); one that finds it
held (a page's pull, another callback of the session) waits for it. The first frame of a loop started before its
session exists (a playing link, in the page's request) goes through Bokeh's timeout callback.

The sessions of a process share one event loop, so heavy frames are paced (`pace`): a loop whose frames cost more
than HEAVY_FRAME_S of CPU is a heavy one, and the heavy loops together may hold the loop for what the light ones
leave of LOOP_SHARE of it (at least MIN_HEAVY_SHARE), in equal parts, their frames spaced out to fit. Three tabs of a
data posterior (37 ms a frame) took a probe session playing beside them to 0.38x its rate (issue 28).

What decides is each session's own cost: the CPU time of its frames on the loop's thread (`time.thread_time`, which
counts neither other processes nor this process's other threads). A heavy loop's frames are spaced by the longer of
that and the time they held the loop (on a machine short of CPU a frame holds the loop for longer than it computes),
so on a busy machine heavy sessions slow down first. Light sessions are told apart, and their demand counted, by CPU
alone: measured by the time their frames held the loop, a machine busy with others' heavy work made light frames
look heavy, and 20 light sessions beside two heavy Models tabs played at 15-16 updates/s with half a core idle.

A class of light sessions slows down together once their frames at the full rate would cost more than CALM_SHARE of
the loop's time (`demand`): first the numbers under the plots (`text_period`: each refresh of them costs a
session several frames' worth of the server), then the frames themselves, down to SLOWEST_MS (10.5 updates/s) at most.
Past that the loop is full and every session gets an equal share of it, as before. Slowing down early leaves the loop
room for what a student waits on (a page open, a click), and a frame costs the same at any rate, so each second of
the loop serves more sessions at 10 updates/s than it serves at 25 (issue 28: 80 sessions at 10 updates/s on 2 cores).

A frame's timer fires when the loop comes to it, behind the frames then due: with 40 sessions a process on 2 cores
each frame started ~9 ms late, and frames a period apart from one start to the next played at 9.2 updates/s where the
pace said 10 (issue 28). So a light loop takes its frames' smoothed lateness off its next wait, up to CATCH_UP of its
period: on average its frames then come at its period. Only that much: a loop later than that is full, and chasing it
would only queue more frames behind one another. A heavy loop is spaced to share the loop (`pace`) and does not
catch up.

A page open is about a dozen turns of the event loop (the page, its websocket, the figures, the first frame), and
each turn waited behind a round of the frames then due: 80 sessions playing on 2 cores opened a page in 3.4 s (p95).
So while a page of this process opens (from its session's creation to its first frame: `opening`), a frame that is
not overdue by a period or more waits one period instead of running; one that is runs, so a frame waits at most
once and the sessions playing lose at most half their rate while pages open, never all of it. An open that never
reaches its first frame (a closed tab, an error) ends with its session or after OPEN_TIMEOUT_S.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable
from functools import partial

import panel as pn
from bokeh.document.callbacks import invoke_with_curdoc
from panel.io.state import set_curdoc
from tornado.ioloop import IOLoop
from tornado.websocket import WebSocketClosedError

log = logging.getLogger(__name__)

FRAME_MS = 40          # 25 frames per second at most; a frame costs a few ms at 10^4 chains
SLOWEST_MS = 95        # what a class of light sessions slows down to at most: 10.5 updates/s, so that with the
                       # timers' jitter each keeps 10 (at 100 ms, 80 sessions on 2 cores played 9.98-9.99)
HEAVY_FRAME_S = 0.015  # a frame's CPU time above which a session's frames are paced
LOOP_SHARE = 0.4       # of the loop's time, what the sessions' frames may hold it for before heavy ones are paced
MIN_HEAVY_SHARE = 0.1  # ... of which the heavy ones keep at least this much between them
CALM_SHARE = 0.5       # of the loop's time, what the light frames may hold it for at the full rate: past half of it
                       # the numbers refresh less often, past all of it the frames slow down (see the docstring)
TEXT_EVERY_S = 0.5     # the numbers under the plots refresh twice a second at most ...
TEXT_EVERY_FRAMES = 5  # ... and once in this many frames at most (under load a frame comes less often)
SLOWEST_TEXT_S = 2.0   # ... and at least every 2 s while frames come
CATCH_UP = 0.2         # of its period, at most what a light loop takes off its next wait for its frames' lateness
LATE_WEIGHT = 0.2      # the weight of a frame's lateness in its loop's smoothed lateness
_COSTS: dict[int, float] = {}     # id(FrameLoop) -> its frames' CPU time, smoothed, while it plays
_HELD: dict[int, float] = {}      # id(FrameLoop) -> the time its frames held the loop, smoothed, while it plays
OPEN_TIMEOUT_S = 10.0  # an open not at its first frame by then is no longer waited for (the page is past helping)
_OPENS: dict[int, float] = {}     # id(document) of a page opening -> when its session was created (time.monotonic)


def opening(exclude=None) -> int:
    """How many pages of this process are opening now, the document `exclude`'s aside; opens past
    OPEN_TIMEOUT_S are dropped here."""
    now = time.monotonic()
    for key, at in list(_OPENS.items()):
        if now - at > OPEN_TIMEOUT_S:
            _OPENS.pop(key, None)
    return len(_OPENS) - (id(exclude) in _OPENS if exclude is not None else 0)


def open_started(doc) -> None:
    _OPENS.setdefault(id(doc), time.monotonic())


def open_ended(doc) -> None:
    _OPENS.pop(id(doc), None)


def _page_connected(doc) -> bool:
    """Whether this session's page has connected (its websocket) yet: before that, the page is still opening."""
    session = getattr(getattr(doc, "session_context", None), "_session", None)
    return session is not None and session.connection_count > 0


def demand() -> float:
    """The share of the loop's time the light loops playing now would take at the full rate."""
    return sum(c for c in _COSTS.values() if c <= HEAVY_FRAME_S) / (FRAME_MS / 1e3)


def text_period() -> float:
    """How often (s) a playing session refreshes its numbers: TEXT_EVERY_S while the light frames' demand is under
    half of CALM_SHARE, then slower in proportion, up to SLOWEST_TEXT_S."""
    return min(SLOWEST_TEXT_S, TEXT_EVERY_S * max(1.0, demand() / (CALM_SHARE / 2)))


def pace(cost_s: float, held_s: float = 0.0) -> float:
    """The period (s) of a loop whose frames cost cost_s of CPU and held the loop for held_s, among the loops playing
    now (_COSTS)."""
    if cost_s <= HEAVY_FRAME_S:
        return min(SLOWEST_MS, FRAME_MS * max(1.0, demand() / CALM_SHARE)) / 1e3
    light = sum(c for c in _COSTS.values() if c <= HEAVY_FRAME_S) / (FRAME_MS / 1e3)
    heavy = sum(1 for c in _COSTS.values() if c > HEAVY_FRAME_S) or 1
    share = max(MIN_HEAVY_SHARE, LOOP_SHARE - light) / heavy
    return max(FRAME_MS / 1e3, max(cost_s, held_s) / share)


def _smoothed(record: dict, key: int, value: float) -> None:
    last = record.get(key)
    record[key] = value if last is None else 0.7 * last + 0.3 * value


def quiet_closed_sockets() -> None:
    """A page closed mid-frame leaves Panel's write of that frame's message failing in a task nobody
    awaits, which asyncio reports as a traceback ("Task exception was never retrieved") in the server's
    log, and Bokeh and Panel warn once per message of it (dozens per closed tab). The message had nowhere
    to go and nothing is wrong: keep both out of the log, and only them."""
    loop = asyncio.get_event_loop()
    if getattr(loop, "_lab_quiet", False):
        return
    for name in ("panel.io.document", "bokeh.server.views.ws"):
        logging.getLogger(name).addFilter(lambda record: "connection was closed" not in record.getMessage())
    previous = loop.get_exception_handler()

    def handler(loop, context):
        if isinstance(context.get("exception"), WebSocketClosedError):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)
    loop.set_exception_handler(handler)
    loop._lab_quiet = True


# The document whose lock this code holds inside a session_schedule callback: FrameLoop.with_lock runs at
# once there, in that callback's Panel hold. Deferred to a next tick of its own, a rebuilt run's metrics
# could stay on the page as before the rebuild (with the recipe editor closed; tests/test_app_browser.py,
# the diverging run).
_LOCKED: contextvars.ContextVar = contextvars.ContextVar("lab_locked_doc", default=None)


def session_schedule(doc) -> Callable[[Callable], None] | None:
    """A function that runs `fn` on this session's event loop, with the document lock, from any thread;
    None without a server session. Only tornado's `add_callback` is safe from another thread: the
    document's own callbacks are added from the loop itself."""
    if doc is None or doc.session_context is None:
        return None
    io_loop = IOLoop.current()

    def in_session(fn):
        # as Panel runs a widget's callback: with this document current and held, its changes sent
        # together when fn returns. Run bare (curdoc set, no hold), a pane's later changes could stay queued
        # behind Panel's write block for good: a rebuilt run's metrics never reached the page
        # (tests/test_app_browser.py, the diverging run; docs/notes/serving.md). The lock is held here
        # too, so the views' FrameLoop.with_lock runs at once, inside the same hold (see _LOCKED).
        token = _LOCKED.set(doc)
        try:
            with set_curdoc(doc), pn.io.hold(doc):
                fn()
        finally:
            _LOCKED.reset(token)

    def on_loop(fn):
        try:
            doc.add_next_tick_callback(partial(in_session, fn))
        except Exception:      # the session has gone: nobody is waiting for the result
            pass

    def schedule(fn):
        io_loop.add_callback(on_loop, fn)
    return schedule


def connected(doc) -> bool:
    """Whether a browser still holds this document's session (True without a server)."""
    session = getattr(getattr(doc, "session_context", None), "_session", None)
    return session is None or session.connection_count > 0


def _drive(coro, _=None) -> None:
    """Run the coroutine `coro` as far as it goes now, and on from where it waits once that is done: what an
    asyncio Task does, without making one for the usual frame, which waits for nothing (see the module's
    docstring)."""
    try:
        waits = coro.send(None)
    except StopIteration:
        return
    except Exception:          # as tornado logs a callback's exception: the next frame is scheduled already
        log.exception("a frame's callback failed")
        return
    if waits is None:          # a bare yield (asyncio.sleep(0)): on at the next turn of the loop
        asyncio.get_running_loop().call_soon(_drive, coro)
    else:
        waits.add_done_callback(partial(_drive, coro))


class FrameLoop:
    """Calls `frame()` every FRAME_MS from `start()` until `stop()` or until `active()` turns False;
    `ready()` False skips one frame (the page has not received new figures yet); `on_error(err)` hears
    of a frame that raised."""

    def __init__(self, frame: Callable[[], None], *, active: Callable[[], bool], ready: Callable[[], bool],
                 on_error: Callable[[Exception], None]):
        self.frame, self.active, self.ready, self.on_error = frame, active, ready, on_error
        self.doc = None
        self.in_frame = False          # inside a frame the document lock is held (see with_lock)
        self.closed = False
        self._cb = None
        self._loop_id = 0              # a stopped (or restarted) loop's late frame does nothing
        self._scheduled: set[Callable] = set()
        self._was_connected = False
        self._text_at = 0.0            # when text_due last said yes, and the frames since
        self._text_frames = TEXT_EVERY_FRAMES
        self._due = None               # when the frame scheduled next is due (None: the first, which never waits)
        self._late = 0.0               # how late its frames started after they were due, smoothed
        self.period = None             # its frames' period (s) as last paced (see `pace`)
        self._waited = False           # ... and whether it has waited for a page opening already (once at most)

    def attach(self, doc) -> None:
        """Bind the loop to this session's document (the app calls this at session start), and start it if
        its owner is already playing (a link with play=1). At session start the page is opening (see the
        module's docstring) until this loop's first frame, or, if it does not play, until the page has loaded.
        (Panel's on_session_created cannot be registered from a session, and the app runs without a setup
        script: the app's own session start, Bokeh's page request, is where the open begins.)"""
        self.doc = doc
        if doc is not None and getattr(doc, "session_context", None) is not None and not _page_connected(doc):
            open_started(doc)
            with contextlib.suppress(Exception):       # no Panel server state (a stand-in document)
                with set_curdoc(doc):
                    pn.state.onload(self._page_loaded)
        if self.active():
            self.start()

    def _page_loaded(self) -> None:
        if not self.active() and self.doc is not None:
            open_ended(self.doc)

    def start(self) -> None:
        if self.doc is None or self._cb is not None:
            return
        self._loop_id += 1
        self._due, self._late = None, 0.0
        self._schedule(self._loop_id, 0)

    def _schedule(self, loop_id, delay_ms):
        delay_ms = max(1, int(delay_ms))
        session = getattr(self.doc.session_context, "session", None)
        if session is not None:
            with contextlib.suppress(RuntimeError):     # not on the session's loop: Bokeh's way below
                self._cb = asyncio.get_running_loop().call_later(delay_ms / 1e3, self._due_now, session, loop_id)
                return

        def run():
            if loop_id == self._loop_id:
                self.tick()
        try:
            self._cb = self.doc.add_timeout_callback(run, delay_ms)
        except Exception:          # the document has gone with its session
            self._cb = None

    def _due_now(self, session, loop_id):
        """A frame's timer: the tick under the session's document lock, as Bokeh runs its callbacks (with the
        document as Bokeh's curdoc, which Panel's follows), once the lock is free."""
        if loop_id == self._loop_id and not session.destroyed:
            _drive(session.with_document_locked(self._locked_tick, loop_id))

    def _locked_tick(self, loop_id):
        if loop_id == self._loop_id and self.doc is not None:
            invoke_with_curdoc(self.doc, self.tick)

    def stop(self) -> None:
        _COSTS.pop(id(self), None)
        _HELD.pop(id(self), None)
        self._loop_id += 1
        if isinstance(self._cb, asyncio.TimerHandle):      # a frame's timer of our own (see _schedule)
            self._cb.cancel()
        elif self._cb is not None and self.doc is not None:
            try:
                self.doc.remove_timeout_callback(self._cb)
            except ValueError:      # already run, or gone with the session
                pass
        self._cb = None

    def close(self) -> None:
        """End of session: stop, and schedule nothing more on the document being destroyed."""
        self.closed = True
        if self.doc is not None:
            open_ended(self.doc)       # a page closed before its first frame: its open is over
        self.doc = None
        self.stop()

    def tick(self) -> None:
        """One frame, the next one scheduled first so that the period counts from this frame's start."""
        self._cb = None
        key = id(self)
        if not self.active() or self._abandoned():
            _COSTS.pop(key, None)
            _HELD.pop(key, None)
            return
        if self.doc is not None:
            cost = _COSTS.get(key, 0.0)
            period = self.period = pace(cost, _HELD.get(key, 0.0))
            now = time.monotonic()
            if (self._due is not None and not self._waited and now - self._due < period
                    and opening(exclude=self.doc)):
                # a page is opening: this frame waits a period (and runs then, whatever), leaving the turn to it
                self._waited = True
                self._due = now + period
                self._schedule(self._loop_id, 1e3 * period)
                return
            wait = period
            if self._due is not None:
                self._late += LATE_WEIGHT * (max(0.0, now - self._due) - self._late)
                if cost <= HEAVY_FRAME_S:   # a light loop keeps its rate (see the module's docstring)
                    wait -= min(self._late, CATCH_UP * period)
            self._due, self._waited = now + wait, False
            self._schedule(self._loop_id, 1e3 * wait)
        if not self.ready():
            return
        self.in_frame = True
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            with self.one_message():
                self.frame()
        except Exception as err:   # never let a frame kill the session
            self._report(err)
        finally:
            self.in_frame = False
            _smoothed(_COSTS, key, time.thread_time() - cpu)
            _smoothed(_HELD, key, time.perf_counter() - start)
            if self.doc is not None:
                open_ended(self.doc)   # its first frame (or a later one): the page has opened

    def _report(self, err: Exception) -> None:
        """Tell the owner; should that fail too, stop here rather than raise into the server's loop, where
        every frame after it would raise again."""
        try:
            self.on_error(err)
        except Exception:
            log.exception("a failed frame could not be reported")
            self.stop()

    def _abandoned(self) -> bool:
        """A closed tab's session lives on until the server's unused-session check: no frames for nobody.
        (Before its page first connects a session has no connection either: that one is not abandoned.)"""
        if self.doc is None:
            return False
        if connected(self.doc):
            self._was_connected = True
            return False
        return self._was_connected

    def text_due(self) -> bool:
        """Whether this frame refreshes the numbers under the plots (call once per frame): after text_period()
        and TEXT_EVERY_FRAMES frames since the last refresh (see the module's docstring)."""
        self._text_frames += 1
        now = time.monotonic()
        if self._text_frames < TEXT_EVERY_FRAMES or now - self._text_at < text_period():
            return False
        self._text_at, self._text_frames = now, 0
        return True

    def pending(self, fn: Callable) -> bool:
        """Whether `fn` waits for the next tick (see with_lock)."""
        return fn in self._scheduled

    def with_lock(self, fn: Callable[[], None]) -> None:
        """Run fn where it may touch Bokeh models directly. Panel runs widget callbacks without the
        document lock; Bokeh refuses direct model changes there, so they wait for the next tick
        (which holds the lock). Several requests of the same function before that tick run once: the same
        function, not one of the same name (two views' `redraw` methods are two functions; a bound method
        compares equal to another of the same function and object)."""
        if self.closed:
            return
        doc = self.doc
        if doc is None or doc.session_context is None or self.in_frame or _LOCKED.get() is doc:
            fn()
            return
        if fn in self._scheduled:
            return
        self._scheduled.add(fn)

        def run():
            self._scheduled.discard(fn)
            fn()
        doc.add_next_tick_callback(run)

    @contextlib.contextmanager
    def one_message(self):
        """Collect the frame's changes and send them as one PATCH-DOC message. Bokeh's own hold sends
        one message per changed source on release, and each message has a fixed server cost whatever
        its size (its serialiser first indexes every model of the page; benchmarks/app_frame.py).
        Panel's `unlocked` writes them as one message once the page has loaded; before that (or without
        a server) it holds nothing, so the frame holds the document itself and Bokeh sends the changes
        as it always does."""
        doc = self.doc
        with pn.io.unlocked():
            held_here = doc is not None and not doc.callbacks.hold_value
            if held_here:
                doc.hold("combine")
            try:
                yield
            finally:
                if held_here:
                    doc.unhold()
