"""The step-size ladder of the lab's samplers, and eps = auto's (autoeps.py), run in a worker process.

A ladder is seconds of numpy work; in the server process it would hold the interpreter between the
live view's frames (numpy releases the GIL only inside large operations). It runs in the runner's
sandbox (runner.py): a forked process that inherits the built samplers as they are, sends its progress and
results back, and is killed to cancel, past LIMIT_S["ladder"] or when the session ends. On a server it is started
once the compute pool (pool.py) admits it, and holds its place there while it runs: ladders pressed in many tabs
take turns instead of each taking a core.
The job is polled (`poll()`) from the session's own loop; nothing here touches a view.
"""
from __future__ import annotations

from multiprocessing.connection import wait as mp_wait

import param

from samplers.ladder import AUTO_RUNGS, Cancelled, LadderResult, auto_eps, default_ladder, ladder_csv, step_ladder

from .autoeps import AutoState, remember
from .lab import Lab
from .pool import Cancelled as NotAdmitted
from .runner import LIMIT_S, POOLS, Sandbox

LADDER_STEPS = 6
LADDER_CHAINS = 2000


def _work(send, sides, eps_values, eps0, chains, seed):
    """In the sandbox: every side's ladder in turn, progress as (side, fraction)."""
    try:
        for k, (title, sampler) in enumerate(sides):
            result = step_ladder(sampler, eps_values, chains=chains, eps0=eps0, seed=seed, title=title,
                                 progress=lambda f, k=k: send(("progress", (k + f) / len(sides))))
            send(("result", result))
        send(("done", None))
    except Cancelled:
        pass
    except Exception as err:   # a sampler that fails at some step size: say which, in the lab
        send(("failed", f"{type(err).__name__}: {err}"))


class SandboxJob(param.Parameterized):
    """Work of the lab's run in a sandbox, polled; `status` is idle, running, done, cancelled or failed. A subclass
    says what to run (`_launch(args)`) and what its messages mean (`_received`); progress, failure, the pool's
    admission, the time limit and cancelling are here."""

    status = param.Selector(default="idle", objects=["idle", "running", "done", "cancelled", "failed"])
    progress = param.Number(default=0.0, bounds=(0, 1))
    message = param.String(default="")

    def __init__(self, lab: Lab, **params):
        super().__init__(**params)
        self.lab = lab
        self._box: Sandbox | None = None
        self._run_id = None

    def _launch(self, args) -> None:
        """Start `args` = (work, ...) in a sandbox: at once without a session loop, else once the pool admits it."""
        self.progress, self.message = 0.0, ""
        self.status = "running"
        runner = self.lab.runner
        if runner.inline:
            self._box = Sandbox(*args)
            return
        self._run_id = run_id = object()
        self._box = None
        POOLS["wait"].submit(self._admitted, run_id, runner, args)

    def _admitted(self, run_id, runner, args) -> None:
        """On a waiting thread: once the pool admits it, the job's process, its place held until it ends."""
        try:
            with runner.slot():
                if self._run_id is not run_id or self.status != "running":
                    return
                box = Sandbox(*args, owner=runner)
                self._box = box
                if self._run_id is not run_id:       # cancelled meanwhile
                    box.stop()
                mp_wait([box.sentinel])      # it ends (done, killed); its pipe is the poll's to close
        except NotAdmitted:
            pass

    def _received(self, kind: str, value) -> bool:
        """A message other than progress or failure; True when it ends the job."""
        return False

    def poll(self) -> None:
        """Read what the worker sent since the last call (never blocks)."""
        if self.status != "running" or self._box is None:
            return
        try:
            for kind, value in self._box.messages():
                if kind == "progress":
                    self.progress = min(1.0, float(value))
                elif kind == "failed":
                    self._failed(value)
                    return
                elif self._received(kind, value):
                    return
        except (EOFError, OSError):
            self._failed(f"the {self.what}'s worker stopped unexpectedly")
            return
        if self._box.expired(LIMIT_S["ladder"]):
            self.cancel(f"it took longer than {LIMIT_S['ladder']:g} s")

    what = "ladder"

    def _failed(self, why: str) -> None:
        self._finish("failed", why)

    def cancel(self, why: str = "cancelled") -> None:
        if self.status == "running":
            self._finish("cancelled", f"stopped: {why}")

    def _finish(self, status: str, message: str) -> None:
        self._run_id = None
        if self._box is not None:
            # on a server its waiting thread sees it end and gives its place in the pool back
            self._box.kill()
        self._box = None
        self.message = message
        self.status = status


class LadderJob(SandboxJob):
    """Run the ladder for the lab's sides."""

    results = param.List(default=[], item_type=LadderResult)

    def __init__(self, lab: Lab, **params):
        super().__init__(lab, **params)
        self._pending: list = []
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
        self.results, self._pending = [], []
        self._launch((_work, sides, eps_values, eps0, LADDER_CHAINS, self.lab.config.seed))

    def _received(self, kind, value) -> bool:
        if kind == "result":
            self._pending.append(value)
            self.results = list(self._pending)
        elif kind == "done":
            self.results, self.progress = list(self._pending), 1.0
            self._finish("done", "")
            return True
        return False

    def csv(self) -> str:
        return ladder_csv(self.results)


def _auto_work(send, sampler, seed):
    """In the sandbox: auto_eps's rungs, progress as a fraction of all of them."""
    try:
        send(("result", auto_eps(sampler, seed=seed, progress=lambda f: send(("progress", f)))))
    except Exception as err:   # a sampler that fails at some step size: say which, in the lab
        send(("failed", f"{type(err).__name__}: {err}"))


class AutoEpsJob(SandboxJob):
    """eps = auto for one side (autoeps.py): after each build, the ladder runs for the side when it is at eps = auto
    and not measured yet; its choice is filed, and the lab rebuilt at it. A measurement under way goes on through
    rebuilds that do not change what it measures (the chains, the speed), and stops when they do. One that failed or
    ran out of time is not started again for the same configuration: the side runs at its fitted default."""

    what = "auto ε ladder"

    def __init__(self, lab: Lab, label: str, **params):
        super().__init__(lab, **params)
        self.label = label
        self._key = None          # what the job under way (or the last one that failed) measures
        lab.param.watch(lambda e: self.follow(), "version")
        self.follow()

    @property
    def side(self):
        return next((s for s in self.lab.sides if s.label == self.label), None)

    @property
    def state(self) -> AutoState | None:
        return getattr(self.side, "auto", None)

    def follow(self) -> None:
        state = self.state
        if state is None:
            self.cancel("eps is no longer auto")
            return
        if state.found is not None or state.key == self._key:
            return            # measured, under way, or given up on for this configuration
        self.cancel("the configuration changed")
        self._key = state.key
        self._launch((_auto_work, self.side.sampler, self.lab.config.seed))

    def _received(self, kind, value) -> bool:
        if kind != "result":
            return False
        remember(self._key, value)
        self.progress = 1.0
        self._finish("done", "")
        self.lab.rebuild()
        return True

    @property
    def rung(self) -> int:
        """The rung under way, from 1."""
        return min(len(AUTO_RUNGS), int(self.progress * len(AUTO_RUNGS)) + 1)
