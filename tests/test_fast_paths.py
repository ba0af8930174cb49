"""Every specialised step equals the generic recipe engine step for step under one random stream:
the registry's samplers are provably instances of their (H, D, Q)."""
import numpy as np
import pytest

from samplers.registry import REGISTRY, sampler_names
from samplers.sampler import SamplerError

FAST = [n for n in sampler_names() if REGISTRY[n].fast is not None and REGISTRY[n].recipe is not None
        and REGISTRY[n].family != "simplex"]
SIMPLEX_FAST = [n for n in sampler_names() if REGISTRY[n].fast is not None and REGISTRY[n].recipe is not None
                and REGISTRY[n].family == "simplex"]


def run_both(s, steps=40, chains=64, seed=3):
    z0 = s.init_state(chains, np.random.default_rng(seed))
    ra, rb = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    za, zb = z0.copy(), z0.copy()
    for t in range(1, steps + 1):
        (za, info_a), (zb, info_b) = s.step(za, ra, t), s.engine_step(zb, rb, t)
        assert info_a.grad_evals == info_b.grad_evals
        if info_a.accepted is not None:
            assert np.array_equal(info_a.accepted, info_b.accepted)
    # the two generators must also have drawn exactly the same numbers
    assert ra.random() == rb.random()
    return za, zb


@pytest.mark.parametrize("potential", ["gaussian", "double-well", "banana", "mixture"])
@pytest.mark.parametrize("name", FAST)
def test_fast_path_equals_engine_with_gradient_noise(name, potential, make_sampler):
    za, zb = run_both(make_sampler(name, potential, V=1.0))
    assert np.isfinite(za).all()
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", FAST)
def test_fast_path_equals_engine_with_bhat_and_exact_gradient(name, make_sampler):
    kwargs = {"Bhat": 0.5} if "Bhat" in REGISTRY[name].defaults else {}
    za, zb = run_both(make_sampler(name, "banana", V=0.5, **kwargs), steps=20)
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)
    za, zb = run_both(make_sampler(name, "double-well", V=0.0), steps=20)
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgrhmc"])
def test_fast_path_equals_engine_with_minibatches(name, make_sampler):
    za, zb = run_both(make_sampler(name, "logistic", V=None, batch=20, eps=1e-3), steps=10)
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("potential, batch, params", [
    ("sparse-dirichlet", 10, {}), ("dirichlet:3,5,2;alpha=1", None, {}), ("gamma:2", None, {}),
    ("dirichlet:30,60,10", 5, {"Bhat": 0.5})])
@pytest.mark.parametrize("name", SIMPLEX_FAST)
def test_simplex_fast_path_equals_mirrored_engine(name, potential, batch, params, make_sampler):
    """The expanded-mean samplers (Gamma and Dirichlet targets only): the engine steps the mirrored recipe,
    the fast path its own fold; minibatches drawn from the counts, the default start folded onto theta > 0."""
    if "integrator" in REGISTRY[name].defaults:
        # the splitting, gSGRHMC's default, is not the engine's; Euler is stable on these targets at eps = 0.001
        params = {"eps": 0.001, **params, "integrator": "euler"}
    za, zb = run_both(make_sampler(name, potential, V=None, batch=batch, **params))
    assert np.isfinite(za).all() and (za[:, :za.shape[1] // (2 if "hmc" in name else 1)] >= 0).all()
    # on the sparse target gSGRHMC's force a/sqrt(theta) at theta ~ 1e-10 amplifies the last-bit differences of
    # the two formulas' evaluation orders (measured: 4.5e-9 relative after 40 steps, one entry of 1280)
    np.testing.assert_allclose(za, zb, rtol=1e-7 if potential == "sparse-dirichlet" else 1e-10, atol=1e-12)


def test_momentum_resampling_is_shared(make_sampler):
    za, zb = run_both(make_sampler("sghmc", "gaussian", resample_every=5), steps=23)
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)


def test_engine_refuses_splitting(make_sampler):
    s = make_sampler("sghmc", "gaussian", integrator="splitting")
    z = s.init_state(4, np.random.default_rng(0))
    s.step(z, np.random.default_rng(1))
    with pytest.raises(SamplerError, match="Euler"):
        s.engine_step(z, np.random.default_rng(1))
    # an edited (H, D, Q) goes through the engine: the splitting would step past the edit, so it is refused
    with pytest.raises(SamplerError, match="integrator = euler"):
        s.with_recipe(s.recipe)
    edited = make_sampler("sghmc", "gaussian", integrator="euler").with_recipe(s.recipe)
    assert edited.step(z, np.random.default_rng(1))[0].shape == z.shape


TEMPERED = {"beta": dict(beta=0.5), "hot-bhat": dict(beta=2.0, Bhat=0.5),
            "schedule": dict(eps_b=5.0, eps_c=0.55), "both": dict(beta=0.5, eps_b=5.0, eps_c=1.0)}


@pytest.mark.parametrize("case", sorted(TEMPERED))
@pytest.mark.parametrize("potential", ["gaussian", "double-well", "banana"])
@pytest.mark.parametrize("name", FAST)
def test_fast_path_equals_engine_tempered_and_scheduled(name, potential, case, make_sampler):
    """beta != 1 and a step-size schedule change the fast paths and the engine the same way."""
    kwargs = {k: v for k, v in TEMPERED[case].items() if k in REGISTRY[name].defaults}
    s = make_sampler(name, potential, V=1.0, **kwargs)
    assert s.beta == TEMPERED[case].get("beta", 1.0)
    za, zb = run_both(s, steps=30)
    assert np.isfinite(za).all()
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)


def test_schedule_is_applied_by_both(make_sampler):
    """The scheduled step really moves: eps_t = eps (1 + t/eps_b)^-eps_c, and a fast path run with it differs
    from the constant-step run from step 1 on."""
    s = make_sampler("sgld", "gaussian", eps=0.1, eps_b=10.0, eps_c=1.0)
    assert s.step_size(10) == pytest.approx(0.05)
    assert make_sampler("sgld", "gaussian", eps=0.1).step_size(10 ** 6) == 0.1
    z0 = s.init_state(8, np.random.default_rng(0))
    moved = s.step(z0, np.random.default_rng(1), t=10)[0]
    const = make_sampler("sgld", "gaussian", eps=0.1).step(z0, np.random.default_rng(1), t=10)[0]
    assert not np.allclose(moved, const)


@pytest.mark.parametrize("potential, G1", [("double-well", "expr:1/(1+x^2)"), ("banana", "expr:2/(1 + x^2) + y^2/10")])
@pytest.mark.parametrize("name", ["santa", "santa-naive"])
def test_santa_fast_path_equals_engine_with_a_typed_g1(name, potential, G1, make_sampler):
    """The fast path's grad g (one lambdify of sympy's derivative) and the engine's Gamma (sympy's, from D and Q)."""
    za, zb = run_both(make_sampler(name, potential, V=1.0, G1=G1, beta=0.5), steps=30)
    assert np.isfinite(za).all()
    np.testing.assert_allclose(za, zb, rtol=1e-10, atol=1e-10)
