"""A named sampler: its declaration (`SamplerSpec`), and the spec bound to a potential, a gradient oracle
and parameter values (`Sampler`).

A spec declares how to build the recipe (H, D, Q) for a potential and parameters, and a specialised
step that must equal the generic engine's step for step under the same random stream
(tests/test_fast_paths.py checks every one). A step returns the new state and a `StepInfo`.
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from samplers.engine.info import StepInfo
from samplers.engine.recipe import Recipe
from samplers.errors import InputError


@dataclass(frozen=True)
class StateLayout:
    """Which columns of z = (theta, aux) hold what: theta first, then named blocks (momentum,
    thermostat, curvature, ...) in column order."""
    dim: int
    blocks: tuple  # ((role, (name, ...)), ...)

    @classmethod
    def of(cls, dim: int, roles: dict) -> StateLayout:
        return cls(dim, tuple((role, tuple(names)) for role, names in roles.items() if names))

    @property
    def aux_names(self) -> list[str]:
        return [n for _, names in self.blocks for n in names]

    def has(self, role: str) -> bool:
        return any(r == role for r, _ in self.blocks)

    def columns(self, role: str) -> slice:
        start = self.dim
        for r, names in self.blocks:
            if r == role:
                return slice(start, start + len(names))
            start += len(names)
        raise KeyError(f"no {role} in this state (it holds {', '.join(r for r, _ in self.blocks) or 'theta only'})")


class SamplerError(InputError):
    pass


def scalar(x) -> bool:
    """np.ndim(x) == 0, without its dispatch for a Python number (a step asks a few times; at 10^3 chains a
    step is ~35 us)."""
    return isinstance(x, (float, int)) or np.ndim(x) == 0


TYPED = "expr:"   # the prefix of a typed expression, as for a typed potential (`--potential 'expr:...'`)


@dataclass(frozen=True)
class Param:
    """A sampler parameter, declared once. Checking a value (`coerce`), the lab's fields and links, `--set`'s
    help, `python -m samplers list --params` (docs/parameters.md) all read this declaration.

    A frozen dataclass rather than a param.Parameter: the library does not depend on param, a declaration is
    shared by several specs with another default (`at`), and it carries what param's bounds do not: the unit,
    what "auto" means, and the choices that may also be typed."""
    name: str
    default: object
    help: str                           # one line: what it is, in the sources' words
    type: type = float                  # float, int, or str (a choice)
    whole: bool = False                 # a float that must be a whole number (an int is one anyway)
    lo: float | None = None             # bounds, each included unless `above` / `below`
    hi: float | None = None
    above: bool = False                 # lo itself excluded: > lo
    below: bool = False                 # hi itself excluded: < hi
    unit: str = ""
    auto: str = ""                      # what "auto" (None) means; "" when a number must be given
    choices: tuple = ()
    # check(text) -> value, for a choice that may also be typed as an expression, "expr:<text>" (Santa's G1)
    typed: Callable | None = None

    def at(self, default, **changes) -> Param:
        """The same parameter with another default (and, say, another meaning of auto)."""
        return replace(self, default=default, **changes)

    @property
    def bounds(self) -> str:
        """The bounds in words, as messages, help and the docs quote them: 'between 0 and 1', '> 0 and <= 100'."""
        lo, hi = self.lo, self.hi
        if lo is not None and hi is not None and not self.above and not self.below:
            return f"between {lo:g} and {hi:g}"
        parts = [] if lo is None else [f"{'>' if self.above else '>='} {lo:g}"]
        parts += [] if hi is None else [f"{'<' if self.below else '<='} {hi:g}"]
        return " and ".join(parts)

    @property
    def allowed(self) -> str:
        """The values it takes, in words: its choices, or its bounds."""
        return (", ".join(self.choices) + (f", or {TYPED}…" if self.typed else "")) if self.choices else self.bounds

    def describe(self) -> str:
        """One line for a tooltip or --help: the help, the allowed values, the unit and what auto means."""
        unit = f", in {self.unit}" if self.unit else ""
        auto = f"; auto: {self.auto}" if self.auto else ""
        return f"{self.name}: {self.help} ({self.allowed}{unit}){auto}"

    def coerce(self, value):
        """The value as the sampler takes it, from a number or its text; SamplerError naming the parameter and
        quoting its bounds when it is not one."""
        if self.choices:
            if self.typed is not None and isinstance(value, str) and value.strip().startswith(TYPED):
                return self.typed(value)
            if value not in self.choices:
                also = f" or {TYPED}<a function of x, y>" if self.typed else ""
                raise SamplerError(f"{self.name} must be one of {', '.join(self.choices)}{also}, got '{_cut(value)}'")
            return value
        whole = self.whole or self.type is int
        kind = "a whole number" if whole else "a number"
        wanted = f"{kind} {self.bounds}".strip() + (" or auto" if self.auto else "")
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "auto", "")):
            if not self.auto:
                raise SamplerError(f"{self.name} must be {wanted}, got '{_cut(value)}'")
            return None
        try:
            num = float(value)
        except (TypeError, ValueError, OverflowError):
            raise SamplerError(f"{self.name} must be {wanted}, got '{_cut(value)}'") from None
        if not np.isfinite(num):
            raise SamplerError(f"{self.name} must be finite, got {_cut(value)}")
        if whole and num != int(num):
            raise SamplerError(f"{self.name} must be {wanted}, got {num:g}")
        lo, hi = self.lo, self.hi
        if (lo is not None and (num < lo or self.above and num == lo)) or \
                (hi is not None and (num > hi or self.below and num == hi)):
            raise SamplerError(f"{self.name} must be {self.bounds}" + (" or auto" if self.auto else "") +
                               f", got {num:g}")
        return int(num) if self.type is int else num


def _cut(value, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def choice(name: str, default: str, choices: tuple, help: str, **more) -> Param:
    return Param(name, default, help, type=str, choices=tuple(choices), **more)


# The parameters several families share, declared once; a family takes one at its own default (`EPS.at(0.05)`).
# The bounds are where a value stops meaning anything and starts costing: M = 1e300 makes the first momentum 1e150
# (every chain "diverged" at step 0), L = 1e7 leapfrog steps would hold a core for minutes.
EPS = Param("eps", 0.01, "the step size ε", lo=0, above=True, hi=100)
C = Param("C", 1.0, "the friction (diffusion of the momentum)", lo=0, above=True, hi=1e6)
A = Param("A", 1.0, "the thermostat's diffusion (its friction at equilibrium)", lo=0, above=True, hi=1e6)
M = Param("M", 1.0, "the mass: momentum r ~ N(0, M/β)", lo=1e-6, hi=1e6)
BHAT = Param("Bhat", 0.0, "B̂, the estimate of the gradient noise's covariance that Eq. (9) subtracts", lo=0,
             hi=1e8, auto="the gradient oracle's own estimate")
METRIC_D = Param("metric_D", 1.5, "the metric's scale: G(θ)⁻¹ = metric_D·sqrt|U + metric_C|", lo=1e-6, hi=1e6)
METRIC_C = Param("metric_C", None, "the metric's offset: G(θ)⁻¹ = metric_D·sqrt|U + metric_C|", lo=-1e6, hi=1e6,
                 auto="0.5 − min U, so U + metric_C ≥ 0.5 (errata E3)")
RESAMPLE = Param("resample_every", 0, "draw the momentum afresh every this many steps (0: never)", type=int, lo=0,
                 hi=10 ** 7, unit="steps")
INTEGRATOR = choice("integrator", "euler", ("euler", "splitting"), "the discretisation of the dynamics")

# every sampler takes the inverse temperature and the step-size schedule eps_t = eps (1 + t/eps_b)^-eps_c, constant
# with eps_c = 0 (docs/tempering.md)
COMMON = (Param("beta", 1.0, "the inverse temperature: θ is sampled from exp(−βU)", lo=1e-3, hi=1e3),
          Param("eps_b", 1000.0, "the step-size schedule's time scale, ε_t = ε(1 + t/eps_b)^−eps_c", lo=0,
                above=True, hi=1e12, unit="steps"),
          Param("eps_c", 0.0, "the step-size schedule's decay exponent (0: a constant step)", lo=0, hi=1))
STANDARD = {p.name: p for p in (EPS, C, A, M, BHAT, METRIC_D, METRIC_C, RESAMPLE, INTEGRATOR, *COMMON)}


@dataclass(frozen=True, kw_only=True)
class SamplerSpec:
    name: str
    title: str
    source: str                       # the equation it implements
    doc: str
    params: tuple                     # its Params, in the order they are listed; COMMON ones are added after
    layout: Callable[[int, dict], dict]  # (d, params) -> {role: aux names} in column order; checks params together
    recipe: Callable | None = None    # (sampler) -> Recipe
    fast: Callable | None = None      # (sampler, z, rng, t) -> (z, StepInfo), equal to the engine step
    # (sampler, dtype, eps) -> step(z, rng, t): the fast path of a run at the constant step eps with its constants
    # made once, in the state's dtype (None where it does not apply); `fast` steps through it
    prepare: Callable | None = None
    fast_only: dict = field(default_factory=dict)  # param values only the fast path implements
    init_aux: Callable | None = None  # (sampler, chains, rng) -> aux (chains, n_aux)
    corrected: str | None = None      # for a naive sampler: its corrected sibling
    family: str = "langevin"
    exact: bool = False               # exact-in-law samplers (HMC with Metropolis, SCIR): no recipe step
    temperable: bool | None = None    # whether beta != 1 has a meaning; None: every family but "simplex"
    # each chain's step reads only its own row and the generator, and the sampler keeps nothing between steps:
    # an ensemble may step it in blocks of chains on threads, each block with its own generator (samplers.run)
    blockwise: bool = False
    # derived from `params`: name -> Param, and name -> default
    declared: dict = field(init=False, repr=False, compare=False)
    defaults: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        own = {p.name: p for p in self.params}
        declared = own | {p.name: p for p in COMMON if p.name not in own}
        object.__setattr__(self, "declared", declared)
        object.__setattr__(self, "defaults", {name: p.default for name, p in declared.items()})
        if self.temperable is None:
            object.__setattr__(self, "temperable", self.family != "simplex")

    @property
    def naive(self) -> bool:
        return self.corrected is not None

    @property
    def step_param(self) -> str:
        """The parameter the schedule scales: eps, or h for samplers that step by a time h (SCIR)."""
        return "eps" if "eps" in self.defaults or "h" not in self.defaults else "h"


def coerce_params(spec: SamplerSpec, params: dict) -> dict:
    """Defaults overridden by params, each checked against its declaration; unknown names and bad values raise
    SamplerError."""
    out = dict(spec.defaults)
    for key, value in params.items():
        if key not in spec.declared:
            raise SamplerError(f"sampler '{spec.name}' has no parameter '{key}' "
                               f"(its parameters: {', '.join(spec.defaults) or 'none'})")
        out[key] = spec.declared[key].coerce(value)
    if out["beta"] != 1 and not spec.temperable:
        raise SamplerError(f"beta must be 1 for {spec.name}: its law is its own target's (a Gamma or Dirichlet), "
                           f"which it does not temper; got beta={out['beta']:g}")
    return out


class Sampler:
    """A named sampler bound to a potential, a gradient oracle and parameter values."""

    def __init__(self, spec: SamplerSpec, potential, oracle, **params):
        self.spec = spec
        self.name, self.potential, self.oracle = spec.name, potential, oracle
        self.title = spec.title     # a variant with an estimator of its own names itself (registry.VARIANTS)
        self.dim = potential.dim
        self.params = coerce_params(self.spec, params)
        self.layout = StateLayout.of(self.dim, self.spec.layout(self.dim, self.params))
        self.aux_names = self.layout.aux_names
        self.n = self.dim + len(self.aux_names)
        self._recipe = None
        self._edited = False   # True once the recipe was replaced: only the engine knows it then

    def __getitem__(self, key):
        return self.params[key]

    @property
    def beta(self) -> float:
        """The inverse temperature: the sampler leaves exp(-beta H) invariant, so theta ~ exp(-beta U)."""
        return float(self.params["beta"])

    @property
    def scheduled(self) -> bool:
        return self.params["eps_c"] != 0

    def step_size(self, t: int = 1) -> float:
        """The step of step t (counted from 1): eps (1 + t/eps_b)^-eps_c, eps itself when eps_c = 0."""
        eps = self.params[self.spec.step_param]
        if not self.scheduled:
            return eps
        return eps * (1.0 + t / self.params["eps_b"]) ** -self.params["eps_c"]

    @property
    def target(self):
        """The law theta is sampled from: the potential, tempered to exp(-beta U) when beta != 1."""
        if self.beta == 1:
            return self.potential
        if getattr(self, "_target", None) is None:
            self._target = self.potential.tempered(self.beta)
        return self._target

    # the metric constant of SGRLD/SGRHMC: by default U + C = 0.5 at the mode (docs/errata.md, E3)
    @property
    def metric_C(self) -> float:
        c = self.params.get("metric_C")
        if c is not None:
            return float(c)
        return 0.5 - float(self.potential.u_min or 0.0)

    @property
    def bhat(self):
        """The B-hat used in Eq. (9): the parameter if set, else the oracle's own estimate."""
        b = self.params.get("Bhat", 0.0)
        return b if b is not None else None

    def current_bhat(self, theta):
        """Call right after the oracle: a minibatch estimates B-hat from the batch it just drew."""
        b = self.bhat
        return self.oracle.bhat(theta) if b is None else b

    @property
    def recipe(self) -> Recipe | None:
        if self._recipe is None and self.spec.recipe is not None:
            self._recipe = self.spec.recipe(self)
        return self._recipe

    @property
    def has_momentum(self) -> bool:
        return self.layout.has("momentum")

    def init_state(self, chains: int, rng, theta0=None, spread: float = 0.5) -> np.ndarray:
        """theta around the potential's start (or theta0), auxiliary variables at their stationary law."""
        chains = int(chains)
        if chains < 1:
            raise SamplerError("need at least one chain")
        start = self.potential.start if theta0 is None else np.asarray(theta0, float)
        start = np.zeros(self.dim) if start is None else start
        theta = start + spread * rng.standard_normal((chains, self.dim))
        if self.spec.init_aux is None:
            return theta
        return np.concatenate([theta, self.spec.init_aux(self, chains, rng)], axis=1)

    def _resample(self, z, rng, t):
        k = int(self.params.get("resample_every") or 0)
        if k and t > 0 and t % k == 0 and self.has_momentum:
            z = z.copy(order="K")   # in the state's layout: a blockwise state stays column-major (samplers.run)
            scale = np.sqrt(self.params.get("M", 1.0) / self.beta)   # r ~ N(0, M / beta)
            z[:, self.layout.columns("momentum")] = scale * rng.standard_normal((z.shape[0], self.dim))
        return z

    def needs_fast_path(self) -> bool:
        return any(self.params.get(k) == v for k, v in self.spec.fast_only.items())

    def use_recipe(self, recipe: Recipe) -> None:
        """Take the recipe derived earlier for an equal sampler (same spec, target and parameters) instead of
        deriving it again: the app shares them between sessions (recipes are not changed once made)."""
        if recipe.n != self.n or recipe.name != self.name:
            raise SamplerError(f"a recipe for {recipe.name} with {recipe.n} state variables cannot stand in for "
                               f"{self.name}'s {self.n}")
        self._recipe = recipe

    def with_recipe(self, recipe: Recipe) -> Sampler:
        """The same sampler stepping an edited (H, D, Q) through the generic engine."""
        if recipe.n != self.n:
            raise SamplerError(f"the edited recipe has {recipe.n} state variables, the sampler {self.n}")
        if self.needs_fast_path():
            # the specialised scheme is written for the declared (H, D, Q): it would step past an edit unseen
            raise SamplerError(f"an edited (H, D, Q) is stepped by the generic engine, which implements the Euler "
                               f"scheme only: set {', '.join(f'{k} = euler' for k in self.spec.fast_only)} to edit "
                               f"{self.name}")
        other = copy.copy(self)
        other._recipe, other._edited = recipe, True
        return other

    @property
    def fast_ok(self) -> bool:
        """Fast paths take a scalar B-hat; a per-chain or matrix one goes through the engine."""
        if self.spec.fast is None or self._edited:
            return False
        b = self.bhat
        return scalar(b) if b is not None else self.oracle.scalar_bhat

    @property
    def blockwise(self) -> bool:
        """Whether chain blocks may step apart, on threads: the spec says so and the oracle keeps no state."""
        return self.spec.blockwise and getattr(self.oracle, "blockwise", False)

    def stepper_key(self) -> tuple:
        """What `stepper` and the specs' `prepare` read, as it is now: a stepper made when the key was equal steps
        the same. The spec, the oracle and its potential by identity (a prepared step holds the potential's `grad`
        and the oracle's noise scale and V, which are fixed once the oracle is made: the ladder makes another); the
        parameters by value, as they are edited in place (stepsize.fit_eps, refsample); `_edited` for `fast_ok`.
        `Ensemble` compares it before each `advance` to keep its stepper."""
        oracle = self.oracle
        return (self.spec, oracle, getattr(oracle, "potential", None), self._edited, tuple(self.params.items()))

    def stepper(self, dtype=np.float64) -> Callable:
        """`step` for a run of steps with these parameters on a state of `dtype`: the fast path itself where
        `step` would take it at every step (nothing resampled), without `step`'s checks each time, and prepared
        for the run where the step is constant (a small ensemble's step is mostly Python: docs/notes/throughput.md)."""
        if not (self.fast_ok or self.needs_fast_path()):
            return self.step
        prepared = None
        if self.spec.prepare is not None and not self.scheduled:
            prepared = self.spec.prepare(self, np.dtype(dtype), self.step_size())
        every = int(self.params.get("resample_every") or 0)
        if not every:
            return prepared or functools.partial(self.spec.fast, self)
        if prepared is None:
            return self.step
        resample = self._resample

        def resampling(z, rng, t):   # `step`: the momentum drawn afresh every `every` steps, then the fast path
            return prepared(resample(z, rng, t) if t % every == 0 else z, rng, t)
        return resampling

    def step(self, z, rng, t: int = 1) -> tuple[np.ndarray, StepInfo]:
        """One step (the fast path where there is one): the new state and what happened.
        t counts steps from 1, for momentum resampling and adaptation windows."""
        z = self._resample(z, rng, t)
        if self.fast_ok or self.needs_fast_path():
            return self.spec.fast(self, z, rng, t)
        return self.engine_step(z, rng, t, resample=False)

    def engine_step(self, z, rng, t: int = 1, resample: bool = True) -> tuple[np.ndarray, StepInfo]:
        """One step of the generic recipe engine."""
        if resample:
            z = self._resample(z, rng, t)
        if self.needs_fast_path():
            raise SamplerError(f"the generic engine implements the Euler scheme only; "
                               f"{', '.join(f'{k}={v}' for k, v in self.spec.fast_only.items())} "
                               f"needs the specialised path")
        if self.recipe is None:
            raise SamplerError(f"'{self.name}' is not a recipe sampler")
        return self.recipe.advance(z, rng, self.oracle, self.step_size(t), self.bhat, t, beta=self.beta)

    def describe(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}({ps})"
