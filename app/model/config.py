"""`LabConfig`: everything a shared link reproduces, the lab's single source of truth.

Each setting a link carries declares its URL key in its metadata (`url`, and `always` for those written even at
their default); its type and bounds are the parameter's own. app/model/urlstate.py reads and writes links from
these declarations alone, and the views refuse a typed value the way a link's is refused (`refusal`)."""
from __future__ import annotations

import param

from samplers.registry import REGISTRY
from samplers.targets.potential import PotentialError
from samplers.targets.presets import parse_box

from .design import DESIGN
from .presets import known_potential, samplers


def _potential(text: str) -> str:
    if not known_potential(text):
        raise ValueError("unknown potential")
    return text


def _box(text: str) -> str:
    try:
        parse_box(text)
    except PotentialError as err:
        raise ValueError(str(err)) from None
    return text


def _sampler(text: str) -> str:
    if text not in REGISTRY and text != DESIGN:
        raise ValueError("unknown sampler")
    return text


def url_meta(key: str, always: bool = False, parse=None) -> dict:
    """A setting's metadata: its URL key, whether a link always writes it, and a parser of a link's text for it in
    place of its type's (`parse(text)` raises ValueError with the reason; urlstate.parse_value calls it)."""
    return dict(url=key, always=always, parse=parse)


class LabConfig(param.Parameterized):
    """What a shared link reproduces (potential, samplers and their parameters, the edited D and Q,
    gradient noise, chains, seed, speed, the designed sampler). Sampler parameters are kept as typed (strings), exactly
    as `registry.coerce_params` accepts them, so they round-trip through the URL."""

    potential = param.String(default="banana", doc="a preset name or 'expr:<U(x[, y])>'",
                             metadata=url_meta("pot", always=True, parse=_potential))
    box = param.String(default=None, allow_None=True, label="Box",
                       doc="the box the target is drawn and scored on, lo,hi per coordinate (x then y), e.g. "
                           "-10,10,-8,8; None: fitted to where the mass is",
                       metadata=url_meta("box", parse=_box))
    sampler = param.Selector(default="sghmc", objects=[], metadata=url_meta("s", always=True, parse=_sampler))
    params = param.Dict(default={}, doc="parameter overrides of sampler A")
    compare = param.Boolean(default=False, metadata=url_meta("cmp"))
    sampler_b = param.Selector(default="sghmc-naive", objects=[], metadata=url_meta("sb", parse=_sampler))
    params_b = param.Dict(default={})
    V = param.Number(default=1.0, bounds=(0, 1e6), label="Gradient noise V", doc="simulated gradient-noise variance",
                     metadata=url_meta("V", always=True))
    batch = param.Integer(default=None, allow_None=True, bounds=(1, 10**6), label="Minibatch size",
                          doc="real minibatch size (data posteriors only); None: simulated noise V",
                          metadata=url_meta("batch"))
    chains = param.Integer(default=1000, bounds=(1, 100_000), label="Chains", metadata=url_meta("n", always=True))
    seed = param.Integer(default=1, bounds=(0, 2**32 - 1), label="Seed", metadata=url_meta("seed", always=True))
    dtype = param.Selector(default="float64", objects=["float64", "float32"], label="Precision",
                           doc="the chains' state and normals: float32 costs less per frame for large ensembles, "
                               "and the histograms, KL and TV are the same within their noise",
                           metadata=url_meta("dtype"))
    speed = param.Integer(default=5, bounds=(1, 1000), label="Speed (steps per frame)", doc="steps per frame",
                          metadata=url_meta("speed"))
    burn = param.Integer(default=100, bounds=(0, 10**7), label="Burn-in (steps)",
                         doc="steps before the histogram accumulates", metadata=url_meta("burn"))
    start = param.Selector(default="near", objects=["near", "exact"],
                           doc="near: chains start about the target's start point; exact: at exact draws of the "
                               "target (where it has a sampler), so what a sampler does to the law shows at once",
                           metadata=url_meta("start"))
    D = param.List(default=None, allow_None=True, doc="edited D cells of sampler A (None: its own)")
    Q = param.List(default=None, allow_None=True)
    naive = param.Boolean(default=None, allow_None=True,
                          doc="drop Γ (or the friction) from sampler A's recipe; None: as registered",
                          metadata=url_meta("naive"))
    log_view = param.Boolean(default=False, doc="log-scale marginals (sparse Dirichlet)", metadata=url_meta("log"))
    design = param.Dict(default=None, allow_None=True,
                        doc="the sampler designed in the lab (`DESIGN` as sampler A or B), as design-file data "
                            "(app/model/design.py); None: the empty design at the target's dimension")

    def __init__(self, **params):
        names = samplers() + [DESIGN]
        self.param.sampler.objects = names
        self.param.sampler_b.objects = names
        super().__init__(**params)


def url_keys(cls) -> dict[str, str]:
    """Parameter name -> URL key, for every parameter of a config class that declares one."""
    return {name: p.metadata["url"] for name, p in cls.param.objects().items() if p.metadata and "url" in p.metadata}


def _num(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def bounds_text(p: param.Parameter) -> str:
    """A numeric parameter's bounds in words: 'between 1 and 100000', 'greater than 0', 'at least 1'."""
    lo, hi = p.bounds or (None, None)
    lo_in, hi_in = getattr(p, "inclusive_bounds", (True, True))
    if lo is not None and hi is not None and lo_in and hi_in:
        return f"between {_num(lo)} and {_num(hi)}"
    parts = [] if lo is None else [f"{'at least' if lo_in else 'greater than'} {_num(lo)}"]
    parts += [] if hi is None else [f"{'at most' if hi_in else 'less than'} {_num(hi)}"]
    return " and ".join(parts)


def out_of_bounds(p: param.Parameter, value) -> str | None:
    """Why a number is outside a parameter's bounds ('must be between 1 and 100000'), or None."""
    if value is None or not getattr(p, "bounds", None):
        return None
    lo, hi = p.bounds
    lo_in, hi_in = p.inclusive_bounds
    if (lo is not None and (value < lo or not lo_in and value == lo)) or \
            (hi is not None and (value > hi or not hi_in and value == hi)):
        return f"must be {bounds_text(p)}"
    return None


def refusal(cfg: param.Parameterized, name: str, value) -> str | None:
    """Why a value typed into the field of setting `name` is refused (the field's label, the bound quoted), or
    None: what the views show beside the field, which goes back to the value in use."""
    p = cfg.param[name]
    if value is None and not p.allow_None:
        return f"{p.label} must be a number {bounds_text(p)} (not applied)"
    why = out_of_bounds(p, value)
    return f"{p.label} {why}, got {_num(value)} (not applied)" if why else None
