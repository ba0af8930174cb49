"""Normals drawn ahead on another thread (samplers.prefetch) are the generator's own, in its order, and the
generator ends where the handed-out normals end: a run is the same bits with or without drawing ahead."""
import numpy as np
import pytest
from scipy import stats

import samplers.prefetch as prefetch
import samplers.run as run_module
from samplers.prefetch import Float32Normals, NormalsAhead, normals_from_words
from samplers.run import Ensemble, run


def requests(draw):
    """Sizes of every kind, across chunk boundaries (chunk = 10 below) and larger than a chunk."""
    out = np.empty((2, 3))
    return [draw(None), draw(4), draw((3, 2)), draw(np.int64(7)), draw(25), draw(out=out).copy(), draw(0),
            draw((1, 10)), draw(size=(2, 3), out=np.empty((2, 3)))]


def same(a, b):
    return all(np.array_equal(x, y) and np.shape(x) == np.shape(y) for x, y in zip(a, b, strict=True))


def test_normals_ahead_are_the_generators_in_its_order():
    plain, ahead = np.random.default_rng(5), NormalsAhead(np.random.default_rng(5), chunk=10)
    rng = ahead._rng
    assert same(requests(ahead.standard_normal), requests(plain.standard_normal))
    assert isinstance(ahead.standard_normal(), float)
    plain.standard_normal()
    ahead.close()
    assert rng.random() == plain.random()   # the generator is where the handed-out normals end
    assert ahead._done and not ahead._thread.is_alive()


@pytest.mark.parametrize("used", [0, 10, 13, 20])
def test_closing_puts_the_generator_after_what_was_handed_out(used):
    """Before any chunk, at a chunk's end (then the next chunk is already drawn) and inside one."""
    plain, rng = np.random.default_rng(2), np.random.default_rng(2)
    ahead = NormalsAhead(rng, chunk=10)
    assert np.array_equal(ahead.standard_normal(used), plain.standard_normal(used))
    ahead.close()
    assert np.array_equal(rng.standard_normal(3), plain.standard_normal(3))


def test_any_other_draw_is_made_where_the_normals_end_and_ends_drawing_ahead():
    plain, rng = np.random.default_rng(8), np.random.default_rng(8)
    ahead = NormalsAhead(rng, chunk=10)
    ahead.standard_normal(13)
    plain.standard_normal(13)
    assert np.array_equal(ahead.random(4), plain.random(4))
    assert ahead._done
    assert np.array_equal(ahead.standard_normal(5), plain.standard_normal(5))   # straight from the generator
    assert ahead.standard_normal(2, dtype=np.float32).dtype == np.float32
    assert ahead.bit_generator is rng.bit_generator


def test_an_error_in_the_drawing_thread_reaches_the_steps():
    ahead = NormalsAhead(np.random.default_rng(0), chunk=-1)   # numpy refuses a negative size
    with pytest.raises(ValueError, match="negative"):
        ahead.standard_normal(3)


@pytest.fixture
def drawn_ahead(monkeypatch):
    """Ensembles draw ahead from any size, in chunks of 97 normals, and count the chunks they used."""
    chunks = []

    class Counted(NormalsAhead):
        def _take(self, n):
            before = self._buf
            got = super()._take(n)
            if self._buf is not before:
                chunks.append(self._buf.size)
            return got

    monkeypatch.setattr(prefetch, "CHUNK", 97)
    monkeypatch.setattr(run_module, "AHEAD_FROM", 0)
    monkeypatch.setattr(run_module, "AHEAD_DTYPES", run_module.DTYPES)
    monkeypatch.setattr(run_module, "WORKERS", 2)
    monkeypatch.setattr(run_module, "NormalsAhead", Counted)
    return chunks


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, params", [("sgld", {}), ("sghmc", {}), ("sgnht", {}),
                                          ("sghmc-naive", {"resample_every": 4})])   # draws vary by step
