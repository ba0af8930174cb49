"""The lab's steps made cheaper (issue 28) without another number: the presets' U and gradients, computed in place
with constants of the state's dtype, are their formulas as written, bit for bit; and a blockwise state stays
column-major across steps, momentum resampling and SGRHMC included (its steps' ufuncs run over contiguous columns:
docs/notes/throughput.md). That the runs are the same bits as `Sampler.step` is tests/test_fast_paths.py's."""
import numpy as np
import pytest

from samplers.run import Ensemble
from samplers.targets.presets import get_potential

# the formulas as written before issue 28's rewrite (and in the presets' descriptions)
AS_WRITTEN = {
    "gaussian": (lambda t: 0.5 * t[:, 0] ** 2, None),
    "double-well": (lambda t: (t[:, 0] * t[:, 0]) * (t[:, 0] * t[:, 0] - 2), lambda t: 4 * t * (t * t - 1)),
    "banana": (lambda t: (a2 := t[:, 0] * t[:, 0]) ** 2 / 10 + (4 * (t[:, 1] + 1.2) - a2) ** 2 / 2,
               lambda t: np.stack([t[:, 0] * (0.4 * (a2 := t[:, 0] * t[:, 0]) - 2 * (s := 4 * (t[:, 1] + 1.2) - a2)),
                                   4 * s], axis=1)),
}
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 1.2, -1.2, 1e-300, 1e154, 1e200, np.inf, -np.inf, np.nan])


def points(dim: int) -> list[np.ndarray]:
    """Draws across the box and far out, every pair of special values, in both layouts."""
    rng = np.random.default_rng(28)
    grid = np.stack(np.meshgrid(*[SPECIAL] * dim), -1).reshape(-1, dim)
    drawn = rng.standard_normal((4000, dim)) * np.repeat([0.3, 3.0, 1e3, 1e80], 1000)[:, None]
    both = np.concatenate([grid, drawn])
    wide = np.asfortranarray(np.concatenate([both, both], axis=1))
    return [both, wide[:, :dim]]   # row-major, and a column-major state's theta


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(AS_WRITTEN))
def test_the_presets_formulas_are_as_written_bit_for_bit(name, dtype):
    pot = get_potential(name)
    with np.errstate(all="ignore"):
        for t in points(pot.dim):
            t = t.astype(dtype)
            for got, want in zip((pot.U, pot.grad), AS_WRITTEN[name]):
                if want is None:
                    continue
                a, b = got(t), want(t)
                assert a.dtype == b.dtype and a.shape == b.shape
                assert a.tobytes() == b.tobytes(), f"{name} in {dtype}: not the formula's bits"


def test_the_bit_comparison_can_fail():
    """Power: the double well's gradient with its product taken in another order, 4 t^3 - 4 t, is the same function
    but not the same bits on these points."""
    t = points(1)[0]
    with np.errstate(all="ignore"):
        other = 4 * t * t * t - 4 * t
        assert other.tobytes() != AS_WRITTEN["double-well"][1](t).tobytes()


@pytest.mark.parametrize("name, params", [("sghmc-naive", {"resample_every": 3}), ("sgrhmc", {}),
                                          ("sgrhmc-naive", {}), ("sghmc", {}), ("sgld", {}), ("sgnht", {})])
@pytest.mark.parametrize("potential", ["double-well", "banana"])
def test_a_blockwise_state_stays_column_major(name, params, potential, make_sampler):
    ens = Ensemble(make_sampler(name, potential, V=1.0, **params), 300, seed=1, blocks=1)
    assert ens.z.flags.f_contiguous
    ens.advance(7)
    assert ens.z.flags.f_contiguous and (ens.z.shape[1] == 1 or not ens.z.flags.c_contiguous)


def test_sgrhmc_takes_a_potentials_own_u_dtype_as_written(make_sampler):
    """SGRHMC's float64 step assumes a float64 U; a potential whose U is float32 goes on as the step as written (its
    metric then in float32, as `Sampler.step` computes it), bit for bit."""
    import dataclasses

    from samplers.gradients import SimulatedNoise
    from samplers.registry import get_spec
    from samplers.sampler import Sampler
    well = get_potential("double-well")
    pot = dataclasses.replace(well, U=lambda t: well.U(t).astype(np.float32))
    s = Sampler(get_spec("sgrhmc"), pot, SimulatedNoise(pot, 1.0))
    ens, ref = (Ensemble(s, 200, seed=4, blocks=1) for _ in range(2))
    z, rng = ref.z.copy(order="K"), ref.rng
    for t in range(1, 13):
        z = s.step(z, rng, t)[0]
    assert np.array_equal(ens.advance(12), z)
