"""eps = auto in the lab: the step-size ladder's largest ε whose bias is under its Monte Carlo noise
(`samplers.ladder.auto_eps`, as `--set eps=auto` in the CLI), for a side whose ε is typed "auto".

The configuration keeps "auto" (a link says a.eps=auto, not the number it led to: the number depends on the
target, the sampler and the noise, and is measured again wherever they change). A side at eps = auto is built at
its fitted default until the ladder has measured; the ladder runs off the event loop (ladder.py's AutoEpsJob:
a sandbox, held to its time limit), and its choice is kept here per configuration, so the rebuild that follows,
and any session of this process opening the same link, builds at the chosen ε without measuring again.
"""
from __future__ import annotations

from dataclasses import dataclass

from samplers.cache import BoundedCache
from samplers.ladder import AUTO_KL_FACTOR, AUTO_M2_SIGMAS, AUTO_RUNGS, JOINT, KL_SDS, AutoEps, LadderPoint
from samplers.sampler import SamplerError

from .i18n import DEFAULT_LANG, tr

AUTO = "auto"
_CHOSEN = BoundedCache(256)      # auto_key -> AutoEps


def wants_auto(params: dict) -> bool:
    """Is ε typed "auto" in these overrides?"""
    return str(params.get("eps", "")).strip().lower() == AUTO


def without_auto(params: dict) -> dict:
    """The overrides with an eps = auto left out (what the library's checks see: the rest is theirs to judge)."""
    return {k: v for k, v in params.items() if not (k == "eps" and wants_auto(params))}


def check_eps(spec, params: dict) -> None:
    """SamplerError where a typed eps is neither a step this sampler takes nor auto: the library's reason, and
    that auto is taken too (the library's own message does not know the lab's auto)."""
    if "eps" not in params or "eps" not in spec.declared or wants_auto(params):
        return
    try:
        spec.declared["eps"].coerce(params["eps"])
    except SamplerError as err:
        raise SamplerError(f"{err} (or auto: the step-size ladder picks it)") from None


@dataclass(frozen=True)
class AutoState:
    """A side at eps = auto: what its measurement is filed under, and the measurement (None: not made yet, the
    side runs at its fitted default `default_eps`)."""
    key: tuple
    found: AutoEps | None
    default_eps: float | None = None

    @property
    def eps(self) -> float | None:
        return None if self.found is None else self.found.eps


def auto_key(cfg, label: str, name: str, params: dict, editable: bool) -> tuple:
    """What the ladder's choice depends on: target and box, sampler and its other parameters, the gradient noise,
    sampler A's edits of D and Q, and the seed (the ladder's runs are seeded by it)."""
    edits = (str(cfg.D), str(cfg.Q), cfg.naive) if editable else ()
    return (cfg.potential, cfg.box, name, tuple(sorted((k, str(v)) for k, v in without_auto(params).items())),
            cfg.V, cfg.batch, edits, cfg.seed)


def resolve(cfg, label: str, name: str, params: dict, editable: bool) -> tuple[dict, AutoState | None]:
    """The overrides to build a side with, and its AutoState when ε is auto: ε left out (the fitted default) until
    the ladder has chosen, then the chosen ε."""
    if not wants_auto(params):
        return params, None
    key = auto_key(cfg, label, name, params, editable)
    found = _CHOSEN.get(key)
    rest = without_auto(params)
    if found is not None:
        rest["eps"] = found.eps
    return rest, AutoState(key, found)


def checked(state: AutoState, sampler, label: str) -> AutoState:
    """The state with the fitted default filled in; SamplerError naming the field where the ladder cannot run."""
    if sampler.spec.step_param != "eps":
        raise SamplerError(tr("eps = auto (sampler {label}): this sampler steps by h, not eps", label=label))
    pot = sampler.potential
    if pot.dim > 2 and not pot.known_marginals:
        raise SamplerError(tr("eps = auto (sampler {label}) runs the step-size ladder, which needs the exact law of "
                              "θ₁: a target of one or two dimensions, or a Gaussian; type a number for eps",
                              label=label))
    default = state.found.points[0].eps / AUTO_RUNGS[0] if state.found else float(sampler.params["eps"])
    return AutoState(state.key, state.found, default)


def remember(key: tuple, found: AutoEps) -> None:
    _CHOSEN.put(key, found)


def _g(x: float) -> str:
    return f"{x:.2g}"


def rung_words(p: LadderPoint, lang: str = DEFAULT_LANG) -> str:
    """Why a rung passed or failed, with its numbers: the three tests auto_eps applies (the KL's on the law the
    ladder scored: the joint one on a two-dimensional target, θ₁'s marginal elsewhere)."""
    if p.diverged:
        return tr("{n} chains diverged", lang, n=p.diverged)
    m2_ok = p.m2_error <= AUTO_M2_SIGMAS * p.m2_se
    if p.law == JOINT:
        kl = tr("KL of the joint law of (θ₁, θ₂) {kl} ≤ its noise floor {noise} + {k} sd ({tol})" if p.kl_ok else
                "KL of the joint law of (θ₁, θ₂) {kl} > its noise floor {noise} + {k} sd ({tol})", lang,
                kl=_g(p.kl), noise=_g(p.kl_noise), k=f"{KL_SDS:g}", tol=_g(p.kl_tol))
    else:
        kl = tr("KL {kl} ≤ {k} × its noise {noise}" if p.kl_ok else "KL {kl} > {k} × its noise {noise}", lang,
                kl=_g(p.kl), k=f"{AUTO_KL_FACTOR:g}", noise=_g(p.kl_noise))
    m2 = tr("|E θ₁² − exact| {m2} ≤ {k} se ({se})" if m2_ok else "|E θ₁² − exact| {m2} > {k} se ({se})", lang,
            m2=_g(p.m2_error), k=f"{AUTO_M2_SIGMAS:g}", se=_g(p.m2_se))
    return f"{kl}, {m2}"


def explain(state: AutoState, lang: str = DEFAULT_LANG) -> str:
    """Which ε the ladder picked and why, in one or two sentences with its numbers (plain text)."""
    found = state.found
    if found is None:
        return tr("auto ε: measuring on the step-size ladder; meanwhile the run uses the fitted default ε = {eps}",
                  lang, eps=f"{state.default_eps:.3g}")
    last = found.points[-1]
    span = tr("{top} down to {bottom}; the fitted default is {eps}", lang, top=f"{found.points[0].eps:.3g}",
              bottom=f"{state.default_eps * AUTO_RUNGS[-1]:.3g}", eps=f"{state.default_eps:.3g}")
    if found.passed:
        out = tr("auto ε = {eps}: the largest step of the ladder ({span}) whose bias is under its Monte Carlo "
                 "noise: {why}.", lang, eps=f"{found.eps:.3g}", span=span, why=rung_words(last, lang))
    else:
        out = tr("auto ε = {eps}, the smallest step tried: no rung of the ladder ({span}) had its bias under its "
                 "Monte Carlo noise (at {eps}: {why}); a smaller ε or a corrected sampler may be needed.", lang,
                 eps=f"{found.eps:.3g}", span=span, why=rung_words(last, lang))
    if found.passed and len(found.points) > 1:
        out += " " + tr("Larger steps failed: {rungs}.", lang, rungs="; ".join(
            f"ε = {p.eps:.3g}: {rung_words(p, lang)}" for p in found.points[:-1]))
    return out