def test_an_ensemble_drawing_ahead_is_the_same_run(name, params, dtype, drawn_ahead, make_sampler):
    s = make_sampler(name, "banana", V=1.0, **params)
    ahead = Ensemble(s, 50, seed=3, dtype=dtype)
    ahead.advance(9)
    ahead.advance(14)
    used = len(drawn_ahead)
    assert used > 3   # the steps did take their normals from chunks drawn ahead
    run_module.AHEAD_FROM = 10 ** 18
    plain = Ensemble(s, 50, seed=3, dtype=dtype)
    plain.advance(23)
    assert len(drawn_ahead) == used
    assert np.array_equal(ahead.z, plain.z) and ahead.rng.random() == plain.rng.random()


def test_run_draws_ahead_across_its_advances(drawn_ahead, make_sampler):
    s = make_sampler("sghmc", "gaussian", V=1.0)
    ahead = run(s, steps=30, chains=40, burn=5, thin=3, seed=1, keep_aux=True)
    assert drawn_ahead
    run_module.AHEAD_FROM = 10 ** 18
    plain = run(s, steps=30, chains=40, burn=5, thin=3, seed=1, keep_aux=True)
    assert np.array_equal(ahead.theta, plain.theta) and np.array_equal(ahead.aux, plain.aux)


def test_small_runs_and_blocks_do_not_draw_ahead(monkeypatch, make_sampler):
    monkeypatch.setattr(run_module, "WORKERS", 2)
    s = make_sampler("sgld", "gaussian", V=1.0)
    made = []
    monkeypatch.setattr(run_module, "NormalsAhead", lambda rng: made.append(rng) or NormalsAhead(rng))
    Ensemble(s, 1000, seed=0).advance(5)                     # a lab frame's worth
    Ensemble(s, 2000, seed=0, blocks=2).advance(400)         # blocks have a generator each
    Ensemble(make_sampler("hmc", "gaussian"), 1000, seed=0).advance(600)   # draws uniforms too
    Ensemble(s, 1000, seed=0, dtype="float32").advance(600)   # its normals cost less than the hand-over
    assert not made
    Ensemble(s, 1000, seed=0).advance(600)
    assert len(made) == 1


# -- float32 normals (issue 32) ----------------------------------------------------------
def test_float32_normals_are_standard_normal():
    """The law, against scipy.stats.norm: KS on 10^6 draws, the tails' masses beyond 2, 3 and 4 within 4
    binomial standard errors, and pairs from one word uncorrelated; the same KS test rejects a 2 % wider law."""
    z = Float32Normals(np.random.default_rng(1)).standard_normal(10 ** 6)
    assert z.dtype == np.float32
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert stats.kstest(1.02 * z.astype(float), "norm").pvalue < 1e-3
    for c in (2.0, 3.0, 4.0):
        p = 2 * stats.norm.sf(c)
        assert abs(np.mean(np.abs(z) > c) - p) < 4 * np.sqrt(p * (1 - p) / z.size), c
    words = np.random.default_rng(2).bit_generator.random_raw(10 ** 5)
    pair = normals_from_words(words, np.empty(2 * words.size, np.float32))
    assert abs(np.corrcoef(pair[:words.size], pair[words.size:])[0, 1]) < 4 / np.sqrt(words.size)
    # the cut: the largest |z| one word can give, from u = 2^-33
    assert np.sqrt(-2 * np.log(2.0 ** -33)) == pytest.approx(6.77, abs=0.01) and stats.norm.sf(6.77) * 2 < 2e-11


def test_float32_normals_drawn_ahead_are_the_same_stream():
    """Small and large requests, other draws in between: the same numbers with or without drawing ahead, and the
    generator in the same place after."""
    plain, words = (Float32Normals(np.random.default_rng(5), chunk=10) for _ in range(2))
    got_plain = [plain.standard_normal(3), plain.standard_normal((2, 7)), plain.random(2), plain.standard_normal(4)]
    first = words.standard_normal(3)
    ahead = NormalsAhead(words)
    got = [first, ahead.standard_normal((2, 7)), ahead.random(2), words.standard_normal(4)]
    assert ahead._done and all(np.array_equal(a, b) for a, b in zip(got, got_plain))
    assert got[1].dtype == np.float32 and words.random() == plain.random()
    ahead = NormalsAhead(words)
    assert np.array_equal(ahead.standard_normal(25), plain.standard_normal(25))
    ahead.close()
    assert np.array_equal(words.standard_normal(3), plain.standard_normal(3)) and words.random() == plain.random()
