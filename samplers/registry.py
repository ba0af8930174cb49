"""Every named sampler, in one explicit table: adding a sampler is one family module plus one line here."""
from __future__ import annotations

from samplers.families import hmc, langevin, qnhmc, santa, sghmc, sgrhmc, simplex, thermostats
from samplers.gradients import make_oracle
from samplers.sampler import Sampler, SamplerError, SamplerSpec
from samplers.stepsize import fit_eps
from samplers.targets.presets import get_potential

SPECS: tuple[SamplerSpec, ...] = (
    langevin.SGLD,
    langevin.SGRLD,
    sghmc.SGHMC,
    sghmc.SGHMC_NAIVE,
    thermostats.SGNHT,
    thermostats.MSGNHT,
    santa.SANTA,
    santa.SANTA_NAIVE,
    sgrhmc.SGRHMC,
    sgrhmc.SGRHMC_NAIVE,
    hmc.HMC,
    qnhmc.QNHMC,
    qnhmc.QNHMC_NAIVE,
    simplex.SCIR,
    simplex.SGRLD_SIMPLEX,
    simplex.SGLD_SIMPLEX,
    simplex.SGHMC_SIMPLEX,
    simplex.SGRHMC_SIMPLEX,
    simplex.SGRHMC_SIMPLEX_NAIVE,
)
REGISTRY: dict[str, SamplerSpec] = {spec.name: spec for spec in SPECS}


def sampler_names() -> list[str]:
    return list(REGISTRY)


def get_spec(name: str) -> SamplerSpec:
    if name not in REGISTRY:
        raise SamplerError(f"unknown sampler '{name}' (choose from {', '.join(REGISTRY)})")
    return REGISTRY[name]


def make_sampler(name: str, potential, oracle, **params) -> Sampler:
    """The named sampler on a potential with a given gradient oracle."""
    return Sampler(get_spec(name), potential, oracle, **params)


def build_sampler(name: str, potential, V=None, batch=None, *, fit: bool = True, **params) -> Sampler:
    """A named sampler on a potential (a Potential or a preset/expr name) with exact gradients,
    simulated gradient noise of variance V, or minibatches of `batch` data points. Without an eps, its default
    is fitted to the target's scale (`samplers.stepsize.fitted_eps`; fit=False keeps the sampler's own)."""
    pot = get_potential(potential) if isinstance(potential, str) else potential
    s = make_sampler(name, pot, make_oracle(pot, V, batch), **params)
    if fit and s.spec.step_param not in params:
        fit_eps(s)
    return s
