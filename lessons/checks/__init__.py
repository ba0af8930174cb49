"""The numerical checks the lessons show: one module per lesson, one function per check.

A check is `name(quick: bool = False) -> CheckResult` (a dict: value, tolerance, passed, text; see
`common.py`). All checks use fixed seeds and the library's own samplers, targets and diagnostics,
vectorised over chains; their Monte Carlo tolerances come from the run itself (standard errors
between independent chains, or the KL noise floor of `samplers.accuracy`). `quick=True` keeps each
check to about a second or two (the app runs them when a page opens); `quick=False` uses more
chains for a sharper number.

A page names its checks in its front matter and shows each with a `{{check:name}}` line; CHECKS
below is the one table from those names to the functions.
"""
from __future__ import annotations

from functools import cache

from . import (
    completeness,
    dynamics,
    integrators,
    qnhmc,
    recipe,
    santa,
    scir,
    sghmc,
    sgrhmc,
    sgrld,
    stochastic_gradients,
    thermostats,
)
from .common import CheckResult

__all__ = ["CHECKS", "CheckResult", "cached"]

CHECKS = {
    # 01 From dynamics to distributions
    "fokker_planck_residual": dynamics.fokker_planck_residual,
    "ensemble_kl": dynamics.ensemble_kl,
    "ergodic_time_average": dynamics.ergodic_time_average,
    # 02 The recipe
    "recipe_residual": recipe.recipe_residual,
    # 03 Completeness
    "completeness_q": completeness.completeness_q,
    "completeness_q_real": completeness.completeness_q_real,
    # 04 Stochastic gradients
    "sgld_noise_bias": stochastic_gradients.sgld_noise_bias,
    "minibatch_kl": stochastic_gradients.minibatch_kl,
    # 05 SGHMC
    "sghmc_friction": sghmc.sghmc_friction,
    "sghmc_friction_limit": sghmc.sghmc_friction_limit,
    # 06 SGRLD
    "sgrld_gamma": sgrld.sgrld_gamma,
    # 07 Thermostats
    "thermostat_equipartition": thermostats.thermostat_equipartition,
    "sgnht_thermostat_energy": thermostats.sgnht_thermostat_energy,
    # 08 SGRHMC
    "sgrhmc_naive_kl": sgrhmc.sgrhmc_naive_kl,
    # 09 Integrators
    "integrator_order": integrators.integrator_order,
    "integrator_simulation": integrators.integrator_simulation,
    "msgnht_splitting": integrators.msgnht_splitting,
    # 10 Quasi-Newton HMC
    "qnhmc_flow": qnhmc.qnhmc_flow,
    "qnhmc_ess": qnhmc.qnhmc_ess,
    "qnhmc_lbfgs": qnhmc.qnhmc_lbfgs,
    # 11 SCIR
    "scir_moments": scir.scir_moments,
    "scir_mgf": scir.scir_mgf,
    "scir_sparse_quantiles": scir.scir_sparse_quantiles,
    "scir_ks_batch": scir.scir_ks_batch,
    "sgrld_boundary_bias": scir.sgrld_boundary_bias,
    "sgrhmc_simplex_boundary": scir.sgrhmc_simplex_boundary,
    # 12 Temperature, annealing and Santa
    "santa_annealing": santa.santa_annealing,
}


@cache
def cached(name: str, quick: bool = True) -> CheckResult:
    """CHECKS[name](quick), computed once per process (checks are deterministic)."""
    if name not in CHECKS:
        raise KeyError(f"no check named '{name}' (known: {', '.join(CHECKS)})")
    return CHECKS[name](quick=quick)
