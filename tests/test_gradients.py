import numpy as np
import pytest

from samplers.gradients import ExactGradient, GradientError, Minibatch, SimulatedNoise, make_oracle
from samplers.targets.presets import get_potential


def test_simulated_noise_has_the_stated_covariance():
    pot = get_potential("correlated-gaussian")
    V = np.array([[2.0, 0.5], [0.5, 1.0]])
    oracle = SimulatedNoise(pot, V)
    theta = np.zeros((200000, 2)) + 0.3
    _, g = oracle(theta, np.random.default_rng(0))
    noise = g - pot.grad(theta)
    np.testing.assert_allclose(noise.mean(0), 0, atol=0.01)
    np.testing.assert_allclose(np.cov(noise.T), V, atol=0.02)
    _, g = SimulatedNoise(pot, 4.0)(theta, np.random.default_rng(0))
    assert (g - pot.grad(theta)).var() == pytest.approx(4.0, rel=0.01)


def test_exact_gradient_draws_nothing():
    pot = get_potential("gaussian")
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    ExactGradient(pot)(np.ones((5, 1)), rng)
    assert rng.bit_generator.state == state


def test_minibatch_is_unbiased_and_bhat_matches_its_spread():
    pot = get_potential("logistic")
    oracle = Minibatch(pot, 25)
    w = np.tile(pot.start + 0.05, (40000, 1))
    u, g = oracle(w, np.random.default_rng(1), value=True)
    full = pot.grad(w[:1])[0]
    spread = np.cov(g.T)
    assert np.abs(g.mean(0) - full).max() < 4 * np.sqrt(np.diag(spread) / len(w)).max()
    assert u.mean() == pytest.approx(pot.U(w[:1])[0], rel=0.01)
    bhat = oracle.bhat(w).mean(0)            # the per-batch estimates, averaged
    np.testing.assert_allclose(bhat, spread, rtol=0.1, atol=0.05 * np.abs(spread).max())


def test_bad_oracle_settings():
    pot = get_potential("gaussian")
    with pytest.raises(GradientError, match=">= 0"):
        make_oracle(pot, V=-1)
    with pytest.raises(GradientError, match="has no data"):
        make_oracle(pot, batch=3)
    with pytest.raises(GradientError, match="between 1 and N"):
        make_oracle(get_potential("logistic"), batch=0)
    with pytest.raises(GradientError, match="either"):
        make_oracle(get_potential("logistic"), V=1.0, batch=3)
    with pytest.raises(GradientError, match="symmetric"):
        SimulatedNoise(get_potential("banana"), np.array([[1.0, 2.0], [0.0, 1.0]]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("V", [1.0, 2.5, np.array([[2.0, 0.5], [0.5, 1.0]]), 0.0])
def test_an_oracles_lean_call_is_its_gradient(V, dtype):
    """`oracle.gradient()`, what a prepared step calls (samplers.families.common.gradient_of), is `oracle(...)`'s
    gradient bit for bit, from the same draws; the exact gradient draws nothing there either."""
    pot = get_potential("banana")
    oracle = SimulatedNoise(pot, V) if np.any(V) else ExactGradient(pot)
    theta = np.random.default_rng(0).standard_normal((300, 2)).astype(dtype)
    ra, rb = np.random.default_rng(1), np.random.default_rng(1)
    g = oracle.gradient()(theta, ra)
    assert g.dtype == oracle(theta, rb)[1].dtype and np.array_equal(g, oracle(theta, np.random.default_rng(1))[1])
    assert ra.bit_generator.state == rb.bit_generator.state
