"""`Lab`: a configuration turned into one or two live runs, advanced frame by frame.

The lab says why it cannot run (`blocks`, one `Block` per source) and why it stopped (`notice`)
as structured values (see reasons.py). Every error a user can cause ends there, never in an
exception escaping to the server.

On a server the lab is one session among many on one event loop, so two things are bounded:
- building (sympy derivations, lambdify, a target's normalisation, a data posterior's residual)
  runs off the session's loop (runner.py), and a build from typed D, Q or U, or of a design (design.py), first
  runs in a sandbox with a time and memory limit (`trial_build`): sympy cannot be interrupted, a process can be
  killed;
- a frame costs at most FRAME_BUDGET_S of a core (`Budget`): the speed is lowered to what fits,
  and a run whose single step does not fit is refused.
"""
from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Callable
from functools import cached_property, partial

import numpy as np
import param

from samplers.cache import BoundedCache
from samplers.design import design_sampler
from samplers.engine.edit import edited_recipe, matrix_cells
from samplers.engine.stationarity import stationarity_residual
from samplers.engine.symbols import RecipeError
from samplers.registry import build_sampler
from samplers.sampler import SamplerError
from samplers.targets.potential import PotentialError

from . import autoeps
from .config import LabConfig
from .design import DESIGN, checked, current, key_of, uses_design
from .i18n import DEFAULT_LANG, tr, tr_message
from .live_run import _MASS_CACHE, LiveRun
from .presets import MAX_RECIPE_DIM, TYPED, load_potential
from .reasons import Block, BlockKind, Notice, NoticeKind, one_line
from .runner import LIMIT_S, POOLS, USER_ERRORS, Failure, Sandbox, memory_left
from .session import Session

MAX_STATE = 4_000_000          # chains x state size: beyond this one session would hog the server
FRAME_BUDGET_S = 0.020         # one session's frame: at most this much of a core (FRAME_MS is 40)
UNIT_S = 30e-9                 # a step costs about this per chain x state variable x inner step (docs/notes/serving.md)
BUILD_MEMORY = 1 << 30         # a build from typed input that needs more than this much more memory is refused
# A page's first build, for a configuration this process has built faster than INLINE_S before (a class
# opening one link): done in place, so that its figures come with the page instead of following it in a
# second round of models (a sixth of a page open's server CPU). Everything else builds on the worker.
INLINE_S = 0.05
_QUICK = BoundedCache(1024)     # configuration keys, each mapped to True
RESIDUAL_OK = 1e-4             # below this the (H, D, Q) counts as stationary (Residual.ok's default)
_RESIDUAL_CACHE = BoundedCache(512)


def droppable_term(recipe) -> str:
    """The term whose removal makes the naive variant: Γ where the recipe has one, else the friction."""
    if recipe.drop:
        return sorted(recipe.drop)[0]
    g = recipe.Gamma
    return "gamma" if (g.const is None or np.any(g.const)) else "friction"


