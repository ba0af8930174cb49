"""Conformance (issue 25, item 8): cases others wrote, run by every sampler they apply to.

Each case's source is cited in conformance_cases.py beside its density: chi-feng/mcmc-demo's gallery (banana,
donut, standard, multimodal, funnel, squiggle), BlackJAX's linear-regression sampling test, Chen, Fox &
Guestrin's Fig. 1 setting and Welling & Teh's (2011, Sec. 5.1) mixture posterior. A corrected sampler at its
defaults (target-fitted eps) must reach the noise floor: KL <= floor + 4 sd, sd the KL's (resampling whole chains)
and the floor estimate's in quadrature (conformance_cases.tolerance says why). Where it does not, the case runs at
eps=auto (samplers.ladder.auto_eps); where that fails too the pair is an expected failure with the numbers
measured, and where the run a case specifies in time units would pass conformance_cases.MAX_STEPS at that eps,
its verdict is "not decidable" (a skip that says why), neither a pass nor a failure. The naive samplers must fail
the same criterion or have escaped chains (the power check), and exact draws must pass it. The simplex samplers
and Santa (an annealer) do not apply.
The table is benchmarks/conformance.py's, in docs/conformance.md.
"""
import numpy as np
import pytest
from conformance_cases import CORRECTED, NAIVE, cases, exact_draws, kl_sd, measure, tolerance

from samplers.accuracy import kl_noise_floor, score
from samplers.targets.presets import get_potential

CASES = cases()

# (case, sampler) that miss the floor at their defaults and reach it at eps=auto (docs/conformance.md)
AT_AUTO = {("donut", "sgld"), ("blackjax-linreg", "sgld"), ("blackjax-linreg", "sgrld"), ("chen-fig1", "sgld"),
           ("welling-teh", "sgld"), ("squiggle", "sgnht")}

# (case, sampler) that miss it at eps=auto too: findings, with the numbers measured (benchmarks/conformance.py, seed
# 1), not run here (their ladders take a minute of CPU)
XFAIL = {}

# (case, sampler) run by the benchmark only, for time, with the verdict measured there (docs/conformance.md): the
# funnel at eps=auto (each needs the ladder, 6-50 s of CPU, and a run of 28,000 to 114,000 steps), SGRHMC on
# BlackJAX's regression at eps=auto (its ladder and 76,000 steps: 48 s on a loaded machine, where the funnel's rows
# that run here take 38 s, as many as they did before) and SGLD on Welling & Teh's at eps=auto (below)
BENCH_ONLY = {
    ("blackjax-linreg", "sgrhmc"): "defaults eps 0.00316: KL 0.00815 > 0.00040; eps=auto 7.9e-4, after 60 time "
                                   "units of burn-in: KL 0.00065 <= 0.00130, pass",
    ("funnel", "sgrld"): "not decidable: defaults eps 8.3e-4: KL 0.277 > 0.125, 1 chain diverged; eps=auto 2.1e-4, "
                         "where 25 + 50 time units take 361,023 steps > MAX_STEPS",
    ("funnel", "sgnht"): "defaults eps 0.0105: KL 0.0336 > 0.0189, 2 chains diverged; eps=auto 0.00132: KL 0.0158 "
                         "<= 0.0203, pass",
    ("funnel", "msgnht"): "defaults eps 0.0105: KL 0.0342 > 0.0240, 3 chains diverged; eps=auto 0.00263: KL 0.0117 "
                          "<= 0.0142, pass",
    ("funnel", "sgrhmc"): "defaults eps 0.0105: 26 chains diverged; eps=auto 6.6e-4 (no rung passed the ladder's "
                          "2 sd): KL 0.0116 <= 0.0127, pass",
    # its ladder and run took 71 s of a CI worker; the joint scoring it depends on is tests/test_ladder.py's
    ("welling-teh", "sgld"): "defaults eps 0.00404: KL 0.006801 > 0.003183; eps=auto 0.001011: KL 0.00483 <= "
                             "0.00624, pass",
}

# naive samplers not measurably biased on a case (V = 1): on an isotropic Gaussian and the gallery's mixture of
# isotropic ones QNHMC's metric stays near the identity, so the terms Eq. (4) drops are small
NAIVE_XFAIL = {
    ("standard", "qnhmc-naive"): "KL 0.00476 within tolerance 0.00493 (floor 0.00400)",
    ("multimodal", "qnhmc-naive"): "KL 0.00429 within tolerance 0.00459 (floor 0.00359)",
}


def _params(pairs, xfails, skip_run=(), skip=None):
    def marks(c, s):
        if skip and (c, s) in skip:
            return [pytest.mark.skip(reason="benchmarks/conformance.py only: " + skip[(c, s)])]
        if (c, s) in xfails:
            return [pytest.mark.xfail(strict=True, reason=xfails[(c, s)], run=(c, s) not in skip_run)]
        return []
    return [pytest.param(c, s, id=f"{c}-{s}", marks=marks(c, s)) for c, s in pairs]


