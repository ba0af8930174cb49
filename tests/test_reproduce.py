"""Each reproduction runs at a reduced size and its qualitative claim is asserted."""
import pytest
from conftest import assert_claims_hold
from conftest import run_reproduction as run

from samplers.reproduce import REPRODUCTIONS, names


def test_recipe_fig2_left_naive_sgrhmc_is_off(tmp_path):
    assert_claims_hold(run("recipe-fig2-left", tmp_path), "naive SGRHMC does not converge to the target (gaussian)",
                       "naive SGRHMC does not converge to the target (double-well)")


def test_recipe_fig2_right_sgrhmc_beats_sghmc(tmp_path):
    assert_claims_hold(run("recipe-fig2-right", tmp_path), "gSGRHMC explores the banana faster than SGHMC")


def test_every_reproduction_is_listed():
    assert {"recipe-fig2-left", "recipe-fig2-right"} <= set(names())
    for rep in REPRODUCTIONS.values():
        assert rep.title and rep.source


def test_a_claim_that_is_not_there_fails():
    with pytest.raises(AssertionError):
        assert_claims_hold({"a claim": {"holds": True, "evidence": ""}}, "another claim")
