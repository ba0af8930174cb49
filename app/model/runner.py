"""`SessionRunner`: everything a session does off its event loop goes through here.

A session (the lab, the Models page, a lesson's demo) hands work to its runner, which
- runs it on one of the process's bounded worker pools (`POOLS`), first come first served, or, for heavy work
  (`pool="compute"`), in a worker process of the compute pool (pool.py: niced, memory-limited, admitted fairly
  between sessions, killed when its session ends); each session keeps at
  most one job of a `tag` current: a newer one supersedes it (skipped if it has not started, its result dropped
  if it has), so a user typing or dragging a slider queues one build, not one per keystroke;
- holds it to its time limit (`LIMIT_S`, one table): past the limit the session is told and the late result is
  dropped. Work that must be killable (sympy on typed input, the ladder) runs in a `Sandbox`, a forked process
  that is killed at its limit; a thread cannot be stopped, so only the library's own bounded code runs on one;
- brings every result back one way: `deliver(fn)` runs fn on the session's event loop with its document held.
  The views supply `deliver` (app.model imports no Panel); without one (tests, scripts, the CLI) work runs in
  place;
- catches every exception in one place (`Failure`): a user's mistake (`USER_ERRORS`) is the session's to show,
  naming what was typed; anything else is a bug, logged with its traceback and shown as an internal error.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import multiprocessing as mp
import os
import pickle
import resource
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from samplers.errors import InputError

from .pool import HEAVY, MEMORY, NICE, POOL, Cancelled
from .reasons import one_line

log = logging.getLogger(__name__)

# What a user can cause: input the library refuses (InputError: a potential, sampler, recipe, design or
# gradient refused, naming what), and a step whose numbers blow up at the user's parameters. Anything else
# raised in a session's work is a bug.
USER_ERRORS = (InputError, ArithmeticError, np.linalg.LinAlgError)

# The time limits, in one table: past its limit, work is given up and the session told.
LIMIT_S = {
    "typed build": 4.0,     # a build from text typed for sympy (D, Q, U, a design): in a sandbox, killed
    "model build": 60.0,    # a Models page's model (its data, its samplers): library code on a thread, dropped
    "model upload": 20.0,   # a model file and its CSV (derived by sympy, normalised on a grid): in a sandbox, killed
    "ladder": 120.0,        # the step-size ladder: in a sandbox, killed
}

# The worker pools, bounded, shared by the sessions of this process. Builds run one at a time: they share
# lazily filled caches (samplers, recipes, potentials), so two at once could race; a session has at most one
# build current, so the queue stays short. The Models page's steps take turns on as many threads as cores.
POOLS = {
    "build": ThreadPoolExecutor(max_workers=1, thread_name_prefix="lab-build"),
    "model build": ThreadPoolExecutor(max_workers=1, thread_name_prefix="models-build"),
    "step": ThreadPoolExecutor(max_workers=2, thread_name_prefix="models-run"),
    # threads that only wait: for a compute-pool slot, then for the worker process's answer (pool.py admits)
    "wait": ThreadPoolExecutor(max_workers=64, thread_name_prefix="compute-wait"),
}


@dataclasses.dataclass(frozen=True)
class Failure:
    """What a job raised, in place of its result."""
    error: BaseException
    bug: bool            # not a user's mistake: logged with its traceback

    @property
    def message(self) -> str:
        if self.bug:
            return (f"an internal error of the lab ({type(self.error).__name__}), not caused by what you typed; "
                    "it has been logged")
        return one_line(self.error)


def attempt(work: Callable[[], Any]) -> Any:
    """work(), or the Failure it raised: the one place a session's work has its exceptions caught."""
    try:
        return work()
    except USER_ERRORS as err:
        return Failure(err, bug=False)
    except Exception as err:
        log.exception("a session's work failed")
        return Failure(err, bug=True)


