"""`LabConfig`: everything a shared link reproduces, the lab's single source of truth."""
from __future__ import annotations

import param

from .design import DESIGN
from .presets import samplers


class LabConfig(param.Parameterized):
    """What a shared link reproduces (potential, samplers and their parameters, the edited D and Q,
    gradient noise, chains, seed, speed, the designed sampler). Sampler parameters are kept as typed (strings), exactly
    as `registry.coerce_params` accepts them, so they round-trip through the URL."""

    potential = param.String(default="banana", doc="a preset name or 'expr:<U(x[, y])>'")
    sampler = param.Selector(default="sghmc", objects=[])
    params = param.Dict(default={}, doc="parameter overrides of sampler A")
    compare = param.Boolean(default=False)
    sampler_b = param.Selector(default="sghmc-naive", objects=[])
    params_b = param.Dict(default={})
    V = param.Number(default=1.0, bounds=(0, 1e6), doc="simulated gradient-noise variance")
    batch = param.Integer(default=None, allow_None=True, bounds=(1, 10**6),
                          doc="real minibatch size (data posteriors only); None: simulated noise V")
    chains = param.Integer(default=1000, bounds=(1, 100_000))
    seed = param.Integer(default=1, bounds=(0, 2**32 - 1))
    speed = param.Integer(default=5, bounds=(1, 1000), doc="steps per frame")
    burn = param.Integer(default=100, bounds=(0, 10**7), doc="steps before the histogram accumulates")
    start = param.Selector(default="near", objects=["near", "exact"],
                           doc="near: chains start about the target's start point; exact: at exact draws of the "
                               "target (where it has a sampler), so what a sampler does to the law shows at once")
    D = param.List(default=None, allow_None=True, doc="edited D cells of sampler A (None: its own)")
    Q = param.List(default=None, allow_None=True)
    naive = param.Boolean(default=None, allow_None=True,
                          doc="drop Γ (or the friction) from sampler A's recipe; None: as registered")
    log_view = param.Boolean(default=False, doc="log-scale marginals (sparse Dirichlet)")
    design = param.Dict(default=None, allow_None=True,
                        doc="the sampler designed in the lab (`DESIGN` as sampler A or B), as design-file data "
                            "(app/model/design.py); None: the empty design at the target's dimension")

    def __init__(self, **params):
        names = samplers() + [DESIGN]
        self.param.sampler.objects = names
        self.param.sampler_b.objects = names
        super().__init__(**params)
