"""A named sampler: its declaration (`SamplerSpec`), and the spec bound to a potential, a gradient oracle
and parameter values (`Sampler`).

A spec declares how to build the recipe (H, D, Q) for a potential and parameters, and a specialised
step that must equal the generic engine's step for step under the same random stream
(tests/test_fast_paths.py checks every one). A step returns the new state and a `StepInfo`.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass(frozen=True, kw_only=True)
class SamplerSpec:
    name: str
    title: str
    source: str                       # the equation it implements
    doc: str
    defaults: dict
    layout: Callable[[int, dict], dict]  # (d, params) -> {role: aux names} in column order; checks params
    recipe: Callable | None = None    # (sampler) -> Recipe
    fast: Callable | None = None      # (sampler, z, rng, t) -> (z, StepInfo), equal to the engine step
    fast_only: dict = field(default_factory=dict)  # param values only the fast path implements
    init_aux: Callable | None = None  # (sampler, chains, rng) -> aux (chains, n_aux)
    corrected: str | None = None      # for a naive sampler: its corrected sibling
    family: str = "langevin"
    choices: dict = field(default_factory=dict)  # param -> allowed values (for strings)
    # param -> check(text) -> value, for a choice that may also be typed as an expression, "expr:<text>"
    typed: dict = field(default_factory=dict)
    exact: bool = False               # exact-in-law samplers (HMC with Metropolis, SCIR): no recipe step
    temperable: bool | None = None    # whether beta != 1 has a meaning; None: every family but "simplex"
    # each chain's step reads only its own row and the generator, and the sampler keeps nothing between steps:
    # an ensemble may step it in blocks of chains on threads, each block with its own generator (samplers.run)
    blockwise: bool = False

    def __post_init__(self):
        # every sampler takes the inverse temperature and the step-size schedule (docs/tempering.md)
        object.__setattr__(self, "defaults", dict(self.defaults) | {k: v for k, v in COMMON_PARAMS.items()
                                                                    if k not in self.defaults})
        if self.temperable is None:
            object.__setattr__(self, "temperable", self.family != "simplex")

    @property
    def naive(self) -> bool:
        return self.corrected is not None

    @property
    def step_param(self) -> str:
        """The parameter the schedule scales: eps, or h for samplers that step by a time h (SCIR)."""
        return "eps" if "eps" in self.defaults or "h" not in self.defaults else "h"


TYPED = "expr:"   # the prefix of a typed expression, as for a typed potential (`--potential 'expr:...'`)

# beta: the inverse temperature, target exp(-beta H); eps_b, eps_c: the schedule eps_t = eps (1 + t/eps_b)^-eps_c,
# constant with eps_c = 0 (the default)
COMMON_PARAMS = dict(beta=1.0, eps_b=1000.0, eps_c=0.0)


# Sizes past which a parameter stops meaning anything and starts costing: M = 1e300 makes the first
# momentum 1e150 (every chain "diverged" at step 0), L = 1e7 leapfrog steps hold a core for minutes.
LIMITS = {"eps": (1e-12, 100.0), "h": (1e-12, 100.0), "C": (1e-12, 1e6), "A": (1e-12, 1e6), "M": (1e-6, 1e6),
          "metric_D": (1e-6, 1e6), "metric_C": (0.0, 1e6), "Bhat": (0.0, 1e8), "B0": (1e-6, 1e6),
          "L": (1, 1000), "memory": (0, 50), "adapt": (0, 10 ** 7), "resample_every": (0, 10 ** 7),
          "beta": (1e-3, 1e3), "eps_b": (1e-6, 1e12)}


def coerce_params(spec: SamplerSpec, params: dict) -> dict:
    """Defaults overridden by params; unknown names and bad values raise SamplerError."""
    out = dict(spec.defaults)
    for key, value in params.items():
        if key not in spec.defaults:
            raise SamplerError(f"sampler '{spec.name}' has no parameter '{key}' "
                               f"(its parameters: {', '.join(spec.defaults) or 'none'})")
        default = spec.defaults[key]
        if key in spec.choices:
            if key in spec.typed and isinstance(value, str) and value.strip().startswith(TYPED):
                out[key] = spec.typed[key](value)
                continue
            if value not in spec.choices[key]:
                also = f" or {TYPED}<a function of x, y>" if key in spec.typed else ""
                raise SamplerError(f"{key} must be one of {', '.join(spec.choices[key])}{also}, got '{value}'")
            out[key] = value
            continue
        if value is None or (isinstance(value, str) and value.lower() in ("none", "auto", "")):
            if key in COMMON_PARAMS:
                raise SamplerError(f"{key} must be a number ({SCHEDULE_HELP[key]}), got '{value}'")
            out[key] = None
            continue
        try:
            num = int(value) if isinstance(default, int) and not isinstance(default, bool) else float(value)
        except (TypeError, ValueError):
            raise SamplerError(f"{key} must be a number, got '{value}'") from None
        if not np.isfinite(num):
            raise SamplerError(f"{key} must be finite, got {value}")
        out[key] = num
    for key, (lo, hi) in LIMITS.items():
        v = out.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not lo <= abs(v) <= hi and v != 0:
            raise SamplerError(f"{key} must be at most {hi:g} in size, got {v:g}" if abs(v) > hi else
                               f"{key} must be at least {lo:g} in size, got {v:g}")
    for key in ("eps",):
        if key in out and not out[key] > 0:
            raise SamplerError(f"{key} must be > 0, got {out[key]}")
    for key in ("C", "A", "M", "metric_D"):
        if out.get(key) is not None and key in out and not out[key] > 0:
            raise SamplerError(f"{key} must be > 0, got {out[key]}")
    for key in ("Bhat",):
        if out.get(key) is not None and key in out and out[key] < 0:
            raise SamplerError(f"{key} must be >= 0, got {out[key]}")
    if out.get("resample_every") is not None and out.get("resample_every", 0) < 0:
        raise SamplerError("resample_every must be >= 0 (0: never)")
    check_common(spec, out)
    return out


SCHEDULE_HELP = {"beta": "the inverse temperature, 0.001 to 1000; 1 samples exp(-U)",
                 "eps_b": "the schedule's time scale in steps, > 0",
                 "eps_c": "the schedule's decay exponent, 0 to 1; 0: constant"}


def check_common(spec: SamplerSpec, out: dict) -> None:
    """beta > 0 (and 1 where it has no meaning), eps_b > 0, 0 <= eps_c <= 1."""
    beta, b, c = out["beta"], out["eps_b"], out["eps_c"]
    if not beta > 0:
        raise SamplerError(f"beta must be > 0 ({SCHEDULE_HELP['beta']}), got {beta:g}")
    if beta != 1 and not spec.temperable:
        raise SamplerError(f"beta must be 1 for {spec.name}: its law is its own target's (a Gamma or Dirichlet), "
                           f"which it does not temper; got beta={beta:g}")
    if not b > 0:
        raise SamplerError(f"eps_b must be > 0 ({SCHEDULE_HELP['eps_b']}), got {b:g}")
    if not 0 <= c <= 1:
        raise SamplerError(f"eps_c must be between 0 and 1 ({SCHEDULE_HELP['eps_c']}), got {c:g}")


class Sampler:
    """A named sampler bound to a potential, a gradient oracle and parameter values."""

    def __init__(self, spec: SamplerSpec, potential, oracle, **params):
        self.spec = spec
        self.name, self.potential, self.oracle = spec.name, potential, oracle
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
            z = z.copy()
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
