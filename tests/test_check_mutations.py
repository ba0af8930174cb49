"""Every lesson check can fail: for each lesson, its checks and one mutation per check (a broken sampler, or a
broken claim), and the check must fail under the mutation and pass without it.

A mutation is a function of pytest's monkeypatch that returns the keyword arguments to call the check with
(most return none: they break the library or the check's setup in place). The table is complete: a check
added to a page without a mutation here fails `test_every_check_of_every_lesson_has_a_mutation`.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from pathlib import Path

import numpy as np
import pytest
import yaml

import samplers.families
from lessons import checks
from lessons.checks import completeness, qnhmc, recipe, santa, scir
from samplers.families import curvature
from samplers.families import sghmc as sghmc_family
from samplers.families import simplex as simplex_family
from samplers.families import thermostats as thermostat_family
from samplers.gradients import Minibatch, SimulatedNoise
from samplers.sampler import Sampler

LESSONS = Path(__file__).resolve().parents[1] / "lessons"


def _hot_noise(mp):
    """Every fast path's injected noise 1.5 times too large in variance (the chains run at temperature 1.5)."""
    from samplers.families.common import kick, kicker
    for info in pkgutil.iter_modules(samplers.families.__path__):
        module = importlib.import_module(f"samplers.families.{info.name}")
        if getattr(module, "kick", None) is kick:
            mp.setattr(module, "kick", lambda var, shape, rng: kick(1.5 * np.asarray(var), shape, rng))
        if getattr(module, "kicker", None) is kicker:   # a prepared step's noise (a run at a constant step)
            mp.setattr(module, "kicker", lambda s, dtype, var_of: kicker(s, dtype, lambda b: 1.5 * var_of(b)))
    return {}


def _no_bhat(mp):
    """The B^ correction ignored: every sampler subtracts nothing from its injected noise."""
    mp.setattr(Sampler, "current_bhat", lambda self, theta: 0.0)
    return {}


def _one_fixed_batch(mp):
    """Minibatches that are never redrawn: every gradient is the same n examples' (a wrong posterior)."""
    call = Minibatch.__call__

    def fixed(self, theta, rng, value=False):
        self._fixed = np.tile(np.arange(self.batch), (theta.shape[0], 1))
        return call(self, theta, rng, value)
    mp.setattr(Minibatch, "__call__", fixed)
    return {}


def _double_gradient_noise(mp):
    """Simulated gradient noise with twice the variance it claims."""
    call, lean = SimulatedNoise.__call__, SimulatedNoise.gradient

    def noisier(self, theta, rng, value=False):
        u, g = call(self, theta, rng, value)
        return u, g + rng.standard_normal(g.shape) * np.sqrt(float(np.mean(self.V)))

    def lean_noisier(self):   # a prepared step's call (samplers.families.common.gradient_of)
        once, sd = lean(self), np.sqrt(float(np.mean(self.V)))
        return lambda theta, rng: (g := once(theta, rng)) + rng.standard_normal(g.shape) * sd
    mp.setattr(SimulatedNoise, "__call__", noisier)
    mp.setattr(SimulatedNoise, "gradient", lean_noisier)
    return {}


def _gamma_forgotten_in_the_edited_recipe(mp):
    edited = recipe.edited_recipe
    mp.setattr(recipe, "edited_recipe", lambda *a, **k: edited(*a, **k).with_drop({"gamma"}))
    return {}


def _printed_sign_of_the_current_integral(mp):
    """Q rebuilt with the overall sign of the printed S.11 (errata E9)."""
    integrate = completeness._cumulative_trapezoid
    mp.setattr(completeness, "_cumulative_trapezoid", lambda y, x, axis: -integrate(y, x, axis))
    return {}


def _friction_doubled(mp):
    """SGHMC runs at twice the friction it was given (a valid sampler, at the wrong C)."""
    friction = sghmc_family._sghmc_C
    mp.setattr(sghmc_family, "_sghmc_C", lambda s: 2 * friction(s))
    return {}


def _no_friction(mp):
    """SGHMC without friction and so without noise: a pure Hamiltonian flow."""
    mp.setattr(sghmc_family, "_sghmc_C", lambda s: 0.0)
    return {}


def _printed_thermostat_energy(mp):
    """SGNHT's recipe built with the printed thermostat energy (xi - A)^2 / (2d) (errata E2)."""
    import sympy
    mp.setattr(thermostat_family, "Rational", lambda d, two: sympy.Rational(1, 2 * d))
    return {}


def _lie_splitting(mp):
    """The splitting integrator made one-sided: A(h) R(h) K(h), no palindrome."""
    def lie(s, theta, r, rng, eps, C, friction, M, beta):
        theta = theta + eps * r / M
        r = r * math.exp(-friction * eps / M)
        _, g, b = sghmc_family.gradient(s, theta, rng)
        r = r - eps * g + (sghmc_family.kick(eps * (2 * C / beta - eps * b), r.shape, rng) if C else 0.0)
        return np.concatenate([theta, r], axis=1), sghmc_family.ONE_GRADIENT
    mp.setattr(sghmc_family, "_sghmc_splitting", lie)
    return {}


