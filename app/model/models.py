"""The Models page without a browser: a data model (samplers/targets/live.py) run live with its sampler pair,
and the model's own metric against steps for both samplers.

A model's build (generating or loading its data, the two samplers, the metric at the start) takes from
milliseconds to seconds, and one step of a large model tens of milliseconds; neither runs on the session's
event loop when there is one (a `schedule`; the session's runner, runner.py, does the work off it):
- on a server, the runs live in a worker process of the compute pool (pool.py), one per session's runs (an actor,
  `RemoteRuns`): it builds the model (its data stays there) and steps the chains when asked, one chunk at a time,
  each chunk admitted by the pool; the session keeps only the metric's history. Killing the worker ends the run
  and returns its memory (a new build, the session's end). Shipping the chains each step instead would cost more
  than the step for most models (docs/notes/compute-pool.md);
- a build has a time limit (LIMIT_S["model build"]): past it the page says so and the late result is dropped;
- the runs advance in chunks of about CHUNK_S: each chunk steps both
  samplers in turn and records the metric every `every` steps, `every` chosen from the measured costs so that the
  metric takes at most METRIC_SHARE of the stepping. A chunk queues the next one itself while the page keeps
  taking the points (`take_points`, from the view's frames): a closed page stops its run within STALE_S.
The session's loop only takes the new points. Without a schedule (tests, scripts) everything runs in place.

The metric is given each run's live chains as the target's own coordinates, z[:, :dim] (states (chains, dim)).
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import multiprocessing as mp
import threading
import time
import types
from collections import deque
from collections.abc import Callable
from functools import partial

import numpy as np
import param

from samplers.cache import BoundedCache
from samplers.registry import build_sampler
from samplers.run import Ensemble
from samplers.targets.live import LIVE_MODELS, LiveModel

from .config import url_keys, url_meta
from .exports import safe_file_name
from .lab import MAX_STATE
from .pool import Cancelled
from .reasons import Notice, NoticeKind, one_line
from .runner import _FORK_LOCK, LIMIT_S, POOL_MEMORY, USER_ERRORS, Failure, Sandbox, attempt, portable
from .session import Session
from .urlstate import MAX_MESSAGES, NAV_KEYS, parse_value, quoted, reason_text, url_text

CHUNK_S = 0.1              # a worker's turn: the page shows the run's progress at least this often
MAX_CHUNK_S = 0.5          # ... and at most this late, however costly the metric
METRIC_SHARE = 0.1         # the metric's cost, at most this share of the steps' (measured, per run)
STALE_S = 2.0              # a run whose points nobody took for this long stops queueing chunks
MAX_POINTS = 2000          # metric points kept per run: beyond, every other goes and the spacing doubles
MAX_CHAINS = 256
RATE_WINDOW_S = 3.0        # updates/s: steps over the last seconds of play
_MODELS = BoundedCache(4)     # built models (their data), shared by the sessions: read only
LABELS = ("A", "B")


def model_keys() -> list[str]:
    return list(LIVE_MODELS)


def model_options() -> dict[str, str]:
    """title -> key, in the registry's order."""
    return {title: key for key, (title, _) in LIVE_MODELS.items()}


def default_model() -> str:
    return model_keys()[0] if LIVE_MODELS else ""


def _model(text: str) -> str:
    if text not in LIVE_MODELS:
        raise ValueError(f"unknown model (choose from {', '.join(model_keys())})")
    return text


class ModelsConfig(param.Parameterized):
    """What a Models link reproduces: the model, the seed (its data's and the chains'), the chains and each
    sampler's step size (None: the model's own). Each declares its URL key (`url`; `always`: written even at its
    default), as LabConfig's do."""

    model = param.String(default="", doc="a LIVE_MODELS key ('': the first)",
                         metadata=url_meta("model", always=True, parse=_model))
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), label="Seed (data and chains)",
                         metadata=url_meta("seed", always=True))
    chains = param.Integer(default=None, allow_None=True, bounds=(1, MAX_CHAINS), label="Chains",
                           doc="None: the model's own", metadata=url_meta("n"))
    eps_a = param.Number(default=None, allow_None=True, bounds=(0, None), inclusive_bounds=(False, True),
                         label="Step size A", metadata=url_meta("a.eps"))
    eps_b = param.Number(default=None, allow_None=True, bounds=(0, None), inclusive_bounds=(False, True),
                         label="Step size B", metadata=url_meta("b.eps"))

    @property
    def key(self) -> str:
        return self.model or default_model()


