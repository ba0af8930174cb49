"""The compute pool: a server process's heavy work, in worker processes of its own, shared fairly.

Heavy work (the Models page's builds and steps, the ladder, residual maps, typed-input and design builds, the
numeric part of a lab build) would hold the Panel process's interpreter between its sessions' frames. It runs
instead in forked worker processes (runner.py's `Sandbox`: a fork inherits what the server built, typed
potentials and edited recipes that do not pickle, and is SIGKILLed to cancel):
- at a lowered OS priority (`NICE`) and, once admitted to the pool, in the kernel's idle class (`IDLE`,
  `demote`): the Panel process's frames win the CPU whenever they want it, the pool's work has what they leave;
- within an address-space limit (`MEMORY`); a worker's memory goes back to the system when it exits, which it
  does when its job ends or its session closes;
- admitted through `Pool.slot`: at most `WORKERS` jobs compute at once in a server process (the per-process
  cap), and a session (an `owner`) has at most `QUOTA` heavy jobs computing; the next job admitted is the
  waiting one of the lowest priority class (LIGHT before HEAVY), then of the owner computing least, then of the
  owner admitted longest ago (sessions take turns), then the oldest. A job that waits while its own owner
  computes is told (`on_queued`): the page says "queued behind your other runs";
- cancelled with its session (`Pool.cancel(owner)`): its waiting jobs are dropped and its workers killed.

Page opens and light builds never enter the pool: they run in the Panel process, ahead of it by construction.
Without a server (tests, scripts, the CLI) the runner runs everything in place and the pool is unused.
The engine is the operating system's (fork, nice, setrlimit, SIGKILL) through the standard library's
multiprocessing; why not Dask, loky or ProcessPoolExecutor: docs/notes/compute-pool.md.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections.abc import Callable

WORKERS = int(os.environ.get("SGMCMC_POOL_WORKERS") or os.cpu_count() or 2)
QUOTA = 1                     # heavy jobs computing at once per session
NICE = int(os.environ.get("SGMCMC_POOL_NICE") or 10)      # added to a worker's niceness (19 at most)
MEMORY = int(os.environ.get("SGMCMC_POOL_MEMORY_MB") or 3072) << 20     # address space a worker may add
# The pool's workers in Linux's SCHED_IDLE class: a weight of 3 against a normal process's 1024 (nice 10: 110), and a
# frame that wakes on a core one of them holds takes it at once; at nice 10 two heavy Models tabs slowed a class
# beside them (issue 28, docs/notes/compute-pool.md). SGMCMC_POOL_IDLE=0: nice only.
IDLE = os.environ.get("SGMCMC_POOL_IDLE", "1") != "0"
LIGHT, HEAVY = 0, 1
QUEUED = "queued behind your other runs"


class Cancelled(Exception):
    """The job's session ended (or it was superseded) before it was admitted."""


class Pool:
    """Admission of jobs to the workers (see the module's docstring), and the workers of each owner, to kill
    them with it."""

    def __init__(self, workers: int = WORKERS, quota: int = QUOTA):
        self.workers, self.quota = workers, quota
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._waiting: list[list] = []             # [priority, seq, owner, state]
        self._running: dict[int, tuple] = {}        # seq -> (owner, priority)
        self._procs: dict[object, set] = {}         # owner -> its live Sandboxes
        self._dead = weakref.WeakSet()               # owners cancelled: nothing more of theirs is admitted
        self._admitted = weakref.WeakKeyDictionary()    # owner -> when it was last admitted (a count): turns

    # -- admission --------------------------------------------------------------------------------------
    def _computing(self, owner, heavy_only=True) -> int:
        return sum(1 for o, p in self._running.values() if o is owner and (p == HEAVY or not heavy_only))

    def _next(self):
        best = None
        for entry in self._waiting:
            priority, seq, owner, _ = entry
            if priority == HEAVY and self._computing(owner) >= self.quota:
                continue
            rank = (priority, self._computing(owner, heavy_only=False), self._admitted.get(owner, -1), seq)
            if best is None or rank < best[0]:
                best = (rank, entry)
        return None if best is None else best[1]

    @contextlib.contextmanager
    def slot(self, owner, priority: int = HEAVY, on_queued: Callable[[str], None] | None = None):
        """Hold one of the workers' places while the block runs; raises Cancelled if the owner goes first."""
        entry = [priority, next(self._seq), owner, "waiting"]
        told = False
        with self._cond:
            self._waiting.append(entry)
            try:
                while True:
                    if owner in self._dead or entry[3] == "cancelled":
                        raise Cancelled()
                    if len(self._running) < self.workers and self._next() is entry:
                        break
                    if not told and on_queued is not None and self._computing(owner, heavy_only=False):
                        told = True
                        on_queued(QUEUED)
                    self._cond.wait(1.0)
            finally:
                self._waiting.remove(entry)
            self._running[entry[1]] = (owner, priority)
            self._admitted[owner] = entry[1]
        try:
            yield
        finally:
            with self._cond:
                self._running.pop(entry[1], None)
                self._cond.notify_all()

    def waiting(self, owner=None) -> int:
        with self._cond:
            return sum(1 for e in self._waiting if owner is None or e[2] is owner)

    def computing(self, owner=None) -> int:
        with self._cond:
            return sum(1 for o, _ in self._running.values() if owner is None or o is owner)

    # -- the owners' workers ----------------------------------------------------------------------------
    def adopt(self, owner, box) -> bool:
        """Count the worker as the owner's (killed with it), in the idle class (`demote`); False (and the worker
        killed) if the owner has gone already."""
        demote(box.pid)
        with self._cond:
            if owner in self._dead:
                dead = True
            else:
                dead = False
                self._procs.setdefault(owner, set()).add(box)
        if dead:
            box.stop()
        return not dead

    def disown(self, owner, box) -> None:
        with self._cond:
            boxes = self._procs.get(owner)
            if boxes is not None:
                boxes.discard(box)
                if not boxes:
                    del self._procs[owner]

    def cancel(self, owner) -> None:
        """The owner's session has ended: its waiting jobs are dropped, its workers killed."""
        with self._cond:
            self._dead.add(owner)
            for entry in self._waiting:
                if entry[2] is owner:
                    entry[3] = "cancelled"
            boxes = self._procs.pop(owner, set())
            self._cond.notify_all()
        for box in boxes:
            box.stop()

    def workers_alive(self) -> int:
        with self._cond:
            return sum(len(b) for b in self._procs.values())


def demote(pid: int | None) -> bool:
    """Put the process in the idle scheduling class (IDLE; a process may lower its own user's processes without
    privileges); False where the system has no such class or refuses."""
    if not IDLE or not pid or not hasattr(os, "SCHED_IDLE"):
        return False
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except OSError:         # it has ended already, or the system refuses
        return False
    return True


POOL = Pool()
