"""Lesson 02, the recipe (Theorem 1): any PSD D and skew Q with Gamma leave exp(-H) invariant."""
from __future__ import annotations

from samplers.engine.edit import edited_recipe
from samplers.engine.stationarity import stationarity_residual
from samplers.registry import build_sampler

from .common import CheckResult, result, short

LESSON2_D = [["1 + theta_1^2/2", "0"], ["0", "1"]]
LESSON2_Q = [["0", "theta_1*theta_2/2"], ["-theta_1*theta_2/2", "0"]]


def recipe_residual(quick: bool = False) -> CheckResult:
    """Any PSD D and skew Q with Gamma leave exp(-H) invariant; without Gamma a state-dependent
    D(z), Q(z) does not. Here on the banana with D = diag(1 + theta_1^2/2, 1), Q_12 = theta_1 theta_2/2."""
    s = build_sampler("sgld", "banana")
    recipe = edited_recipe(s.recipe, LESSON2_D, LESSON2_Q)
    n_grid = 101 if quick else 201
    with_gamma = stationarity_residual(recipe, s.potential, n_grid=n_grid).relative
    without = stationarity_residual(recipe.with_drop({"gamma"}), s.potential, n_grid=n_grid).relative
    tol = 1e-6
    return result(with_gamma, tol, with_gamma < tol and without > 1e3 * tol,
                  f"residual with Γ {short(with_gamma)} (tolerance {short(tol)}); Γ dropped: {short(without)}")
