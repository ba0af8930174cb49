"""What the lab offers: potentials, samplers, comparison pairs and demo presets, read from the library.

Everything here is computed from the registry and the presets at call time, so samplers or
potentials added to `samplers/` appear in the lab without touching the app.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import urlencode

from samplers.registry import REGISTRY, get_spec, sampler_names
from samplers.sampler import SamplerError, coerce_params
from samplers.targets.potential import Potential, PotentialError
from samplers.targets.presets import get_potential, parse_box, preset_names

from .autoeps import check_eps, without_auto
from .modelupload import PREFIX as UPLOAD_PREFIX
from .modelupload import load_uploaded

TYPED = "expr:"          # prefix of a typed potential, as the library spells it
MAX_RECIPE_DIM = 2       # sympy recipes of 100-d targets take minutes to build: edit D/Q only up to here
_TYPED_CACHE: OrderedDict[str, Potential] = OrderedDict()
_TYPED_CACHE_SIZE = 64


# real-model posteriors (hundreds to thousands of variables, no exact density to draw): not the lab's
# targets; they run in `python -m samplers reproduce` (qnhmc-logistic, qnhmc-pmf)
MODEL_TARGETS = ("digits-logistic", "pmf")


def potential_names() -> list[str]:
    return [name for name in preset_names() if name not in MODEL_TARGETS]


def load_potential(spec: str, box: str | None = None) -> Potential:
    """A preset (cached by the library) or a typed `expr:` potential (cached here: building one
    normalises it on a grid, ~0.1 s, and the same text comes back as people type and undo), on `box`
    ('lo,hi[,lo,hi]', `parse_box`) or its own. Raises PotentialError."""
    spec = spec.strip()
    if spec.startswith(UPLOAD_PREFIX):
        pot = load_uploaded(spec)
        if pot is None:
            raise PotentialError(f"the uploaded model '{spec}' is not on this server any more: upload it again")
        return pot if box is None else pot.boxed(parse_box(box))
    bounds = None if box is None else parse_box(box)
    if not spec.startswith(TYPED):
        return get_potential(spec, box=bounds)
    key = (spec[len(TYPED):].strip(), bounds)
    if key in _TYPED_CACHE:
        _TYPED_CACHE.move_to_end(key)
        return _TYPED_CACHE[key]
    pot = get_potential(TYPED + key[0], box=bounds)
    _TYPED_CACHE[key] = pot
    while len(_TYPED_CACHE) > _TYPED_CACHE_SIZE:
        _TYPED_CACHE.popitem(last=False)
    return pot


def samplers() -> list[str]:
    return sampler_names()


def sampler_label(name: str) -> str:
    spec = REGISTRY[name]
    return f"{spec.title} ({name})"


def known_potential(spec: str) -> bool:
    return spec.startswith(TYPED) or spec in potential_names() or load_uploaded(spec) is not None


def default_params(sampler: str) -> dict:
    return dict(REGISTRY[sampler].defaults) if sampler in REGISTRY else {}


def param_help(key: str, spec) -> str | None:
    """A field's tooltip: the parameter's declaration (its help, bounds, unit and what auto means)."""
    return spec.declared[key].describe() if key in spec.declared else None


def validate_params(sampler: str, params: dict) -> str | None:
    """None when `params` are acceptable overrides for `sampler`, else the library's one-line reason. eps = auto
    is the lab's (autoeps.py): the library's checks see the rest."""
    try:
        spec = get_spec(sampler)
        check_eps(spec, params)
        coerce_params(spec, without_auto(params) if "eps" in spec.defaults else params)
    except SamplerError as err:
        return str(err)
    return None


@dataclass(frozen=True)
class Pair:
    """Two samplers to run side by side; `potential` None keeps the current one."""
    key: str
    label: str
    a: str
    b: str
    potential: str | None = None
    log_view: bool = False
    batch: int | None = None      # SGRLD and SCIR on the simplex take their noise from minibatches of the counts
    params: dict = field(default_factory=dict)      # overrides of a's parameters
    params_b: dict = field(default_factory=dict)
    start: str = "near"
    V: float | None = None        # the simulated gradient noise (None: keep the current one)

    def query(self) -> str:
        """The pair as a lab link."""
        q = {"cmp": 1, "s": self.a, "sb": self.b}
        q |= {"pot": self.potential} if self.potential else {}
        q |= {"V": f"{self.V:g}"} if self.V is not None else {}
        q |= {"batch": self.batch} if self.batch else {}
        q |= {"log": 1} if self.log_view else {}
        q |= {"start": self.start} if self.start != "near" else {}
        q |= {f"a.{k}": v for k, v in self.params.items()} | {f"b.{k}": v for k, v in self.params_b.items()}
        return urlencode({k: str(v) for k, v in q.items()})


# gSGRHMC on the simplex by its splitting step: the Euler step diverges on the sparse components (a < 1/2)
SIMPLEX_SPLITTING = {"integrator": "splitting", "eps": "0.1"}
# lesson 12's annealing: beta from 1 to 11 over 20 000 steps (tests/test_santa.py, docs/tempering.md)
ANNEALED_SANTA = {"eps": "0.05", "anneal_b": "2000", "anneal_c": "1"}
# Welling & Teh's mixture on minibatches of 10 of its 100 points: the batch's gradient noise (B-hat ~ 10^3 at the
# mode) heats naive SGHMC (TV 0.27 after 12 000 steps); SGHMC's friction C = 10 removes it (TV 0.067) at eps 0.01
WELLING_TEH_NAIVE = {"eps": "0.01"}
WELLING_TEH_SGHMC = {"eps": "0.01", "C": "10"}


def compare_pairs() -> list[Pair]:
    """Naive vs corrected for every naive sampler whose sibling is registered, SGRLD vs SCIR and naive vs
    corrected gSGRHMC on a sparse Dirichlet (log-scale view) once the samplers and such a potential exist, and
    annealed Santa vs SGHMC on the tilted double well."""
    names = samplers()
    pairs = [FIRST_PAIR] if {FIRST_PAIR.a, FIRST_PAIR.b} <= set(names) else []
    for name in names:
        spec = REGISTRY[name]
        # the simplex pairs need a target and minibatches: below
        if spec.naive and spec.corrected in names and spec.family != "simplex":
            # both at the naive sampler's step size: a ratio of two KLs at two step sizes would mix the step size
            # with the naivety (naive SGHMC's own default is twice SGHMC's; at SGHMC's 0.05 on the banana the two
            # are not told apart in a lesson's time, at 0.1 naive SGHMC's KL is ~17× SGHMC's)
            eps_a, eps_b = spec.defaults.get("eps"), REGISTRY[spec.corrected].defaults.get("eps")
            same = {"eps": str(eps_a)} if eps_a is not None and eps_b is not None and eps_a != eps_b else {}
            pairs.append(Pair(f"{name}:{spec.corrected}",
                              f"{spec.title} vs {REGISTRY[spec.corrected].title}", name, spec.corrected,
                              params_b=same))
    dirichlet = [p for p in potential_names() if "sparse-dirichlet" in p] or \
        [p for p in potential_names() if "dirichlet" in p]
    sgrld = "sgrld-simplex" if "sgrld-simplex" in names else "sgrld"   # the simplex version where it exists
    if sgrld in names and "scir" in names and dirichlet:
        pairs.append(Pair(f"{sgrld}:scir", f"SGRLD vs SCIR on {dirichlet[0]} (log scale)", sgrld, "scir",
                          potential=dirichlet[0], log_view=True, batch=10))
    if {"sgrhmc-simplex", "sgrhmc-simplex-naive"} <= set(names) and dirichlet:
        pairs.append(Pair("sgrhmc-simplex-naive:sgrhmc-simplex",
                          f"naive gSGRHMC vs gSGRHMC on {dirichlet[0]} (splitting, log scale)",
                          "sgrhmc-simplex-naive", "sgrhmc-simplex", potential=dirichlet[0], log_view=True, batch=10,
                          params=SIMPLEX_SPLITTING, params_b=SIMPLEX_SPLITTING, start="exact"))
    if {"santa", "sghmc"} <= set(names) and "tilted-double-well" in potential_names():
        pairs.append(Pair("santa-annealed:sghmc", "annealed Santa vs SGHMC on tilted-double-well", "santa", "sghmc",
                          potential="tilted-double-well", params=ANNEALED_SANTA))
    if {"sghmc-naive", "sghmc"} <= set(names) and "welling-teh" in potential_names():
        pairs.append(Pair("welling-teh:sghmc-naive:sghmc", "naive SGHMC vs SGHMC on Welling & Teh's mixture "
                          "(minibatches of 10)", "sghmc-naive", "sghmc", potential="welling-teh", batch=10,
                          params=WELLING_TEH_NAIVE, params_b=WELLING_TEH_SGHMC))
    return pairs


# The pair a link without a configuration opens on: naive SGHMC against SGHMC at one step size on Chen, Fox &
# Guestrin's double well (their Fig. 1; lesson 5's demo), where the naive sampler's bias shows within seconds
# (KL ~0.09, against SGHMC's ~0.001, by step 600 with 1000 chains). B's friction C = 3 is the one other difference,
# and the page says so (differences).
FIRST_PAIR = Pair("sghmc-naive:sghmc@double-well", "naive SGHMC vs SGHMC on double-well (Chen et al. Fig. 1)",
                  "sghmc-naive", "sghmc", potential="double-well", V=4.0, params={"eps": "0.1"},
                  params_b={"eps": "0.1", "C": "3"})


# Demo presets a lesson can name in its front matter (`demo: <name>`): a lab configuration as a
# URL query. A lesson may also give a query directly (`demo: pot=gaussian&s=sgld`).
DEMOS = {
    "default": "pot=banana&s=sghmc",
    "sgld-gaussian": "pot=gaussian&s=sgld&V=1",
    "naive-sghmc-double-well": "pot=double-well&cmp=1&s=sghmc-naive&sb=sghmc&V=4&a.eps=0.1&b.eps=0.1&b.C=3",
    "naive-sgrhmc-gaussian": "pot=gaussian&cmp=1&s=sgrhmc-naive&sb=sgrhmc&V=1",
    "naive-sghmc-banana": "pot=banana&cmp=1&s=sghmc-naive&sb=sghmc&V=1",
    "thermostat": "pot=banana&s=sgnht&V=4",
    "riemannian": "pot=double-well&s=sgrld&V=1",
    "minibatch": "pot=logistic&s=sgld&batch=10&a.eps=0.001",
}


FIRST_SCREEN = FIRST_PAIR.query()


# a lesson's `demo:` mapping, key by key, as URL keys (see urlstate.py)
DEMO_KEYS = {"potential": "pot", "sampler": "s", "V": "V", "batch": "batch", "chains": "n", "seed": "seed",
             "steps_per_frame": "speed", "speed": "speed", "burn": "burn", "log": "log"}


STEP_NAMES = {"eps": "ε", "h": "h"}     # a sampler's step size, by the name it declares


def differences(sides) -> tuple[dict, dict]:
    """(what two sides share, what differs) among the parameters both samplers declare, as {name: text} and
    {name: (A's text, B's text)}: a comparison says on screen what else than the recipe sets them apart."""
    if len(sides) != 2:
        return {}, {}
    a, b = (side.sampler.params for side in sides)
    text = lambda v: "auto" if v is None else f"{v:g}" if isinstance(v, float) else str(v)   # noqa: E731
    shared = {k: text(a[k]) for k in a if k in b and a[k] == b[k]}
    differ = {k: (text(a[k]), text(b[k])) for k in a if k in b and a[k] != b[k]}
    steps = [next((f"{STEP_NAMES[k]} {text(p[k])}" for k in STEP_NAMES if k in p), None) for p in (a, b)]
    if None not in steps and not any(k in a and k in b for k in STEP_NAMES):   # two samplers' own step sizes
        differ = {"step size": tuple(steps)} | differ
    return shared, differ


def demo_query(demo) -> str:
    """A lab query for a lesson's demo: a preset name, a query string, or a mapping like
    {potential, sampler, params, V, batch, chains, seed, steps_per_frame, compare, compare_params, drop}."""
    if isinstance(demo, dict):
        q = {}
        for key, url_key in DEMO_KEYS.items():
            if demo.get(key) is not None:
                q[url_key] = demo[key]
        for k, v in (demo.get("params") or {}).items():
            q[f"a.{k}"] = v
        if demo.get("compare"):
            q["cmp"], q["sb"] = 1, demo["compare"]
            for k, v in (demo.get("compare_params") or {}).items():
                q[f"b.{k}"] = v
        if demo.get("drop"):
            q["naive"] = 1
        return urlencode({k: str(v) for k, v in q.items()})
    demo = str(demo or "").strip()
    if "=" in demo:
        return demo
    return DEMOS.get(demo, "")
