"""The lab's state and logic, with no Panel in it: testable without a browser.

`LabConfig` is everything a link reproduces (potential, samplers and their parameters, the
edited D and Q, gradient noise, chains, seed, speed). `Lab` turns a configuration into one
or two `LiveRun`s, advances them frame by frame, and says why it cannot run (`blocks`) or
why it stopped (`message`). Every error a user can cause ends in a message, never in an
exception escaping to the server.
"""
from __future__ import annotations

import numpy as np
import param

from samplers.engine.edit import edited_recipe, matrix_cells
from samplers.gradients import GradientError, make_oracle
from samplers.targets.potential import PotentialError
from samplers.engine.recipe import RecipeError
from samplers.registry import REGISTRY, Sampler, SamplerError, coerce_params, get_spec
from samplers.engine.stationarity import stationarity_residual

from .choices import MAX_RECIPE_DIM, load_potential, potential_names, samplers
from .live_run import LiveRun

MAX_STATE = 4_000_000          # chains x state size: beyond this one session would hog the server
RESIDUAL_OK = 1e-4             # below this the (H, D, Q) counts as stationary (Residual.ok's default)
_RESIDUAL_CACHE: dict = {}
USER_ERRORS = (PotentialError, SamplerError, RecipeError, GradientError, ValueError, TypeError,
               ArithmeticError, np.linalg.LinAlgError)


class LabConfig(param.Parameterized):
    """What a shared link reproduces. Sampler parameters are kept as typed (strings), exactly
    as `registry.coerce_params` accepts them, so they round-trip through the URL."""

    potential = param.String(default="banana", doc="a preset name or 'expr:<U(x[, y])>'")
    sampler = param.Selector(default="sghmc", objects=[])
    params = param.Dict(default={}, doc="parameter overrides of sampler A")
    compare = param.Boolean(default=False)
    sampler_b = param.Selector(default="sghmc-naive", objects=[])
    params_b = param.Dict(default={})
    V = param.Number(default=1.0, bounds=(0, 1e6), doc="simulated gradient-noise variance")
    batch = param.Integer(default=None, allow_None=True, bounds=(1, None),
                          doc="real minibatch size (data posteriors only); None: simulated noise V")
    chains = param.Integer(default=1000, bounds=(1, 100_000))
    seed = param.Integer(default=1, bounds=(0, 2**32 - 1))
    speed = param.Integer(default=5, bounds=(1, 1000), doc="steps per frame")
    burn = param.Integer(default=100, bounds=(0, 10**7), doc="steps before the histogram accumulates")
    D = param.List(default=None, allow_None=True, doc="edited D cells of sampler A (None: its own)")
    Q = param.List(default=None, allow_None=True)
    naive = param.Boolean(default=None, allow_None=True,
                          doc="drop Γ (or the friction) from sampler A's recipe; None: as registered")
    log_view = param.Boolean(default=False, doc="log-scale marginals (sparse Dirichlet)")

    def __init__(self, **params):
        names = samplers()
        self.param.sampler.objects = names
        self.param.sampler_b.objects = names
        super().__init__(**params)


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
        with np.errstate(all="ignore"):
            value = float(stationarity_residual(recipe, pot).relative)
        if not np.isfinite(value):
            value = None
    except Exception:   # a user's D may be singular somewhere on the grid: no badge then
        value = None
    _RESIDUAL_CACHE[key] = value
    if len(_RESIDUAL_CACHE) > 512:
        _RESIDUAL_CACHE.pop(next(iter(_RESIDUAL_CACHE)))
    return value


class Side:
    """What the views need to know about one of the (one or two) samplers."""

    def __init__(self, label, sampler, base_recipe=None, recipe=None, residual=None, term=None):
        self.label, self.sampler = label, sampler
        self.base_recipe = base_recipe      # the registered recipe (None: not a recipe sampler or too big)
        self.recipe = recipe                # what actually runs (edited / naive switch applied)
        self.residual = residual
        self.term = term                    # what the naive switch drops