def residual(recipe, pot, key) -> float | None:
    """Relative Fokker-Planck residual at exp(-H), cached per configuration (0.05-0.7 s each)."""
    if key in _RESIDUAL_CACHE:
        return _RESIDUAL_CACHE.get(key)
    try:
        # a numeric Q (QNHMC's L-BFGS operator) costs in proportion to the state's size at every point
        points = max(1000, 40000 // recipe.n) if recipe.numeric else 20000
        if pot.data is not None:     # every point sums over the whole data set
            points = 2000
        with np.errstate(all="ignore"):
            value = float(stationarity_residual(recipe, pot, n_random=points).relative)
        if not np.isfinite(value):
            value = None
    except Exception:   # a user's D may be singular somewhere on the grid: no badge then (and no ✓)
        value = None
    return _RESIDUAL_CACHE.put(key, value)


TERM_WORD = {"gamma": "Γ", "friction": "friction", "noise_correction": "noise correction"}


class Side:
    """What the views need to know about one of the (one or two) samplers."""

    auto = None      # an autoeps.AutoState where its eps is typed "auto"

    def __init__(self, label, sampler, base_recipe=None, recipe=None, residual=None, term=None, edited_cells=False,
                 key=None):
        self.label, self.sampler = label, sampler
        self.key = key                      # what the residual is cached under (None: no residual)
        self.base_recipe = base_recipe      # the registered recipe (None: not a recipe sampler or too big)
        self.recipe = recipe                # what actually runs (edited / naive switch applied)
        self.residual = residual
        self.term = term                    # what the naive switch drops
        self.edited_cells = edited_cells    # D or Q typed by the user

    @property
    def exact(self) -> bool:
        """Does the dynamics leave the target invariant? Measured by the Fokker–Planck residual where
        the sampler is a recipe, else as registered (naive or not)."""
        if self.residual is not None:
            return self.residual < RESIDUAL_OK
        if self.base_recipe is not None and self.recipe is not self.base_recipe:
            return False        # an edit whose residual could not be computed is not known to be exact
        return not self.sampler.spec.naive

    @property
    def title(self) -> str:
        """The sampler's title, saying what an edit changed and whether that left it naive."""
        return self.title_in(DEFAULT_LANG)

    def title_in(self, lang: str) -> str:
        """The title in the language (the sampler's name and the words of the edit through the catalogue)."""
        title = self.sampler.spec.title
        if self.recipe is None or self.base_recipe is None or self.recipe is self.base_recipe:
            return tr_message(title, lang)
        word = {t: tr(w, lang) for t, w in TERM_WORD.items()}
        changes = [tr("{term} restored", lang, term=word.get(t, t))
                   for t in sorted(self.base_recipe.drop - self.recipe.drop)]
        changes += [tr("without {term}", lang, term=word.get(t, t))
                    for t in sorted(self.recipe.drop - self.base_recipe.drop)]
        if self.edited_cells:
            changes.append(tr("D, Q edited", lang))
        stem = title[len("naive "):] if title.startswith("naive ") else title
        stem = tr_message(stem, lang)
        return tr("{name} ({changes})", lang, name=stem if self.exact else tr("naive {name}", lang, name=stem),
                  changes=tr(", ", lang).join(changes))


@dataclasses.dataclass
class Built:
    """What a build produced: new runs (runs not None), or the reason there are none (the old runs stay)."""
    block: Block | None = None         # the config's block: with runs, the edit that was set aside
    pot: object = None
    sides: list = dataclasses.field(default_factory=list)
    runs: list | None = None
    valid: dict = dataclasses.field(default_factory=dict)
    notice: Notice | None = None       # the build was refused for its cost: the old runs keep playing


def snapshot(config: LabConfig) -> LabConfig:
    """A copy of the configuration a worker can read while the user goes on editing the original."""
    return LabConfig(**{k: v for k, v in config.param.values().items() if k != "name"})


def config_key(cfg: LabConfig) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in cfg.param.values().items() if k not in ("name", "speed")))


def typed_input(cfg: LabConfig) -> bool:
    """Does the configuration hold text a user typed for sympy (D, Q cells, U, a design, or a parameter such as
    Santa's G1 = expr:...)? Only such builds can be arbitrarily slow: registered samplers on preset targets are
    bounded by the chains' limit."""
    typed_param = any(str(v).strip().startswith(TYPED) for params in (cfg.params, cfg.params_b or {})
                      for v in (params or {}).values())
    return (cfg.D is not None or cfg.Q is not None or cfg.potential.startswith(TYPED) or typed_param
            or (uses_design(cfg) and cfg.design is not None))


def _design_side(cfg, label, pot) -> Side:
    """The designed sampler: its parameters are the design's own (its `params`), the lab's noise and batch."""
    data = current(cfg.design, pot.dim)
    batch = cfg.batch if pot.data is not None else None
    s = design_sampler(checked(data), pot, None if batch else cfg.V, batch)
    recipe = s.recipe           # Γ derived and D, Q checked here: a DesignError names the cell
    key = (pot.name, DESIGN, key_of(data), tuple(sorted(s.params.items(), key=str)), str(s.oracle.describe()))
    return Side(label, s, recipe, recipe, key=key)


_RECIPES = BoundedCache(256)      # (target, sampler, parameters, gradients) -> the recipe, shared by the sessions


def _shared_recipe(s, key):
    """A registered sampler's recipe is sympy work (Γ, the compiled fields): done once per process for each
    target, sampler and parameters, not at every page open."""
    recipe = _RECIPES.get(key)
    if recipe is None:
        recipe = _RECIPES.put(key, s.recipe)
    else:
        s.use_recipe(recipe)
    return recipe


def _side(cfg, label, name, params, pot, editable) -> Side:
    params, auto = autoeps.resolve(cfg, label, name, params, editable)
    side = _built_side(cfg, label, name, params, pot, editable)
    if auto is not None:
        side.auto = autoeps.checked(auto, side.sampler, label)
    return side