# -- URL state ------------------------------------------------------------------------------------------
URL_KEYS = url_keys(ModelsConfig)


def models_query(cfg: ModelsConfig) -> dict[str, str]:
    """The configuration as query items: those declared `always` (the model by its key), the rest when set."""
    q = {}
    for name, key in URL_KEYS.items():
        value = cfg.key if name == "model" else getattr(cfg, name)    # '' is the first model: a link names it
        if value is not None and (cfg.param[name].metadata["always"] or value != cfg.param[name].default):
            q[key] = url_text(value)
    return q


def from_models_query(query: dict[str, str]) -> tuple[dict, list[str]]:
    """ModelsConfig updates from a link's items, and one message per item ignored (its key and value quoted)."""
    names = {v: k for k, v in URL_KEYS.items()}
    upd, errors = {}, []
    for key, text in query.items():
        if key not in names:
            if key not in NAV_KEYS:
                errors.append(f"unknown URL key {quoted(key)}")
            continue
        name = names[key]
        try:
            upd[name] = parse_value(ModelsConfig.param[name], text)
        except ValueError as err:
            errors.append(f"URL {quoted(key)}={quoted(text)}: {reason_text(err)}")
    if len(errors) > MAX_MESSAGES:
        errors[MAX_MESSAGES:] = [f"and {len(errors) - MAX_MESSAGES} more items of the link ignored"]
    return upd, errors


def apply_models_query(cfg: ModelsConfig, query: dict[str, str]) -> list[str]:
    """A link's configuration in one update (one rebuild); what it leaves out goes back to the defaults."""
    upd, errors = from_models_query(query)
    defaults = {k: ModelsConfig.param[k].default for k in URL_KEYS}
    cfg.param.update(**(defaults | upd))
    return errors


# -- the runs -------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Side:
    label: str
    key: str            # the sampler's registry key
    title: str
    params: dict        # what it runs with
    ens: Ensemble