class SessionRunner:
    """One session's work off its event loop (see the module's docstring). `on_failure(failure)` hears, on the
    session's loop, of a job without a `done` that failed."""

    def __init__(self, deliver: Callable[[Callable[[], None]], None] | None = None,
                 on_failure: Callable[[Failure], None] | None = None,
                 on_queued: Callable[[str | None], None] | None = None):
        self.deliver = deliver
        self.on_failure = on_failure
        self.on_queued = on_queued       # on the loop: a compute job waits behind this session's others (None: no more)
        self.closed = False
        self._ids = itertools.count(1)
        self._current: dict[str, int] = {}      # tag -> its current job
        self._settled: set[int] = set()         # jobs with a time limit whose outcome the session has had
        self._timers: dict[int, tuple[str | None, threading.Timer]] = {}

    @property
    def inline(self) -> bool:
        """Without a session loop everything runs in place."""
        return self.deliver is None

    def current(self, tag: str | None, job: int) -> bool:
        return not self.closed and (tag is None or self._current.get(tag) == job)

    def run(self, work: Callable[[], Any], done: Callable[[Any], None] | None = None, *, pool: str = "build",
            tag: str | None = None, here: bool = False, limit_s: float | None = None,
            late: Callable[[], None] | None = None) -> int:
        """work() on the pool, then done(its result, or a Failure) on the session's loop; `here` (or no loop):
        both in place, now. With `tag`, the job supersedes the tag's previous one. With `limit_s`, past it
        `late()` runs on the loop instead of done, and the result is dropped. Returns the job's number."""
        job = next(self._ids)
        if tag is not None:
            self._current[tag] = job
        self._cancel_timers(tag)
        if here or self.inline:
            self._done(tag, job, done, attempt(work))
            return job

        def task():
            if not self.current(tag, job):        # superseded while it waited
                return
            if pool == "compute":
                result = self.compute(work, lambda: self.current(tag, job))
                if result is _DROPPED:
                    return
            else:
                result = attempt(work)
            if self.current(tag, job) and (done is not None or isinstance(result, Failure)):
                self.deliver(lambda: self._done(tag, job, done, result))
        POOLS["wait" if pool == "compute" else pool].submit(task)
        if limit_s is not None:
            timer = threading.Timer(limit_s, lambda: self.deliver(lambda: self._late(tag, job, late)))
            timer.daemon = True
            self._timers[job] = (tag, timer)
            timer.start()
        return job

    def _done(self, tag, job, done, result) -> None:
        """On the session's loop."""
        if not self.current(tag, job) or job in self._settled:
            return
        self._settle(job)
        if done is not None:
            done(result)
        elif isinstance(result, Failure) and self.on_failure is not None:
            self.on_failure(result)

    def _late(self, tag, job, late) -> None:
        """On the session's loop: the job ran out of time (unless its result came first)."""
        if not self.current(tag, job) or job in self._settled:
            return
        self._settle(job)
        if tag is not None:
            self._current[tag] = next(self._ids)       # its result, when it comes, is dropped
        if late is not None:
            late()

    def _settle(self, job) -> None:
        entry = self._timers.pop(job, None)
        if entry is not None:
            entry[1].cancel()
            self._settled.add(job)
            if len(self._settled) > 64:     # only the newest can still be waited for
                self._settled = set(sorted(self._settled)[-16:])

    def _cancel_timers(self, tag) -> None:
        """A superseded job's clock stops with it."""
        if tag is None:
            return
        for job in [j for j, (t, _) in self._timers.items() if t == tag and not self.current(tag, j)]:
            self._timers.pop(job)[1].cancel()

    def cancel(self, tag: str) -> None:
        """Drop the tag's current job: its result, when it comes, is ignored."""
        self._current[tag] = next(self._ids)
        self._cancel_timers(tag)

    def close(self) -> None:
        """End of session: nothing more is delivered, no clock keeps running, and the session's worker processes
        are killed, its waiting compute jobs dropped."""
        self.closed = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        POOL.cancel(self)

    # -- the compute pool -------------------------------------------------------------------------------
    def queued(self, message: str | None) -> None:
        """From a waiting thread: tell the session (on its loop) that its job waits, or no longer does."""
        if self.on_queued is not None and self.deliver is not None and not self.closed:
            self.deliver(lambda: self.closed or self.on_queued(message))

    @contextlib.contextmanager
    def slot(self, priority: int = HEAVY):
        """Hold a place in the compute pool (waiting for it on this thread); the session is told while it waits
        behind its own other work, and told again once admitted. Raises pool.Cancelled if the session ends."""
        told = []
        with POOL.slot(self, priority, on_queued=lambda m: (told.append(m), self.queued(m))):
            if told:
                self.queued(None)
            yield

    def compute(self, work: Callable[[], Any], wanted: Callable[[], bool] = lambda: True,
                priority: int = HEAVY, memory: int | None = None) -> Any:
        """work() in a worker process of the compute pool, once admitted (on a thread that may wait): its
        result (it must pickle), the Failure it raised, or _DROPPED when the session ended or no longer wants it.
        In place without a session loop."""
        if self.inline:
            return attempt(work)
        try:
            with self.slot(priority):
                if not wanted() or self.closed:
                    return _DROPPED
                box = Sandbox(_compute, work, memory=POOL_MEMORY if memory is None else memory, owner=self)
                kind, value = box.first(None)
        except Cancelled:
            return _DROPPED
        if kind == "ok":
            return value
        if kind == "failed":
            return value
        if self.closed or not wanted():
            return _DROPPED
        return Failure(MemoryError(f"the worker stopped ({kind}): it may have needed more than "
                                   f"{POOL_MEMORY >> 20} MB"), bug=False)