def _built_side(cfg, label, name, params, pot, editable) -> Side:
    batch = cfg.batch if pot.data is not None else None
    s = build_sampler(name, pot, None if batch else cfg.V, batch, **params)
    if s.spec.recipe is None or pot.dim > MAX_RECIPE_DIM:
        return Side(label, s)
    key = (pot.name, name, tuple(sorted(s.params.items(), key=str)), str(s.oracle.describe()))
    base = _shared_recipe(s, key)
    if base.numeric:      # D and Q are functions, not cells: nothing to edit, still a residual
        return Side(label, s, None, base, key=key)
    term = droppable_term(base)
    recipe = base
    if editable:
        drop = base.drop if cfg.naive is None else (frozenset({term}) if cfg.naive else frozenset())
        if cfg.D is not None or cfg.Q is not None or drop != base.drop:
            D = cfg.D if cfg.D is not None else matrix_cells(base._raw[0])
            Q = cfg.Q if cfg.Q is not None else matrix_cells(base._raw[1])
            recipe = edited_recipe(base, D, Q, drop)
            s = s.with_recipe(recipe)
    edited = recipe is not base
    key = (pot.name, name, tuple(sorted(s.params.items(), key=str)), recipe.drop,
           str(cfg.D) if edited else "", str(cfg.Q) if edited else "", str(s.oracle.describe()))
    return Side(label, s, base, recipe, term=term, edited_cells=edited and (cfg.D is not None or cfg.Q is not None),
                key=key)


def _sides(cfg, pot, edits: bool) -> list[Side]:
    sides = [("A", cfg.sampler, cfg.params, edits)]
    if cfg.compare:
        sides.append(("B", cfg.sampler_b, cfg.params_b, False))
    built = []
    for label, name, params, editable in sides:
        try:
            built.append(_design_side(cfg, label, pot) if name == DESIGN else
                         _side(cfg, label, name, params, pot, editable))
        except RecipeError as err:
            err.design = name == DESIGN
            raise
        except USER_ERRORS as err:
            raise SamplerError(f"{name}: {err}") from err
    return built


def build(cfg: LabConfig, fallback: bool, have_runs: bool) -> Built:
    """New runs from the configuration, or why not. Pure: reads `cfg`, touches no Lab (a worker runs it).

    Invalid D/Q with nothing on screen yet (a link), or on `fallback` (Reset), run the registered
    recipe instead, still blocked: the plots show something true while the editor shows the fault."""
    try:
        pot = load_potential(cfg.potential, cfg.box)
    except USER_ERRORS as err:
        return Built(Block(BlockKind.POTENTIAL, f"potential: {err}"))
    recipe_block, edits = None, True
    try:
        built = _sides(cfg, pot, edits=True)
    except RecipeError as err:
        if getattr(err, "design", False):     # a design has no registered recipe to fall back to
            key = getattr(err, "key", ())
            return Built(Block(BlockKind.RECIPE, f"the design: {one_line(err, 400)} — the run does not start "
                                                 "until this is fixed", cells=err.cells or ((key,) if key else ())))
        recipe_block = Block(BlockKind.RECIPE, f"D and Q of {cfg.sampler}: {err} — the run does not start "
                                               "until this is fixed (or Revert D and Q)", cells=err.cells)
        if have_runs and not fallback:
            return Built(recipe_block)
        edits = False
        try:
            built = _sides(cfg, pot, edits=False)
        except USER_ERRORS as err2:
            return Built(Block(BlockKind.SAMPLER, str(err2)))
    except USER_ERRORS as err:
        return Built(Block(BlockKind.SAMPLER, str(err)))
    n = max(side.sampler.n for side in built)
    if cfg.chains * n > MAX_STATE:
        return Built(Block(BlockKind.SIZE, f"{cfg.chains} chains of a {n}-variable state are too many "
                                           f"for one session (at most {MAX_STATE // n})"))
    budget = Budget(built, cfg.chains)
    if budget.max_speed < 1:
        return Built(Block(BlockKind.SIZE, budget.refusal()))
    for side in built:         # after the budget: a data posterior's residual takes seconds
        if side.key is not None:
            side.residual = residual(side.recipe, pot, side.key)
    try:
        runs = [LiveRun(side.sampler, cfg.chains, cfg.seed, cfg.burn, label=side.label, start=cfg.start,
                        dtype=cfg.dtype)
                for side in built]
        if cfg.log_view:
            for run in runs:
                run.enable_log_marginal()
    except USER_ERRORS as err:
        return Built(Block(BlockKind.RUN, str(err)))
    valid = {k: v for k, v in cfg.param.values().items() if k != "name"}
    if not edits:
        valid.update(D=None, Q=None, naive=None)
    return Built(recipe_block, pot, built, runs, valid)


