"""The residual map: d_t p at p = exp(-H) on a grid of two state coordinates, and the current J with
d_t p = -div J; zero for a recipe, not for its naive variant."""
from __future__ import annotations

import numpy as np
import pytest

from samplers.engine.stationarity import residual_map
from samplers.registry import build_sampler
from samplers.targets.presets import get_potential


def _map(name, pot, n_grid=61, V=1.0):
    s = build_sampler(name, pot, V, None)
    return residual_map(s.recipe, get_potential(pot), n_grid)


@pytest.mark.parametrize("name", ["sgrhmc", "sghmc", "sgnht"])
def test_a_recipes_map_is_zero_everywhere(name):
    m = _map(name, "double-well")
    assert m.names[:2] == ("theta", "r")
    assert np.abs(m.field).max() < 1e-6 and m.relative < 1e-6


@pytest.mark.parametrize("name", ["sgrhmc-naive", "sghmc-naive"])
def test_a_naive_map_shows_mass_created_and_destroyed(name):
    m = _map(name, "double-well", V=4.0)
    assert m.relative > 1e-3
    assert m.field.max() > 1e-3 and m.field.min() < -1e-3


def test_the_current_is_what_the_field_says_div_j_equals_minus_d_t_p():
    # finite differences of J on the grid against the pointwise field: the error falls like h^2
    errs = []
    for n in (101, 201):
        m = _map("sgrhmc-naive", "double-well", n)
        (x, y), (jx, jy) = m.axes, m.current
        div = np.gradient(jx, x, axis=0) + np.gradient(jy, y, axis=1)
        inner = (slice(2, -2), slice(2, -2))
        errs.append(np.abs(div + m.field)[inner].max() / np.abs(m.field).max())
    assert errs[1] < 0.35 * errs[0] and errs[1] < 0.05, errs
    # for a recipe the current is not zero (Q circulates it) but its divergence is
    m = _map("sgrhmc", "double-well", 201)
    (x, y), (jx, jy) = m.axes, m.current
    assert np.abs(jx).max() > 0.1


def test_a_two_dimensional_target_is_shown_on_the_theta_plane_at_zero_momentum():
    m = _map("sghmc", "banana", 41)
    assert m.names == ("theta_1", "theta_2") and m.fixed == {"r_1": 0.0, "r_2": 0.0}
    assert m.field.shape == (41, 41)


@pytest.mark.parametrize("name", ["sgrhmc-naive", "sgnht"])
def test_a_fault_that_vanishes_on_the_first_slice_shows_on_another_plane(name):
    from samplers.engine.stationarity import map_planes
    s = build_sampler(name, "banana", 1.0, None)
    recipe = s.recipe
    if name == "sgnht":   # the thermostat's Γ dropped: zero at ξ = A, which is where the slice holds ξ
        from samplers.engine.edit import edited_recipe, matrix_cells
        recipe = edited_recipe(recipe, matrix_cells(recipe._raw[0]), matrix_cells(recipe._raw[1]), {"gamma"})
    pot = get_potential("banana")
    first = residual_map(recipe, pot, 31)
    others = [residual_map(recipe, pot, 31, plane) for plane in map_planes(recipe)[1:]]
    assert max(o.relative for o in others) > 1e-3, [o.relative for o in others]
    if name == "sgrhmc-naive":
        assert first.relative < 1e-6          # why the view does not stop at the first plane