@pytest.mark.parametrize("case,sampler", _params([(c, s) for c in CASES for s in CORRECTED], XFAIL,
                                                 skip_run=XFAIL, skip=BENCH_ONLY))
def test_corrected_sampler_reaches_the_noise_floor(case, sampler):
    extra = {}
    if (case, sampler) in AT_AUTO:
        from samplers.ladder import auto_eps
        from samplers.registry import build_sampler
        c = CASES[case]
        extra["eps"] = auto_eps(build_sampler(sampler, c.potential, V=c.V, **c.params.get(sampler, {})), seed=3).eps
    o = measure(CASES[case], sampler, **extra)
    if o.undecidable:
        pytest.skip(o.undecidable)
    # escaped chains are reported, not failed: the bound behind them holds for log-concave targets, and the
    # funnel and the gallery's mixtures are not (the KL sees what matters of them)
    assert o.reaches_floor, o


def test_msgnht_at_eps_auto_reaches_the_floor_on_welling_teh():
    """The ladder confirms a momentum sampler's pick with a longer run (samplers.ladder.AUTO_CONFIRM). Its 2 + 3
    unit rung passes mSGNHT at 0.0509 on Welling & Teh's posterior, where this suite's run fails (KL 0.00191 >
    tolerance 0.00170, floor 0.00123: the bias builds up over longer than the rung); the confirmation rejects it
    and picks 0.0254. Without it this test fails (docs/notes/stepsize.md). At its defaults it passes (above)."""
    from samplers.ladder import auto_eps
    from samplers.registry import build_sampler
    c = CASES["welling-teh"]
    eps = auto_eps(build_sampler("msgnht", c.potential, V=c.V, **c.params.get("msgnht", {})), seed=3).eps
    o = measure(c, "msgnht", eps=eps)
    assert o.reaches_floor, o


@pytest.mark.parametrize("case,sampler", _params([(c, s) for c in CASES for s in NAIVE], NAIVE_XFAIL))
def test_naive_sampler_is_biased_or_escapes(case, sampler):
    o = measure(CASES[case], sampler)
    if o.undecidable:
        pytest.skip(o.undecidable)
    assert o.biased, o


@pytest.mark.parametrize("case", ["standard", "banana", "funnel", "funnel-draws", "welling-teh"])
def test_exact_draws_pass(case):
    """The criterion's size: AR(1) chains exact in law (phi = 0.95, as correlated as a slow sampler's), drawn
    through the Gaussian these cases are maps of, score within the tolerance. banana and funnel are drawn by
    their sources' own maps (MCMC.js: y0 = x/a, y1 = ya + ab(x^2 + a^2); y - 2 ~ N(0, 9), x ~ N(0, e^(y-2))).
    Welling & Teh's posterior has no such map: independent draws by `exact_draws` (its chains' start), which
    this checks too, as it does on the funnel ("funnel-draws"), whose chains start there as well (from a grid of
    400 x 400 cells `exact_draws` put none in the funnel's neck: KL 0.19 against a floor of 0.0015)."""
    pot = get_potential(CASES[case.removesuffix("-draws")].potential)
    rng = np.random.default_rng(7)
    kept, chains, phi = 600, 1000, 0.95
    if case in ("welling-teh", "funnel-draws"):
        kept = 50 if case == "funnel-draws" else kept    # its draws cost 50 us each (U on 2289 nodes of x)
        out = exact_draws(pot, kept * chains, rng).reshape(kept, chains, 2)
        floor = kl_noise_floor(pot, out)
        assert score(pot, out)["kl"] <= tolerance(floor, kl_sd(pot, out), chains), floor
        return
    z = rng.standard_normal((chains, 2))
    out = np.empty((kept, chains, 2))
    for k in range(kept):
        z = phi * z + np.sqrt(1 - phi * phi) * rng.standard_normal((chains, 2))
        if case == "standard":
            out[k] = z
        elif case == "banana":     # (y0, y1) ~ N((0, 4), [[1, .5], [.5, 1]]), inverted
            y0 = z[:, 0]
            y1 = 4 + 0.5 * z[:, 0] + np.sqrt(0.75) * z[:, 1]
            x = 2 * y0
            out[k] = np.stack([x, (y1 - 2 * 0.2 * (x * x + 4)) / 2], axis=1)
        else:
            y = 2 + 3 * z[:, 1]
            out[k] = np.stack([np.exp((y - 2) / 2) * z[:, 0], y], axis=1)
    sc = score(pot, out)
    floor = kl_noise_floor(pot, out)
    assert sc["kl"] <= tolerance(floor, kl_sd(pot, out), chains), (sc["kl"], floor)
