"""The step-size ladder of the lab's samplers, run in a worker process.

A ladder is seconds of numpy work; in the server process it would hold the interpreter between the
live view's frames (numpy releases the GIL only inside large operations). A forked process inherits
the built samplers as they are (typed potentials and edited recipes included, which do not pickle),
sends its progress and results back through a pipe, and is simply terminated to cancel.
The job is polled (`poll()`) from the session's own loop; nothing here touches a view.
"""
from __future__ import annotations

import multiprocessing as mp
import signal
import time

import param

from samplers.ladder import Cancelled, LadderResult, default_ladder, ladder_csv, step_ladder

from .lab import Lab

LADDER_STEPS = 6
LADDER_CHAINS = 2000
TIME_LIMIT_S = 120      # a ladder that has not finished by then is stopped and said so


def _work(conn, sides, eps_values, eps0, chains, seed):
    """In the worker: every side's ladder in turn, progress as (side, fraction)."""
    # the fork shares the server's signal wake-up socket: a signal handled here would reach the server's
    # event loop as its own (a SIGTERM here once shut the whole server down)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    try:
        for k, (title, sampler) in enumerate(sides):
            result = step_ladder(sampler, eps_values, chains=chains, eps0=eps0, seed=seed, title=title,
                                 progress=lambda f, k=k: conn.send(("progress", (k + f) / len(sides))))
            conn.send(("result", result))
        conn.send(("done", None))
    except Cancelled:
        pass
    except Exception as err:   # a sampler that fails at some step size: say which, in the lab
        conn.send(("failed", f"{type(err).__name__}: {err}"))
    finally:
        conn.close()


class LadderJob(param.Parameterized):
    """Run the ladder for the lab's sides; `status` is idle, running, done, cancelled or failed."""

    status = param.Selector(default="idle", objects=["idle", "running", "done", "cancelled", "failed"])
    progress = param.Number(default=0.0, bounds=(0, 1))
    message = param.String(default="")
    results = param.List(default=[], item_type=LadderResult)

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab = lab
        self._proc = self._conn = None
        self._version = None
        self._started = 0.0
        # a new configuration makes a running ladder meaningless: stop it
        lab.param.watch(lambda e: self.cancel("the configuration changed"), "version")

    def plan(self) -> tuple[list[float], float]:
        """The step sizes (sampler A's ε and a decade below it, for both sides) and the reference ε₀."""
        eps0 = float(self.lab.sides[0].sampler.params.get("eps") or 0.01)
        return [float(e) for e in default_ladder(eps0, LADDER_STEPS)], eps0

    def start(self) -> None:
        if self.status == "running":
            return
        if not self.lab.sides:
            self.status, self.message = "failed", "the samplers are still being built: run it once the plots show"
            return
        eps_values, eps0 = self.plan()
        sides = [(f"{s.label}: {s.title}", s.sampler) for s in self.lab.sides]
        if any("eps" not in s.params for _, s in sides):
            self.status, self.message = "failed", "the ladder needs samplers with a step size eps"
            return
        here, there = mp.Pipe(duplex=False)
        ctx = mp.get_context("fork")
        self._proc = ctx.Process(target=_work, args=(there, sides, eps_values, eps0, LADDER_CHAINS,
                                                     self.lab.config.seed), daemon=True)
        self._proc.start()
        there.close()
        self._conn, self._started = here, time.monotonic()
        self.results, self.progress, self.message = [], 0.0, ""
        self.status = "running"

    def poll(self) -> None:
        """Read what the worker sent since the last call (never blocks)."""
        if self.status != "running" or self._conn is None:
            return
        results = list(self.results)
        try:
            while self._conn.poll():
                kind, value = self._conn.recv()
                if kind == "progress":
                    self.progress = min(1.0, float(value))
                elif kind == "result":
                    results.append(value)
                elif kind == "done":
                    self.results, self.progress = results, 1.0
                    self._finish("done", "")
                    return
                elif kind == "failed":
                    self.results = results
                    self._finish("failed", value)
                    return
        except (EOFError, OSError):
            self.results = results
            self._finish("failed", "the ladder's worker stopped unexpectedly")
            return
        if results != self.results:
            self.results = results
        if time.monotonic() - self._started > TIME_LIMIT_S:
            self.cancel(f"it took longer than {TIME_LIMIT_S} s")

    def cancel(self, why: str = "cancelled") -> None:
        if self.status == "running":
            self._finish("cancelled", f"stopped: {why}")

    def _finish(self, status: str, message: str) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()     # SIGKILL: nothing runs in the worker, nothing reaches the server (see _work)
        if self._proc is not None:
            self._proc.join(timeout=1)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
        self.message = message
        self.status = status

    def csv(self) -> str:
        return ladder_csv(self.results)