def _msgnht_thermostat_reset(mp):
    """mSGNHT's splitting with the printed thermostat half-step: xi reset to (p^2 - 1) h/2 (errata E5)."""
    def printed(s, theta, r, xi, rng, eps, A, beta):
        theta = theta + 0.5 * eps * r
        xi = 0.5 * eps * (r ** 2 - 1.0 / beta)
        r = r * np.exp(-0.5 * eps * xi)
        _, g, b = thermostat_family.gradient(s, theta, rng)
        r = r - eps * g + thermostat_family.kick(eps * (2 * A / beta - eps * b), r.shape, rng)
        r = r * np.exp(-0.5 * eps * xi)
        theta = theta + 0.5 * eps * r
        xi = 0.5 * eps * (r ** 2 - 1.0 / beta)
        return np.concatenate([theta, r, xi], axis=1), thermostat_family.ONE_GRADIENT
    mp.setattr(thermostat_family, "_msgnht_splitting", printed)
    return {}


def _skew_flow_made_naive(mp):
    """Eq. (7) replaced by Eq. (4) with B = C (the position equation left unscaled)."""
    generators = qnhmc.flow_generators
    mp.setattr(qnhmc, "flow_generators", lambda A, B, C: (generators(A, B, C)[0],) * 2)
    return {}


def _lbfgs_forgets_its_pairs(mp):
    """The L-BFGS memory never takes a pair in."""
    mp.setattr(curvature, "lbfgs_append", lambda S, Y, s, y, ok: (S, Y))
    return {}


def _cir_at_a_wrong_shape(mp):
    """SCIR's transition drawn with a shape 1.2 times too large."""
    transition = simplex_family.cir_transition
    mp.setattr(simplex_family, "cir_transition", lambda theta, a, h, rng: transition(theta, 1.2 * a, h, rng))
    return {}


def _rename(module, old, new, **params):
    """The check's module builds `new` (with params) where it asks for `old`."""
    build = module.build_sampler

    def renamed(name, *args, **kw):
        if name == old:
            name = new
            kw.update(params)
            kw.pop("h", None)
        return build(name, *args, **kw)
    return renamed


def _scir_replaced_by_reflected_euler(mp):
    mp.setattr(scir, "build_sampler", _rename(scir, "scir", "sgrld-simplex", eps=0.1))
    return {}


def _gsgrhmc_replaced_by_its_naive_form(mp):
    mp.setattr(scir, "build_sampler", _rename(scir, "sgrhmc-simplex", "sgrhmc-simplex-naive"))
    return {}


def _santa_not_annealed(mp):
    mp.setitem(santa.ANNEAL, "anneal_c", 0.0)
    return {}


MUTATIONS = {
    "01-dynamics-to-distributions": {
        "fokker_planck_residual": lambda mp: {"drop": ("gamma",)},
        "ensemble_kl": _hot_noise,
        "ergodic_time_average": _no_friction,
    },
    "02-recipe": {"recipe_residual": _gamma_forgotten_in_the_edited_recipe},
    "03-completeness": {"completeness_q": _printed_sign_of_the_current_integral,
                        # the Fourier multiplier without its i: derivatives taken as multiplications by k
                        "completeness_q_real": lambda mp: {"unit": 1.0}},
    "04-stochastic-gradients": {"sgld_noise_bias": _no_bhat, "minibatch_kl": _one_fixed_batch},
    "05-sghmc": {"sghmc_friction": _hot_noise, "sghmc_friction_limit": _friction_doubled},
    "06-sgrld": {"sgrld_gamma": _hot_noise},
    "07-thermostats": {"thermostat_equipartition": _double_gradient_noise,
                       "sgnht_thermostat_energy": _printed_thermostat_energy},
    "08-sgrhmc": {"sgrhmc_naive_kl": _hot_noise},
    "09-integrators": {"integrator_order": _lie_splitting, "integrator_simulation": _hot_noise,
                       "msgnht_splitting": _msgnht_thermostat_reset},
    "10-qnhmc": {"qnhmc_flow": _skew_flow_made_naive,
                 # the claim broken: HMC "tuned" to the paper's untuned step cannot close the gap
                 "qnhmc_ess": lambda mp: {"tuned_eps": 0.01},
                 "qnhmc_lbfgs": _lbfgs_forgets_its_pairs},
    "11-scir": {"scir_moments": _cir_at_a_wrong_shape, "scir_mgf": _cir_at_a_wrong_shape,
                "scir_sparse_quantiles": _scir_replaced_by_reflected_euler,
                "scir_ks_batch": _scir_replaced_by_reflected_euler,
                "sgrld_boundary_bias": _cir_at_a_wrong_shape,
                "sgrhmc_simplex_boundary": _gsgrhmc_replaced_by_its_naive_form},
    "12-temperature-santa": {"santa_annealing": _santa_not_annealed},
}
CASES = [(slug, name) for slug, table in MUTATIONS.items() for name in table]


def _page_checks(slug: str) -> list[str]:
    text = (LESSONS / f"{slug}.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---", 2)[1])["checks"]


def test_every_check_of_every_lesson_has_a_mutation():
    pages = sorted(p.stem for p in LESSONS.glob("[0-9][0-9]-*.md"))
    assert sorted(MUTATIONS) == pages
    for slug in pages:
        assert sorted(MUTATIONS[slug]) == sorted(_page_checks(slug)), slug
    assert sorted(name for _, name in CASES) == sorted(checks.CHECKS)


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s[:2]}-{n}" for s, n in CASES])
def test_the_check_fails_under_its_mutation_and_passes_without(slug, name, monkeypatch):
    assert checks.cached(name, True)["passed"], f"{name} fails unmutated"
    kwargs = MUTATIONS[slug][name](monkeypatch)
    mutated = checks.CHECKS[name](quick=True, **kwargs)
    assert not mutated["passed"], f"{name} still passes under its mutation: {mutated['text']}"
