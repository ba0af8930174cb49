"""`Lab`: a configuration turned into one or two live runs, advanced frame by frame.

The lab says why it cannot run (`blocks`, one `Block` per source) and why it stopped (`notice`)
as structured values (see reasons.py). Every error a user can cause ends there, never in an
exception escaping to the server.
"""
from __future__ import annotations

import numpy as np
import param

from samplers.engine.edit import edited_recipe, matrix_cells
from samplers.engine.stationarity import stationarity_residual
from samplers.engine.symbols import RecipeError
from samplers.gradients import GradientError
from samplers.registry import build_sampler
from samplers.sampler import SamplerError
from samplers.targets.potential import PotentialError

from .config import LabConfig
from .live_run import LiveRun
from .presets import MAX_RECIPE_DIM, TYPED, load_potential
from .reasons import Block, BlockKind, Notice, NoticeKind

MAX_STATE = 4_000_000          # chains x state size: beyond this one session would hog the server
RESIDUAL_OK = 1e-4             # below this the (H, D, Q) counts as stationary (Residual.ok's default)
_RESIDUAL_CACHE: dict = {}
USER_ERRORS = (PotentialError, SamplerError, RecipeError, GradientError, ValueError, TypeError,
               ArithmeticError, np.linalg.LinAlgError)


def droppable_term(recipe) -> str:
    """The term whose removal makes the naive variant: Γ where the recipe has one, else the friction."""
    if recipe.drop:
        return sorted(recipe.drop)[0]
    g = recipe.Gamma
    return "gamma" if (g.const is None or np.any(g.const)) else "friction"