_DROPPED = object()


def _compute(send, work):
    """In a worker process: the work's result, or its Failure (the error itself if it pickles)."""
    result = attempt(work)
    if isinstance(result, Failure):
        send(("failed", portable(result)))
        return
    send(("ok", result))


def portable(failure: Failure) -> Failure:
    """The failure as it can cross to the session's process: its error itself if that pickles."""
    try:
        pickle.loads(pickle.dumps(failure.error))
        return Failure(failure.error.with_traceback(None), failure.bug)
    except Exception:
        return Failure(RuntimeError(f"{type(failure.error).__name__}: {failure.error}"), failure.bug)


# -- the sandbox ------------------------------------------------------------------------------------------
_MEMORY_LIMIT: int | None = None       # in a sandbox with a memory limit: the address space it may use
POOL_MEMORY = MEMORY
_FORK_LOCK = threading.Lock()


def _vm_bytes() -> int:
    return int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmSize"))) * 1024


def memory_left() -> int | None:
    """In a sandbox with a memory limit: the bytes of address space it has left (None: no limit)."""
    return None if _MEMORY_LIMIT is None else _MEMORY_LIMIT - _vm_bytes()


def _sandboxed(target, conn, memory, args):
    global _MEMORY_LIMIT
    # the fork shares the server's signal wake-up socket: a signal handled here would reach the server's
    # event loop as its own (a SIGTERM here once shut the whole server down)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    # heavy work: the server's frames win the CPU whenever they want it
    try:
        os.nice(NICE)
    except OSError:
        pass
    if memory is not None:
        try:
            limit = _vm_bytes() + memory
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            _MEMORY_LIMIT = limit
        except (OSError, ValueError, StopIteration):
            pass
    try:
        target(conn.send, *args)
    finally:
        conn.close()


class Sandbox:
    """`target(send, *args)` in a forked process at a lowered priority (pool.NICE): it inherits what the server
    built (typed potentials and edited recipes, which do not pickle), sends what it has to say with `send`, and
    is killed (SIGKILL: nothing of it runs on) when its time is up or nobody wants its answer. `memory`: bytes of
    address space it may add. `owner`: a session's runner, which kills it when the session ends."""

    def __init__(self, target: Callable, *args, memory: int | None = None, owner=None):
        # one fork at a time: a sibling forked from another thread before `there` is closed here would hold its
        # write end, and this sandbox's death would never read as the end of its pipe
        with _FORK_LOCK:
            here, there = mp.Pipe(duplex=False)
            self._proc = mp.get_context("fork").Process(target=_sandboxed, args=(target, there, memory, args),
                                                        daemon=True)
            self._proc.start()
            there.close()
        self._conn = here
        self.started = time.monotonic()
        self.owner = owner
        if owner is not None:
            POOL.adopt(owner, self)

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    @property
    def sentinel(self) -> int:
        """Ready when it has ended (multiprocessing.connection.wait)."""
        return self._proc.sentinel

    def expired(self, limit_s: float) -> bool:
        return time.monotonic() - self.started > limit_s

    def messages(self):
        """What it sent since the last call, without waiting; EOFError or OSError when it died first."""
        while self._conn.poll():
            yield self._conn.recv()

    def receive(self, limit_s: float | None = None) -> Any:
        """Its next message, waiting for it (at most limit_s: None past it); EOFError or OSError if it died first.
        It lives on."""
        if not self._conn.poll(limit_s):
            return None
        return self._conn.recv()

    def first(self, limit_s: float | None) -> tuple[str, Any]:
        """Its first message, waiting at most limit_s (None: until it ends): ("time", None) past it, ("died", None)
        if it died first; it is killed either way."""
        try:
            return self._conn.recv() if self._conn.poll(limit_s) else ("time", None)
        except (EOFError, OSError):
            return ("died", None)
        finally:
            self.kill()

    def stop(self) -> None:
        """SIGKILL only (from any thread): whoever reads its pipe sees it end, and closes it."""
        if self._proc.is_alive():
            self._proc.kill()

    def kill(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join(timeout=1)
        self._conn.close()
        if self.owner is not None:
            POOL.disown(self.owner, self)