class Budget:
    """What one step of the runs costs, in units of UNIT_S: chains x state size x inner steps (HMC's
    leapfrog steps L) x examples per gradient (a minibatch's size), summed over the sides; and so how
    many steps fit in one frame of FRAME_BUDGET_S."""

    def __init__(self, sides, chains: int):
        self.chains = int(chains)
        self.per_chain = sum(self._per_chain(side.sampler) for side in sides)
        self.step_s = self.chains * self.per_chain * UNIT_S
        self.max_speed = int(FRAME_BUDGET_S // self.step_s) if self.step_s > 0 else 10**9

    @staticmethod
    def _per_chain(sampler) -> float:
        inner = float(sampler.params.get("L") or 1)
        batch = float(getattr(sampler.oracle, "batch", 1) or 1)
        return sampler.n * inner * batch

    def refusal(self) -> str:
        most = int(FRAME_BUDGET_S / (self.per_chain * UNIT_S))
        return (f"{self.chains} chains are too many for this sampler and target: one step would cost about "
                f"{1e3 * self.step_s:.0f} ms, over one session's budget of {1e3 * FRAME_BUDGET_S:.0f} ms of the "
                f"server per frame (at most {most} chains here)")


def refused_first_build(cfg: LabConfig, why: str) -> Built:
    """A link whose typed D and Q were refused for their cost opens, as one with invalid D and Q does, with
    the registered recipe's run, blocked until the cells change; a refused typed U or design has nothing to fall
    back to."""
    design = uses_design(cfg) and cfg.design is not None
    block_kind = BlockKind.RECIPE if cfg.D is not None or cfg.Q is not None or design else BlockKind.POTENTIAL
    block = Block(block_kind, f"{why} — the run does not start until this is changed")
    if block_kind is BlockKind.POTENTIAL or design:
        return Built(block)
    plain = snapshot(cfg)
    plain.param.update(D=None, Q=None)
    out = build(plain, False, False)
    if out.runs is not None:
        out.block = block
    return out


def _trial(send, cfg, fallback, have_runs):
    """In a sandbox: build once and say how it went (the objects themselves do not pickle)."""
    try:
        out = build(cfg, fallback, have_runs)
        for side in out.sides:          # what the recipe editor prints of it, on the session's thread
            if side.recipe is not None and not side.recipe.numeric:
                side.recipe.matrices_latex(), side.recipe.latex_sde(), side.recipe.latex_update()
        send(("ok", out.block))
    except RecursionError:
        send(("recursion", None))
    except Exception as err:
        # out of address space, C extensions fail in their own words (MemoryError, SystemError, ...)
        left = memory_left()
        short = isinstance(err, MemoryError) or (left is not None and left < BUILD_MEMORY // 4)
        send(("memory", None) if short else ("error", f"{type(err).__name__}: {err}"))


def typed_potential_reason(text: str) -> Block | None:
    """Why the typed U cannot be used (None when it can)."""
    if not text.strip():
        return Block(BlockKind.POTENTIAL, "the typed potential is empty", "type U in x (1-D) or x and y (2-D)")
    try:
        load_potential(TYPED + text)
    except PotentialError as err:
        return Block(BlockKind.POTENTIAL, f"the typed potential is invalid: {err}", str(err))
    except Exception as err:     # anything else the parser lets through: still only a message
        return Block(BlockKind.POTENTIAL, "the typed potential is invalid", f"cannot use this expression: {err}")
    return None


def _check_potential(send, text):
    try:
        send(("ok", typed_potential_reason(text)))
    except RecursionError:
        send(("recursion", None))


def sandboxed_potential_reason(text: str, limit_s: float | None = None) -> Block | None:
    """typed_potential_reason in a sandbox, killed past the typed-build limit (a worker runs this)."""
    limit_s = LIMIT_S["typed build"] if limit_s is None else limit_s
    kind, value = Sandbox(_check_potential, text, memory=BUILD_MEMORY).first(limit_s)
    if kind == "ok":
        return value
    why = {"time": f"it took longer than {limit_s:g} s to check", "recursion": "it is nested too deeply",
           }.get(kind, f"it needs more than {BUILD_MEMORY >> 20} MB")
    return Block(BlockKind.POTENTIAL, "the typed potential is too expensive", f"this potential is too expensive: {why}")


def trial_build(cfg: LabConfig, fallback: bool, have_runs: bool, limit_s: float | None = None) -> str | None:
    """None when building `cfg` finishes within the limits in a sandbox, else why not (a sentence)."""
    limit_s = LIMIT_S["typed build"] if limit_s is None else limit_s
    kind, value = Sandbox(_trial, cfg, fallback, have_runs, memory=BUILD_MEMORY).first(limit_s)
    what = ("this design" if uses_design(cfg) and cfg.design is not None else
            "this D and Q" if cfg.D is not None or cfg.Q is not None else
            "this potential" if cfg.potential.startswith(TYPED) else "this typed parameter")
    if kind == "ok":
        return None
    return {"time": f"{what} is too expensive to build: it took longer than {limit_s:g} s",
            "memory": f"{what} is too expensive to build: it needs more than {BUILD_MEMORY >> 20} MB",
            "died": f"{what} is too expensive to build: it needs more than {BUILD_MEMORY >> 20} MB",
            "recursion": f"{what} is nested too deeply to differentiate",
            }.get(kind, f"{what} cannot be built: {one_line(value)}")


_UNTRIED = object()


def build_off_loop(cfg: LabConfig, fallback: bool, have_runs: bool, why=_UNTRIED) -> Built:
    """A build on a worker: typed input is tried in a sandbox first (unless `why`, the trial's outcome, is given),
    and a configuration that builds quickly is remembered (a class opening one link then builds it in place, see
    INLINE_S)."""
    if why is _UNTRIED:
        why = trial_build(cfg, fallback, have_runs) if typed_input(cfg) else None
    if why is None:
        start = time.perf_counter()
        out = build(cfg, fallback, have_runs)
        if time.perf_counter() - start < INLINE_S and not typed_input(cfg):
            _QUICK.put(config_key(cfg), True)
        return out
    if have_runs:
        return Built(notice=Notice(NoticeKind.REFUSED, f"{why}; the run on screen is the previous one."))
    return refused_first_build(cfg, why)


def _cached_attributes(obj) -> dict:
    """The values of obj's cached properties computed so far."""
    names = {n for klass in type(obj).__mro__ for n, v in vars(klass).items() if isinstance(v, cached_property)}
    return {n: v for n, v in vars(obj).items() if n in names}


def warm_caches(cfg: LabConfig, fallback: bool, have_runs: bool) -> dict:
    """In a worker process: build once, and return the numbers the build computed that the session's process
    caches (a data posterior's normalisation on its grid, the exact bin masses, the residual: seconds of numpy),
    those that pickle. Installed there (`install_caches`), the build in the session's process finds them."""
    masses, residuals = dict(_MASS_CACHE._items), dict(_RESIDUAL_CACHE._items)
    build(cfg, fallback, have_runs)
    out = {"masses": {k: v for k, v in _MASS_CACHE._items.items() if k not in masses},
           "residuals": {k: v for k, v in _RESIDUAL_CACHE._items.items() if k not in residuals},
           "potential": {}}
    try:
        out["potential"] = _cached_attributes(load_potential(cfg.potential))
    except USER_ERRORS:
        pass
    for part in ("masses", "residuals", "potential"):
        for k, v in list(out[part].items()):
            try:
                pickle.dumps(v)
            except Exception:
                del out[part][k]
    return out


def needs_warming(cfg: LabConfig) -> bool:
    """A data posterior not yet normalised in this process: its build is seconds of numpy (a preset's, or one
    this process has built before, is quick: it waits for no worker)."""
    try:
        pot = load_potential(cfg.potential)
    except USER_ERRORS:
        return False
    return pot.data is not None and "_normalisation" not in vars(pot)


def install_caches(cfg: LabConfig, warm: dict) -> None:
    for k, v in warm.get("masses", {}).items():
        _MASS_CACHE.put(k, v)
    for k, v in warm.get("residuals", {}).items():
        _RESIDUAL_CACHE.put(k, v)
    try:
        pot = load_potential(cfg.potential)
    except USER_ERRORS:
        return
    for k, v in warm.get("potential", {}).items():
        pot.__dict__.setdefault(k, v)


class Lab(Session):
    """Runs the configured samplers and reports on them."""

    blocks = param.Dict(default={}, doc="source ('config', 'potential') -> the Block that keeps the run from starting")
    speed_limit = param.Integer(default=None, allow_None=True,
                                doc="steps per frame the session's budget allows, when below the speed")

    def __init__(self, config: LabConfig | None = None, schedule: Callable | None = None, **params):
        super().__init__(schedule, **params)
        self.config = config or LabConfig()
        self.potential = None
        self.runs: list[LiveRun] = []
        self.sides: list[Side] = []
        self._valid: dict = {}
        self._step_cost = float("inf")      # seconds a step of the runs took in the last frame (see frame)
        self.config.param.watch(self._config_changed, [p for p in self.config.param if p not in ("name", "speed")])
        self.config.param.watch(self._limit_speed, "speed")
        self.rebuild()

    # -- building --------------------------------------------------------------------
    def _config_changed(self, *events):
        self.rebuild()

    def block(self, source: str, reason: Block | None) -> None:
        """Keep the run from starting for `reason` (None lifts the block of that source)."""
        blocks = dict(self.blocks)
        if reason is not None:
            blocks[source] = reason
            self.playing = False
        else:
            blocks.pop(source, None)
        if blocks != self.blocks:
            self.blocks = blocks

    def check_typed_potential(self, text: str, done: Callable[[Block | None], None] | None = None) -> Block | None:
        """Block the run while the U being typed is not a valid potential (None when it is valid). With `done` and
        a session loop, the check runs in a sandbox off the loop, held to the typed-build limit (a valid nested U
        took 0.8-4.7 s to build, on the loop, at every keystroke; issue 28), and done(reason) hears of it on the
        loop; the latest text typed supersedes the others. Otherwise it runs here, and done hears at once."""
        if done is None or self.runner.inline or not text.strip():
            reason = typed_potential_reason(text)
            self._typed_checked(reason, done)
            return reason
        self.runner.run(partial(sandboxed_potential_reason, text), lambda out: self._typed_checked(out, done),
                        tag="typed U", pool="wait")
        return None

    def _typed_checked(self, reason, done) -> None:
        if isinstance(reason, Failure):
            reason = Block(BlockKind.POTENTIAL, "the typed potential could not be checked", reason.message)
        self.block("potential", reason)
        if done is not None:
            done(reason)

    @property
    def valid_config(self) -> dict:
        """The configuration the runs on screen were built from (the speed as it is now: it needs no rebuild)."""
        return self._valid | {"speed": self.config.speed} if self._valid else {}

    @property
    def can_run(self) -> bool:
        # a run whose chains have all diverged has nothing left to step (Reset starts it again)
        return (bool(self.runs) and not self.blocks and not any(r.error for r in self.runs)
                and not any(r.n_diverged >= r.chains for r in self.runs))

    def rebuild(self, fallback: bool = False) -> None:
        """New runs from the configuration; on bad input keep the old runs on screen, blocked.
        With a `schedule`, on a worker: the old runs keep playing until the new ones are ready."""
        self.notice = None
        super().rebuild(fallback=fallback)

    def build_job(self, fallback: bool = False) -> dict:
        have_runs = bool(self.runs)
        if self.runner.inline or (not have_runs and config_key(self.config) in _QUICK):
            return dict(work=partial(build, self.config, fallback, have_runs), here=True)
        # a copy: the worker reads it while the user goes on editing the original
        return dict(work=partial(self._build_pooled, snapshot(self.config), fallback, have_runs), pool="wait")

    def _build_pooled(self, cfg: LabConfig, fallback: bool, have_runs: bool) -> Built:
        """On a waiting thread: a build this process has not done quickly before runs first in a worker process
        of the compute pool, whose numbers (`warm_caches`) make the build here, on the build thread, quick."""
        if typed_input(cfg):
            # the trial (a sandbox, at most the typed-build limit) waits here, not on the build thread
            why = trial_build(cfg, fallback, have_runs)
        else:
            why = None
            if needs_warming(cfg):
                warm = self.runner.compute(partial(warm_caches, cfg, fallback, have_runs))
                if isinstance(warm, dict):
                    install_caches(cfg, warm)
        if self.runner.closed:      # the session ended meanwhile: nobody wants the build
            return Built()
        return POOLS["build"].submit(build_off_loop, cfg, fallback, have_runs, why).result()

    def offload(self, fn: Callable, done: Callable) -> None:
        """fn() in a worker process of the compute pool (its result must pickle), then done(its result, or the
        Failure it raised) on the session's loop; in place without a schedule. For the views' own slow work (the
        residual map)."""
        self.runner.run(fn, done, pool="compute")

    def install(self, out: Built | Failure) -> None:
        if isinstance(out, Failure):        # never lose a build silently: the session hears of it
            out = Built(Block(BlockKind.RUN, f"the run could not be built: {out.message}"))
        self._apply(out)

    def _apply(self, out: Built) -> None:
        if out.notice is not None:
            self.notice = out.notice
            return
        if out.runs is None:
            self.block("config", out.block)
            return
        self.potential, self.sides, self.runs = out.pot, out.sides, out.runs
        self._valid = out.valid
        self._step_cost = float("inf")      # not measured yet: the new runs' first frame measures a step
        self.block("config", out.block)
        self._limit_speed()
        self.version += 1

    def _limit_speed(self, *_):
        """The speed the budget allows (None: the configured one fits)."""
        limit = Budget(self.sides, self.runs[0].chains).max_speed if self.runs else None
        self.speed_limit = limit if limit is not None and limit < self.config.speed else None

    @property
    def steps_per_frame(self) -> int:
        return self.config.speed if self.speed_limit is None else max(1, self.speed_limit)

    # -- running ---------------------------------------------------------------------
    def play(self) -> None:
        if self.can_run:
            self.notice = None
            self.playing = True
        elif self.building and not self.blocks:
            self._play_after = True          # a link with play=1: play once the first runs are built
        elif self.runs and any(r.n_diverged >= r.chains for r in self.runs):
            self.notice = Notice(NoticeKind.DIVERGED, "every chain has diverged: Reset to start again, with a "
                                                      "smaller step size eps")

    def reset(self) -> None:
        super().reset(fallback=True)

    def step(self, steps: int = 1) -> bool:
        self.playing = False
        ok = self.frame(steps)
        self.param.trigger("stepped")
        return ok

    def frame(self, steps: int | None = None) -> bool:
        """Advance every run by `steps`, or by the speed within the session's frame budget: a frame of the
        frame loop stops early once it has used FRAME_BUDGET_S (the cost model is an estimate; a typed U
        or a large minibatch may cost more). False when nothing could run."""
        if not self.can_run:
            self.playing = False
            return False
        runs = self.runs
        before = [run.n_diverged for run in runs]
        timed = steps is None
        steps = self.steps_per_frame if timed else int(steps)
        start = time.perf_counter()
        # all the steps in one call per run when the last frame's cost per step says they fit half the budget (a
        # run's steps in one call share its per-call costs: the first step alone cost a second round of them); else,
        # as on a first frame, one step first to measure, then the rest in one call if they fit, else step by step
        done, chunk = 0, (steps if not timed or self._step_cost * steps <= FRAME_BUDGET_S / 2 else 1)
        while done < steps:
            n = min(chunk, steps - done)
            for run, side in zip(runs, self.sides):
                try:
                    run.advance(n)
                except USER_ERRORS as err:
                    run.error = str(err)
                    self.pause(Notice(NoticeKind.FAILED, f"{side.sampler.name} stopped at step {run.t}: {err}. "
                                     "Change the parameters (a smaller step size eps usually helps) or reset."))
                    return False
            done += n
            used = time.perf_counter() - start
            self._step_cost = used / done
            if timed and used > FRAME_BUDGET_S:
                break
            # the rest in one call per run when the first step says it fits the budget (the runs' random streams
            # are their own, so the order of A's and B's steps changes nothing); else step by step, checking it
            if not timed or used * steps <= FRAME_BUDGET_S * done / 2:
                chunk = steps
        for run, side, n0 in zip(runs, self.sides, before):
            if run.n_diverged > n0:
                eps = side.sampler.params.get("eps")
                hint = f" — try a smaller step size, e.g. eps = {eps / 4:.3g}" if eps else ""
                self.pause(Notice(NoticeKind.DIVERGED, f"{run.n_diverged} of {run.chains} chains of "
                                 f"{side.sampler.name} diverged by step {run.t} and were frozen (they are left out "
                                 f"of the histograms); the run is paused{hint}."))
        return True
