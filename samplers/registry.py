"""Every named sampler, in one explicit table: adding a sampler is one family module plus one line here."""
from __future__ import annotations

from samplers.families import hmc, langevin, qnhmc, santa, sghmc, sgrhmc, simplex, thermostats
from samplers.gradients import make_oracle
from samplers.sampler import Param, Sampler, SamplerError, SamplerSpec
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

# a named sampler with a gradient estimator of its own: name -> (registry key, estimator, title). They are the
# registered samplers' dynamics, so they are built by name (`build_sampler`) but not listed among the samplers.
VARIANTS: dict[str, tuple[str, str, str]] = {
    "sgld-cv": ("sgld", "cv", "SGLD-CV"),       # Baker, Fearnhead, Fox & Nemeth (2019), Algorithm 1
    "sghmc-cv": ("sghmc", "cv", "SGHMC-CV"),    # ibid., §3.3
}


def sampler_names() -> list[str]:
    return list(REGISTRY)


def get_spec(name: str) -> SamplerSpec:
    """The named sampler's declaration; a variant's is its registered sampler's (the same dynamics)."""
    name = VARIANTS[name][0] if name in VARIANTS else name
    if name not in REGISTRY:
        raise SamplerError(f"unknown sampler '{name}' (choose from {', '.join(REGISTRY)})")
    return REGISTRY[name]


def make_sampler(name: str, potential, oracle, **params) -> Sampler:
    """The named sampler on a potential with a given gradient oracle."""
    return Sampler(get_spec(name), potential, oracle, **params)


def build_sampler(name: str, potential, V=None, batch=None, *, fit: bool = True, estimator: str | None = None,
                  sampling: str = "replace", **params) -> Sampler:
    """A named sampler (or a `VARIANTS` name) on a potential (a Potential or a preset/expr name) with exact
    gradients, simulated gradient noise of variance V, or minibatches of `batch` data points, by the named
    estimator (samplers.gradients.ESTIMATORS) drawing with replacement or in epochs. Without an eps, its default
    is fitted to the target's scale (`samplers.stepsize.fitted_eps`; fit=False keeps the sampler's own)."""
    pot = get_potential(potential) if isinstance(potential, str) else potential
    title = None
    if name in VARIANTS:
        name, own, title = VARIANTS[name]
        if estimator not in (None, own):
            raise SamplerError(f"{title} uses the '{own}' estimator, not '{estimator}'")
        if batch is None:
            raise SamplerError(f"{title} draws minibatches of a data posterior: give a batch size")
        estimator = own
    s = make_sampler(name, pot, make_oracle(pot, V, batch, estimator, sampling), **params)
    if title is not None:
        s.title = title
    if fit and s.spec.step_param not in params:
        fit_eps(s)
    return s


def declarations() -> dict[Param, list[tuple[str, object]]]:
    """Every distinct parameter declaration (its default aside), with the samplers that take it and their defaults,
    in the registry's order: what `--set`'s help and docs/parameters.md list."""
    out: dict[Param, list] = {}
    for spec in SPECS:
        for p in spec.declared.values():
            out.setdefault(p.at(None), []).append((spec.name, p.default))
    return out


def parameters_markdown() -> str:
    """docs/parameters.md: one row per declaration (tests/test_docs.py checks the file against it)."""
    lines = ["# Sampler parameters", "",
             "Generated from the declarations in `samplers/families/*.py` and `samplers/sampler.py` by",
             "`python -m samplers list --params > docs/parameters.md` (`tests/test_docs.py` fails when it falls "
             "behind).", "Set one with `--set KEY=VALUE`, in a link as `a.KEY=VALUE` (sampler A) or `b.KEY=VALUE`, "
             "or in the lab's field of that name.", "",
             "| parameter | what it is | values | unit | auto | samplers (default) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for p, users in declarations().items():
        shown = [(name, "auto" if default is None else default) for name, default in users]
        taken = f"every sampler ({shown[0][1]})" if len(users) == len(SPECS) and len({d for _, d in shown}) == 1 \
            else ", ".join(f"{name} ({default})" for name, default in shown)
        cells = (f"`{p.name}`", p.help, p.allowed, p.unit, p.auto, taken)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