class Lab(param.Parameterized):
    """Runs the configured samplers and reports on them."""

    playing = param.Boolean(default=False)
    message = param.String(default="", doc="why the run stopped, or a warning")
    level = param.Selector(default="info", objects=["info", "warning", "danger", "success"])
    blocks = param.Dict(default={}, doc="source -> reason the run cannot start")
    version = param.Integer(default=0, doc="bumped whenever the runs are rebuilt")
    stepped = param.Event(doc="a single step was taken outside the frame loop")

    def __init__(self, config: LabConfig | None = None, **params):
        super().__init__(**params)
        self.config = config or LabConfig()
        self.potential = None
        self.runs: list[LiveRun] = []
        self.sides: list[Side] = []
        self.config.param.watch(self._config_changed, [p for p in self.config.param if p not in ("name", "speed")])
        self.rebuild()

    # -- building --------------------------------------------------------------------
    def _config_changed(self, *events):
        self.rebuild()

    def block(self, source: str, reason: str | None) -> None:
        blocks = dict(self.blocks)
        if reason:
            blocks[source] = reason
            self.playing = False
        else:
            blocks.pop(source, None)
        if blocks != self.blocks:
            self.blocks = blocks

    @property
    def can_run(self) -> bool:
        return bool(self.runs) and not self.blocks and not any(r.error for r in self.runs)

    def _make_sampler(self, name, params, pot):
        cfg = self.config
        batch = cfg.batch if pot.data is not None else None
        oracle = make_oracle(pot, None if batch else cfg.V, batch)
        return Sampler(name, pot, oracle, **params)

    def _side(self, label, name, params, pot, editable) -> Side:
        cfg = self.config
        s = self._make_sampler(name, params, pot)
        if s.spec.recipe is None or pot.dim > MAX_RECIPE_DIM:
            return Side(label, s)
        base = s.recipe
        term = droppable_term(base)
        recipe = base
        if editable:
            drop = base.drop if cfg.naive is None else (frozenset({term}) if cfg.naive else frozenset())
            if cfg.D is not None or cfg.Q is not None or drop != base.drop:
                D = cfg.D if cfg.D is not None else matrix_cells(base._raw[0])
                Q = cfg.Q if cfg.Q is not None else matrix_cells(base._raw[1])
                recipe = edited_recipe(base, D, Q, drop)
                s = s.with_recipe(recipe)
        key = (pot.name, name, tuple(sorted(s.params.items(), key=str)), recipe.drop,
               str(cfg.D) if recipe is not base else "", str(cfg.Q) if recipe is not base else "", str(s.oracle.describe()))
        return Side(label, s, base, recipe, residual(recipe, pot, key), term)

    def rebuild(self) -> None:
        """New runs from the configuration; on bad input keep the old runs on screen, blocked."""
        cfg = self.config
        self.message = ""
        try:
            pot = load_potential(cfg.potential)
        except USER_ERRORS as err:
            self.block("config", f"potential: {err}")
            return
        sides = [("A", cfg.sampler, cfg.params, True)]
        if cfg.compare:
            sides.append(("B", cfg.sampler_b, cfg.params_b, False))
        built = []
        for label, name, params, editable in sides:
            try:
                side = self._side(label, name, params, pot, editable)
            except RecipeError as err:
                self.block("config", f"D and Q of {name}: {err} — the run does not start until this is fixed")
                return
            except USER_ERRORS as err:
                self.block("config", f"{name}: {err}")
                return
            built.append(side)
        n = max(side.sampler.n for side in built)
        if cfg.chains * n > MAX_STATE:
            self.block("config", f"{cfg.chains} chains of a {n}-variable state are too many for one session "
                                 f"(at most {MAX_STATE // n})")
            return
        try:
            runs = [LiveRun(side.sampler, cfg.chains, cfg.seed, cfg.burn, label=side.label) for side in built]
            if cfg.log_view:
                for run in runs:
                    run.enable_log_marginal()
        except USER_ERRORS as err:
            self.block("config", str(err))
            return
        self.potential, self.sides, self.runs = pot, built, runs
        self.block("config", None)
        self.version += 1

    # -- running ---------------------------------------------------------------------
    def play(self) -> None:
        if self.can_run:
            self.message = ""
            self.playing = True

    def pause(self) -> None:
        self.playing = False

    def reset(self) -> None:
        playing = self.playing
        self.rebuild()
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
                self.playing = False
                self.level = "danger"
                self.message = (f"{side.sampler.name} stopped at step {run.t}: {err}. "
                                "Change the parameters (a smaller step size eps usually helps) or reset.")
                return False
            if run.n_diverged > before:
                self.playing = False
                self.level = "warning"
                eps = side.sampler.params.get("eps")
                hint = f" — try a smaller step size, e.g. eps = {eps / 4:.3g}" if eps else ""
                self.message = (f"{run.n_diverged} of {run.chains} chains of {side.sampler.name} diverged by "
                                f"step {run.t} and were frozen (they are left out of the histograms); "
                                f"the run is paused{hint}.")
        return True


def validate_params(sampler: str, params: dict) -> str | None:
    """None when `params` are acceptable overrides for `sampler`, else the library's one-line reason."""
    try:
        coerce_params(get_spec(sampler), params)
    except SamplerError as err:
        return str(err)
    return None


def default_params(sampler: str) -> dict:
    return dict(REGISTRY[sampler].defaults) if sampler in REGISTRY else {}


def known_potential(spec: str) -> bool:
    return spec.startswith("expr:") or spec in potential_names()
