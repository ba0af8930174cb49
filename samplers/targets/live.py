"""The data models the lab's Models page runs live: each one's target, its own score, and the samplers it compares.

A model is declared by a builder in `LIVE_MODELS` (key -> builder(seed, size) -> LiveModel), so building one
(loading or generating its data) happens only when it is asked for. Sampler names are registry keys, kept as
strings here: targets sit below the families and the registry.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from samplers.targets import data, dpmixture
from samplers.targets.potential import Potential


@dataclass(frozen=True)
class LiveModel:
    key: str
    title: str
    potential: Potential
    # the model's own score of the chains' current states (chains, potential.dim): one number for the ensemble,
    # e.g. held-out perplexity of the chains' averaged predictive; cheap enough to call a few times a second
    metric: Callable[[np.ndarray], float]
    metric_name: str                      # "held-out perplexity", "test error", "test RMSE", ...
    lower_is_better: bool
    pair: tuple[str, str]                 # (naive or comparator, corrected): registry keys
    params: dict = field(default_factory=dict)   # registry key -> its parameters on this model (eps, ...)
    batch: int | None = None              # minibatch size (None: full data)
    chains: int = 1
    init: Callable | None = None          # (chains, rng) -> starting states; None: the sampler's own start
    description: str = ""


# key -> (title, builder); filled by the model modules' entries, in the order the page lists them
LIVE_MODELS: dict[str, tuple[str, Callable[..., LiveModel]]] = {
    "dp-mixture": ("DP mixture (SCIR §4.2)", lambda **kw: LiveModel(**dpmixture.live_fields(**kw))),
    "logistic-cv": ("Logistic regression: SGLD vs SGLD-CV", lambda **kw: LiveModel(**data.live_fields(**kw))),
}


def live_model(key: str, seed: int = 0, size: str = "default") -> LiveModel:
    if key not in LIVE_MODELS:
        raise KeyError(f"unknown model '{key}' (choose from {', '.join(LIVE_MODELS)})")
    return LIVE_MODELS[key][1](seed=seed, size=size)