class RunsHistory:
    """The metric's history of both samplers, as the page takes it: one step list for both (they are scored at
    the same steps) and one value list per sampler; the rate and the chunk hand-over. A worker adds to it while
    the session's loop takes the new points (`take_points`): the history is only touched under `lock`."""

    def __init__(self, model, config: dict, sides: list, chains: int):
        self.model, self.config, self.sides, self.chains = model, config, sides, chains
        self.t = 0
        self.lock = threading.Lock()
        self.steps: list[int] = []
        self.values: list[list[float]] = [[] for _ in sides]
        self.taken = 0              # points the view has taken
        self.thinned = False        # the history was thinned since the view last took points: send it whole
        self.marks: deque = deque()     # (time, t) at each chunk's end, for the rate
        self.error: str | None = None
        self.diverged = [0 for _ in sides]
        self.told = [0 for _ in sides]      # diverged chains the page has been told of
        self.stop = False           # replaced or paused: a chunk under way ends at its next step
        self.busy = False           # a chunk is queued or under way
        self.taken_at = time.monotonic()

    def _mark(self) -> None:
        now = time.monotonic()
        with self.lock:
            self.marks.append((now, self.t))
            while len(self.marks) > 2 and now - self.marks[1][0] > RATE_WINDOW_S:
                self.marks.popleft()

    def close(self) -> None:
        """The runs are no longer wanted (replaced, or the session ended)."""
        self.stop = True

    def claim(self) -> bool:
        """Take the runs for a chunk: False when one is queued or under way."""
        with self.lock:
            if self.busy:
                return False
            self.busy = True
            return True

    def release(self, keep: bool) -> bool:
        """A chunk has ended: keep the runs for the next one (returns keep), or let them go."""
        with self.lock:
            self.busy = keep
        return keep

    def rate(self) -> float | None:
        """Updates (a step of both samplers) per second over the last RATE_WINDOW_S of play."""
        with self.lock:
            if len(self.marks) < 2:
                return None
            (t0, s0), (t1, s1) = self.marks[0], self.marks[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else None

    def restart_rate(self) -> None:
        with self.lock:
            self.marks.clear()
            self.marks.append((time.monotonic(), self.t))

    def take_points(self) -> tuple[bool, list[int], list[list[float]]]:
        """(whole, steps, values per sampler): the points since the last call, or the whole history when it
        was thinned since (whole True)."""
        with self.lock:
            self.taken_at = time.monotonic()
            whole = self.thinned
            start = 0 if whole else self.taken
            steps, values = self.steps[start:], [hist[start:] for hist in self.values]
            self.taken, self.thinned = len(self.steps), False
        return whole, steps, values

    def history(self) -> tuple[list[int], list[list[float]]]:
        with self.lock:
            return list(self.steps), [list(h) for h in self.values]

    def last(self) -> list[float]:
        with self.lock:
            return [hist[-1] if hist else math.nan for hist in self.values]


class ModelRuns(RunsHistory):
    """Both samplers on one built model, stepped together, here (in the process that built them)."""

    def __init__(self, model: LiveModel, config: dict, sides: list[Side]):
        super().__init__(model, config, sides, sides[0].ens.z.shape[0])
        self.every = 1              # metric every this many steps
        self.min_every = 1          # ... at least (doubles each time the history is thinned)
        self.step_s = 0.0           # measured: one step of both samplers, and one metric of both
        self.metric_s = 0.0
        self._metric_times: deque = deque(maxlen=8)
        self.halt = None            # in a worker: shared memory the session sets to stop a chunk under way
        self._record()

    def _record(self) -> None:
        start = time.perf_counter()
        values = []
        for side in self.sides:
            alive = side.ens.guard.alive
            theta = side.ens.z[alive, : side.ens.sampler.dim]
            with np.errstate(all="ignore"):
                values.append(float(self.model.metric(theta)) if len(theta) else math.nan)
        # its cost: the least of the last few calls (one call slowed by the other threads, the server's loop
        # among them, would otherwise space the points out for a while)
        self._metric_times.append(time.perf_counter() - start)
        self.metric_s = min(self._metric_times)
        with self.lock:
            self.steps.append(self.t)
            for hist, v in zip(self.values, values):
                hist.append(v)
            if len(self.steps) > MAX_POINTS:
                self.steps = self.steps[::2]
                self.values = [hist[::2] for hist in self.values]
                self.min_every *= 2
                self.thinned = True
        if self.step_s > 0:
            self.every = max(self.min_every, math.ceil(self.metric_s / (METRIC_SHARE * self.step_s)))

    def chunk(self, steps: int | None = None, budget_s: float = CHUNK_S) -> None:
        """Advance both samplers by `steps`, or for about `budget_s` (at least one step); the metric every
        `every` steps and at the end. Errors of the dynamics end it with `error` set."""
        start = time.perf_counter()
        done = 0
        budget = max(budget_s, min(MAX_CHUNK_S, 2 * self.metric_s / METRIC_SHARE))
        while not self.stop and not (self.halt is not None and self.halt.value):
            t0 = time.perf_counter()
            for side in self.sides:
                try:
                    side.ens.advance(1)
                except USER_ERRORS as err:
                    self.error = f"{side.key} stopped at step {side.ens.t}: {one_line(err)}"
                    self.stop = True
                    break
            else:
                self.t += 1
                done += 1
                took = time.perf_counter() - t0
                self.step_s = took if not self.step_s else 0.9 * self.step_s + 0.1 * took
                last = done == steps if steps is not None else time.perf_counter() - start >= budget
                if last or self.t % self.every == 0:
                    self._record()
                if last:
                    break
        self.diverged = [side.ens.n_diverged for side in self.sides]
        self._mark()


@dataclasses.dataclass
class Built:
    runs: ModelRuns | None = None
    error: str = ""


def cached_model(key: str, seed: int) -> LiveModel:
    """The built model (its data), shared by the sessions: build it once per process for a few keys."""
    builder = LIVE_MODELS[key][1]
    k = (key, seed, builder)           # the builder too: an entry registered again is built again
    return _MODELS.get_or_make(k, lambda: builder(seed=seed, size="default"))


def build(cfg: dict) -> Built:
    """The runs of a configuration (ModelsConfig's values), or why not. Pure: a worker runs it."""
    key = cfg["model"] or default_model()
    if key not in LIVE_MODELS:
        return Built(error=f"unknown model {quoted(key)} (choose from {', '.join(model_keys()) or 'none yet'})")
    try:
        model = cached_model(key, cfg["seed"])
        chains = cfg["chains"] or model.chains
        pot = model.potential
        sides, theta0 = [], None
        for label, name, eps in zip(LABELS, model.pair, (cfg["eps_a"], cfg["eps_b"])):
            params = dict(model.params.get(name, {}))
            if eps is not None:
                params["eps"] = eps
            sampler = build_sampler(name, pot, None, model.batch, **params)
            if chains * sampler.n > MAX_STATE:
                return Built(error=f"{chains} chains of a {sampler.n}-variable state are too many for one session "
                                   f"(at most {MAX_STATE // sampler.n})")
            ens = Ensemble(sampler, chains, cfg["seed"])
            if model.init is not None:
                # both samplers start from the same states: one draw, from the seed
                if theta0 is None:
                    theta0 = np.asarray(model.init(chains, np.random.default_rng(cfg["seed"])), float)
                ens.z[:, : sampler.dim] = theta0[:, : sampler.dim]
                if theta0.shape[1] == sampler.n:      # the model gave whole states, auxiliaries too
                    ens.z[:] = theta0
            sides.append(Side(label, name, sampler.title, dict(sampler.params), ens))
        config = dict(model=key, seed=cfg["seed"], chains=chains, batch=model.batch,
                      samplers={s.label: dict(key=s.key, params=_plain(s.params)) for s in sides})
        return Built(ModelRuns(model, config, sides))
    except USER_ERRORS as err:
        return Built(error=f"{key}: {one_line(err)}")


def _plain(params: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in params.items()}


# -- the runs in a worker process (an actor of the compute pool) ------------------------------------------
@dataclasses.dataclass
class ModelInfo:
    """What the page shows of a model built in a worker: LiveModel's plain fields."""
    key: str
    title: str
    metric_name: str
    lower_is_better: bool
    pair: tuple
    params: dict
    batch: int | None
    chains: int
    description: str
    potential: types.SimpleNamespace      # its dim


def _news(runs: ModelRuns) -> dict:
    whole, steps, values = runs.take_points()
    return dict(whole=whole, steps=steps, values=values, t=runs.t, diverged=list(runs.diverged), error=runs.error)


def _serve(send, cfg: dict, commands, halt) -> None:
    """In the worker: build, then a chunk per command, each answered with the new points; `halt` (shared memory)
    set by the session ends a chunk at its next step."""
    out = attempt(partial(build, cfg))
    if isinstance(out, Failure) or out.runs is None:
        send(("built", Built(error=f"the model could not be built: {out.message}")
              if isinstance(out, Failure) else out))
        return
    runs = out.runs
    runs.halt = halt
    m = runs.model
    info = ModelInfo(m.key, m.title, m.metric_name, m.lower_is_better, tuple(m.pair), _plain_tree(m.params),
                     m.batch, m.chains, m.description, types.SimpleNamespace(dim=m.potential.dim))
    sides = [Side(s.label, s.key, s.title, _plain(s.params), None) for s in runs.sides]
    send(("built", (info, runs.config, sides, runs.chains, _news(runs))))
    while True:
        try:
            steps = commands.recv()
        except (EOFError, OSError):      # the session has gone
            return
        runs.stop = False
        result = attempt(partial(runs.chunk, steps))
        if isinstance(result, Failure):
            send(("failed", portable(result)))
        else:
            send(("chunk", _news(runs)))


def _plain_tree(params: dict) -> dict:
    return {k: _plain(v) if isinstance(v, dict) else v for k, v in params.items()}


class RemoteRuns(RunsHistory):
    """The runs of a worker process (`_serve`): its metric's history here, its chains there. `chunk` asks for
    one chunk and waits for its points (on a thread, within a compute-pool slot)."""

    def __init__(self, box: Sandbox, commands, halt, built: tuple):
        self._halt = halt
        self.closed = False
        info, config, sides, chains, news = built
        super().__init__(info, config, sides, chains)
        self.box, self.commands = box, commands
        self._apply(news)

    @property
    def stop(self) -> bool:
        return bool(self._halt.value)

    @stop.setter
    def stop(self, value: bool) -> None:
        self._halt.value = bool(value)

    def _apply(self, news: dict) -> None:
        with self.lock:
            if news["whole"]:
                self.steps, self.values, self.thinned = news["steps"], news["values"], True
            else:
                self.steps.extend(news["steps"])
                for hist, v in zip(self.values, news["values"]):
                    hist.extend(v)
            self.t = news["t"]
        self.diverged = news["diverged"]
        if news["error"] is not None:
            self.error = news["error"]
            self.stop = True

    def chunk(self, steps: int | None = None) -> None:
        """One chunk in the worker; raises what it raised, or RuntimeError if the worker has died."""
        try:
            self.commands.send(steps)
            kind, value = self.box.receive()
        except (EOFError, OSError, BrokenPipeError, TypeError) as err:
            if self.closed:         # killed with its session, or replaced: nobody waits for the chunk
                self.stop = True
                return
            raise RuntimeError("the model's worker process stopped") from err
        if kind == "failed":
            raise value.error
        self._apply(value)
        self._mark()

    def close(self) -> None:
        self.closed = True
        super().close()
        self.box.stop()


def remote_build(cfg: dict, owner, limit_s: float | None = None) -> Built | None:
    """The runs of a configuration in a worker process of the owner's (a session's runner): built there and kept
    there. None past limit_s (the worker killed)."""
    with _FORK_LOCK:
        commands, to_worker = mp.Pipe(duplex=False)
    halt = mp.get_context("fork").RawValue("b", 0)
    box = Sandbox(_serve, cfg, commands, halt, memory=POOL_MEMORY, owner=owner)
    commands.close()
    try:
        got = box.receive(limit_s)
    except (EOFError, OSError):
        box.kill()
        return Built(error="the model could not be built: its worker process stopped (out of memory?)")
    if got is None:
        box.kill()
        return None
    kind, value = got
    if isinstance(value, Built):
        box.kill()
        return value
    return Built(RemoteRuns(box, to_worker, halt, value))


class ModelsLab(Session):
    """The Models page's state: builds the configured model's runs and plays them."""

    error = param.String(default="", doc="why there is no run: the build failed (the previous run stays)")
    rate = param.Number(default=None, allow_None=True, doc="updates (a step of both samplers) per second")

    def __init__(self, config: ModelsConfig | None = None, schedule: Callable | None = None, **params):
        super().__init__(schedule, **params)
        self.config = config or ModelsConfig()
        self.runs: ModelRuns | None = None
        self.config.param.watch(lambda *_: self.rebuild(), list(URL_KEYS))
        self.rebuild()

    # -- building ------------------------------------------------------------------------------------
    def build_job(self) -> dict:
        cfg = {k: getattr(self.config, k) for k in URL_KEYS}
        if self.runner.inline:
            return dict(work=partial(build, cfg), pool="model build", limit_s=LIMIT_S["model build"],
                        late=partial(self._too_long, cfg["model"]))
        # in a worker, whose limit counts from its admission to the pool (not while it waits its turn)
        return dict(work=partial(self._remote_build, cfg), pool="wait")

    def _remote_build(self, cfg: dict) -> Built:
        """On a waiting thread: the runs built in a worker process of this session's, once the pool admits it."""
        try:
            with self.runner.slot():
                out = remote_build(cfg, self.runner, LIMIT_S["model build"])
        except Cancelled:
            return Built(error="the session ended")
        if out is None:
            return Built(error=self._too_long_text(cfg["model"]))
        if self.runner.closed and out.runs is not None:
            out.runs.close()
        return out

    def _too_long(self, key: str) -> None:
        self.error = self._too_long_text(key)

    @staticmethod
    def _too_long_text(key: str) -> str:
        return (f"building the model {quoted(key or default_model())} took longer than "
                f"{LIMIT_S['model build']:g} s: given up")

    def install(self, out: Built | Failure) -> None:
        if isinstance(out, Failure):        # never lose a build silently
            out = Built(error=f"the model could not be built: {out.message}")
        if out.runs is None:
            self.error = out.error
            self.playing = False
            return
        if self.runs is not None:
            self.runs.close()          # a worker's runs: the worker goes, and its memory with it
        self.error = ""
        self.runs = out.runs
        self.rate = None
        self.version += 1
        if self.playing:
            self.runs.restart_rate()
            self._submit()

    @property
    def can_run(self) -> bool:
        return (self.runs is not None and not self.error and self.runs.error is None
                and not all(n >= self.runs.chains for n in self.runs.diverged))

    # -- running -------------------------------------------------------------------------------------
    def play(self) -> None:
        if self.can_run:
            if self.notice is not None and self.notice.kind is not NoticeKind.LINK:
                self.notice = None       # a link's (what of it was ignored) stays: its play=1 plays at once
            self.playing = True
            self.runs.stop = False
            self.runs.restart_rate()
            self._submit()
        elif self.building:
            self._play_after = True

    def pause(self, notice: Notice | None = None) -> None:
        super().pause(notice)
        if self.runs is not None:
            self.runs.stop = True

    def step(self, steps: int = 1) -> None:
        """`steps` steps while paused; `stepped` is triggered once they are done."""
        self.pause()
        if not self.can_run:
            return
        runs = self.runs
        runs.stop = False
        if self.runner.inline:
            runs.chunk(steps)
            self._stepped(runs, None)
            return
        if not runs.claim():
            return

        def work():
            try:
                self._chunk(runs, steps)
            finally:
                runs.release(False)
        self.runner.run(work, partial(self._stepped, runs), pool=self._pool(runs))

    def _stepped(self, runs: ModelRuns, result) -> None:
        if isinstance(result, Failure):
            self.failed(result)
        elif runs is self.runs:
            self._after_chunk(runs)
            self.param.trigger("stepped")

    def _submit(self) -> None:
        """Queue the next chunk of the playing runs (none when one is queued or under way)."""
        runs = self.runs
        if not self.runner.inline and runs is not None and runs.claim():
            self.runner.run(partial(self._play_chunk, runs), pool=self._pool(runs))

    @staticmethod
    def _pool(runs) -> str:
        return "wait" if isinstance(runs, RemoteRuns) else "step"

    def _chunk(self, runs, steps: int | None = None) -> None:
        """One chunk: a worker process's within a slot of the compute pool (its turn among the sessions)."""
        if not isinstance(runs, RemoteRuns):
            runs.chunk(steps)
            return
        try:
            with self.runner.slot():
                if not runs.stop or steps is not None:
                    runs.chunk(steps)
        except Cancelled:
            runs.stop = True

    def _play_chunk(self, runs: ModelRuns) -> None:
        """On a run worker: one chunk, then the next one queued at the back, while the page takes the points."""
        go_on = False
        try:
            self._chunk(runs)
            fresh = time.monotonic() - runs.taken_at < STALE_S
            go_on = (not runs.stop and runs.error is None and fresh
                     and not all(n >= runs.chains for n in runs.diverged))
        finally:
            # handed on under the lock: the loop's _submit must not start a second chain beside this one
            go_on = runs.release(go_on)
        if go_on:
            self.runner.run(partial(self._play_chunk, runs), pool=self._pool(runs))

    def advance(self, steps: int) -> None:
        """Play `steps` steps in place (tests and scripts; the page plays on the workers)."""
        if self.can_run:
            self.runs.chunk(steps)
            self._after_chunk(self.runs)

    def take_points(self):
        """The new metric points for the view (see ModelRuns.take_points), the rate and any stop reason
        brought up to date; the chain of chunks is restarted if it stopped for want of takers."""
        runs = self.runs
        if runs is None:
            return False, [], [[], []]
        out = runs.take_points()
        self._after_chunk(runs)
        if self.playing and self.can_run:
            self._submit()
        return out

    def _after_chunk(self, runs: ModelRuns) -> None:
        if self.playing:
            self.rate = runs.rate()
        if runs.error is not None:
            self.pause(Notice(NoticeKind.FAILED, f"{runs.error}. Change the step size (smaller usually helps) "
                                                 "or reset."))
            return
        for i, (side, n) in enumerate(zip(runs.sides, runs.diverged)):
            if n > runs.told[i]:
                runs.told[i] = n
                eps = side.params.get("eps")
                hint = f" — try a smaller step size, e.g. {eps / 4:.3g}" if eps else ""
                self.notice = Notice(NoticeKind.DIVERGED, f"{n} of {runs.chains} chains of {side.key} diverged by "
                                                          f"step {runs.t} and were frozen (left out of the metric)"
                                                          f"{hint}.")
        if all(n >= runs.chains for n in runs.diverged):
            self.pause()

    def close(self) -> None:
        """End of session: stop the run and the build's clock; the runs' memory goes with them."""
        super().close()
        if self.runs is not None:
            self.runs.close()
        self.runs = None

    # -- exports -------------------------------------------------------------------------------------
    def export_data(self) -> dict:
        """What the downloads hold, copied out of the runs (on the loop: the workers append to them)."""
        runs = self.runs
        steps, values = runs.history()
        model = runs.model
        return dict(model=model.key, title=model.title, metric=model.metric_name,
                    lower_is_better=model.lower_is_better, settings=runs.config, step=runs.t,
                    updates_per_s=self.rate, diverged={s.label: n for s, n in zip(runs.sides, runs.diverged)},
                    runs=[dict(label=s.label, sampler=s.key, title=s.title, steps=steps, values=v)
                          for s, v in zip(runs.sides, values)])

    def file_name(self, ext: str) -> str:
        runs = self.runs
        return safe_file_name([runs.model.key] + [s.key for s in runs.sides] + [f"steps0-{runs.t}"], ext)


def write_json(data: dict) -> io.StringIO:
    """NaN (a run whose chains all diverged) as null: JSON has no NaN."""
    def clean(v):
        return None if isinstance(v, float) and not math.isfinite(v) else v
    data = dict(data, runs=[dict(r, values=[clean(v) for v in r["values"]]) for r in data["runs"]])
    return io.StringIO(json.dumps(data, indent=1))


def write_csv(data: dict) -> io.StringIO:
    """One row per scored step: step, then each sampler's metric (header: the metric and the sampler)."""
    out = io.StringIO()
    runs = data["runs"]
    out.write(",".join(["step"] + [f"{data['metric']} ({r['label']}: {r['sampler']})" for r in runs]) + "\n")
    if runs and runs[0]["steps"]:
        table = np.column_stack([runs[0]["steps"]] + [r["values"] for r in runs])
        np.savetxt(out, table, fmt=["%d"] + ["%.10g"] * len(runs), delimiter=",")
    out.seek(0)
    return out