def residual(recipe, pot, key) -> float | None:
    """Relative Fokker-Planck residual at exp(-H), cached per configuration (0.05-0.7 s each)."""
    if key in _RESIDUAL_CACHE:
        return _RESIDUAL_CACHE[key]
    try:
        # a numeric Q (QNHMC's L-BFGS operator) costs in proportion to the state's size at every point
        points = max(1000, 40000 // recipe.n) if recipe.numeric else 20000
        with np.errstate(all="ignore"):
            value = float(stationarity_residual(recipe, pot, n_random=points).relative)
        if not np.isfinite(value):
            value = None
    except Exception:   # a user's D may be singular somewhere on the grid: no badge then
        value = None
    _RESIDUAL_CACHE[key] = value
    if len(_RESIDUAL_CACHE) > 512:
        _RESIDUAL_CACHE.pop(next(iter(_RESIDUAL_CACHE)))
    return value


TERM_WORD = {"gamma": "Γ", "friction": "friction", "noise_correction": "noise correction"}


class Side:
    """What the views need to know about one of the (one or two) samplers."""

    def __init__(self, label, sampler, base_recipe=None, recipe=None, residual=None, term=None, edited_cells=False):
        self.label, self.sampler = label, sampler
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
        return not self.sampler.spec.naive

    @property
    def title(self) -> str:
        """The sampler's title, saying what an edit changed and whether that left it naive."""
        title = self.sampler.spec.title
        if self.recipe is None or self.base_recipe is None or self.recipe is self.base_recipe:
            return title
        changes = [f"{TERM_WORD.get(t, t)} restored" for t in sorted(self.base_recipe.drop - self.recipe.drop)]
        changes += [f"without {TERM_WORD.get(t, t)}" for t in sorted(self.recipe.drop - self.base_recipe.drop)]
        if self.edited_cells:
            changes.append("D, Q edited")
        stem = title[len("naive "):] if title.startswith("naive ") else title
        return f"{'' if self.exact else 'naive '}{stem} ({', '.join(changes)})"


class Lab(param.Parameterized):
    """Runs the configured samplers and reports on them."""

    playing = param.Boolean(default=False)
    notice = param.ClassSelector(class_=Notice, default=None, allow_None=True,
                                 doc="why the run stopped, or what was ignored; None: nothing to say")
    blocks = param.Dict(default={}, doc="source ('config', 'potential') -> the Block that keeps the run from starting")
    version = param.Integer(default=0, doc="bumped whenever the runs are rebuilt")
    stepped = param.Event(doc="a single step was taken outside the frame loop")

    def __init__(self, config: LabConfig | None = None, **params):
        super().__init__(**params)
        self.config = config or LabConfig()
        self.potential = None
        self.runs: list[LiveRun] = []
        self.sides: list[Side] = []
        self._valid: dict = {}
        self.config.param.watch(self._config_changed, [p for p in self.config.param if p not in ("name", "speed")])
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

    def check_typed_potential(self, text: str) -> Block | None:
        """Block the run while the U being typed is not a valid potential (None when it is valid)."""
        reason = None
        if not text.strip():
            reason = Block(BlockKind.POTENTIAL, "the typed potential is empty",
                           "type U in x (1-D) or x and y (2-D)")
        else:
            try:
                load_potential(TYPED + text)
            except PotentialError as err:
                reason = Block(BlockKind.POTENTIAL, f"the typed potential is invalid: {err}", str(err))
            except Exception as err:     # anything else the parser lets through: still only a message
                reason = Block(BlockKind.POTENTIAL, "the typed potential is invalid",
                               f"cannot use this expression: {err}")
        self.block("potential", reason)
        return reason

    @property
    def valid_config(self) -> dict:
        """The configuration the runs on screen were built from (the speed as it is now: it needs no rebuild)."""
        return self._valid | {"speed": self.config.speed} if self._valid else {}

    @property
    def can_run(self) -> bool:
        # a run whose chains have all diverged has nothing left to step (Reset starts it again)
        return (bool(self.runs) and not self.blocks and not any(r.error for r in self.runs)
                and not any(r.n_diverged >= r.chains for r in self.runs))

    def _side(self, label, name, params, pot, editable) -> Side:
        cfg = self.config
        batch = cfg.batch if pot.data is not None else None
        s = build_sampler(name, pot, None if batch else cfg.V, batch, **params)
        if s.spec.recipe is None or pot.dim > MAX_RECIPE_DIM:
            return Side(label, s)
        base = s.recipe
        key = (pot.name, name, tuple(sorted(s.params.items(), key=str)), str(s.oracle.describe()))
        if base.numeric:      # D and Q are functions, not cells: nothing to edit, still a residual
            return Side(label, s, None, base, residual(base, pot, key))
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
        return Side(label, s, base, recipe, residual(recipe, pot, key), term,
                    edited_cells=edited and (cfg.D is not None or cfg.Q is not None))

    def _sides(self, pot, edits: bool) -> list[Side]:
        cfg = self.config
        sides = [("A", cfg.sampler, cfg.params, edits)]
        if cfg.compare:
            sides.append(("B", cfg.sampler_b, cfg.params_b, False))
        built = []
        for label, name, params, editable in sides:
            try:
                built.append(self._side(label, name, params, pot, editable))
            except RecipeError:
                raise
            except USER_ERRORS as err:
                raise SamplerError(f"{name}: {err}") from err
        return built

    def rebuild(self, fallback: bool = False) -> None:
        """New runs from the configuration; on bad input keep the old runs on screen, blocked.

        Invalid D/Q with nothing on screen yet (a link), or on `fallback` (Reset), run the registered
        recipe instead, still blocked: the plots show something true while the editor shows the fault."""
        cfg = self.config
        self.notice = None
        try:
            pot = load_potential(cfg.potential)
        except USER_ERRORS as err:
            self.block("config", Block(BlockKind.POTENTIAL, f"potential: {err}"))
            return
        recipe_block, edits = None, True
        try:
            built = self._sides(pot, edits=True)
        except RecipeError as err:
            recipe_block = Block(BlockKind.RECIPE, f"D and Q of {cfg.sampler}: {err} — the run does not start "
                                                   "until this is fixed (or Revert D and Q)", cells=err.cells)
            if self.runs and not fallback:
                self.block("config", recipe_block)
                return
            edits = False
            try:
                built = self._sides(pot, edits=False)
            except USER_ERRORS as err2:
                self.block("config", Block(BlockKind.SAMPLER, str(err2)))
                return
        except USER_ERRORS as err:
            self.block("config", Block(BlockKind.SAMPLER, str(err)))
            return
        n = max(side.sampler.n for side in built)
        if cfg.chains * n > MAX_STATE:
            self.block("config", Block(BlockKind.SIZE, f"{cfg.chains} chains of a {n}-variable state are too many "
                                                       f"for one session (at most {MAX_STATE // n})"))
            return
        try:
            runs = [LiveRun(side.sampler, cfg.chains, cfg.seed, cfg.burn, label=side.label) for side in built]
            if cfg.log_view:
                for run in runs:
                    run.enable_log_marginal()
        except USER_ERRORS as err:
            self.block("config", Block(BlockKind.RUN, str(err)))
            return
        self.potential, self.sides, self.runs = pot, built, runs
        valid = {k: v for k, v in cfg.param.values().items() if k != "name"}
        if not edits:
            valid.update(D=None, Q=None, naive=None)
        self._valid = valid
        self.block("config", recipe_block)
        self.version += 1

    # -- running ---------------------------------------------------------------------
    def play(self) -> None:
        if self.can_run:
            self.notice = None
            self.playing = True
        elif self.runs and any(r.n_diverged >= r.chains for r in self.runs):
            self.notice = Notice(NoticeKind.DIVERGED, "every chain has diverged: Reset to start again, with a "
                                                      "smaller step size eps")

    def pause(self, notice: Notice | None = None) -> None:
        """Pause, saying why when the lab itself stops the run."""
        self.playing = False
        if notice is not None:
            self.notice = notice

    def reset(self) -> None:
        playing = self.playing
        self.rebuild(fallback=True)
        self.playing = playing and self.can_run

    def step(self, steps: int = 1) -> bool:
        self.playing = False
        ok = self.frame(steps)
        self.param.trigger("stepped")
        return ok

    def frame(self, steps: int | None = None) -> bool:
        """Advance every run by `steps` (default: the speed). False when nothing could run."""
        if not self.can_run:
            self.playing = False
            return False
        steps = self.config.speed if steps is None else int(steps)
        for run, side in zip(self.runs, self.sides):
            before = run.n_diverged
            try:
                run.advance(steps)
            except USER_ERRORS as err:
                run.error = str(err)
                self.pause(Notice(NoticeKind.FAILED, f"{side.sampler.name} stopped at step {run.t}: {err}. "
                                 "Change the parameters (a smaller step size eps usually helps) or reset."))
                return False
            if run.n_diverged > before:
                eps = side.sampler.params.get("eps")
                hint = f" — try a smaller step size, e.g. eps = {eps / 4:.3g}" if eps else ""
                self.pause(Notice(NoticeKind.DIVERGED, f"{run.n_diverged} of {run.chains} chains of "
                                 f"{side.sampler.name} diverged by step {run.t} and were frozen (they are left out "
                                 f"of the histograms); the run is paused{hint}."))
        return True
