"""Inverse temperature beta and the step-size schedule (issue 13; docs/tempering.md).

Statistical tests as in test_statistical.py: many chains, fixed seeds, KL of the histogram against the
exact law with KL_TOL, and the power to see a miss of that size (the Monte Carlo floor of the KL estimate
well below it, and the same samples scored against the wrong law failing it).
"""
import io
import subprocess
import sys

import numpy as np
import pytest

from samplers.accuracy import kl_noise_floor, score
from samplers.cli import main
from samplers.run import run
from samplers.sampler import SamplerError

KL_TOL = 0.01


def kl_run(s, seed=11, chains=2000, steps=500, burn=2000):
    res = run(s, steps, chains, burn=burn, seed=seed)
    assert res.diverged == 0
    return score(s.target, res.theta), kl_noise_floor(s.target, res.theta), res


@pytest.mark.parametrize("potential", ["gaussian", "double-well"])
@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgrhmc"])
def test_beta_half_samples_exp_minus_u_over_two(name, potential, make_sampler):
    s = make_sampler(name, potential, V=1.0, beta=0.5)
    assert s.target.name == f"{potential} at beta=0.5"
    sc, floor, res = kl_run(s)
    assert floor < KL_TOL / 3, f"too few effective samples to test KL <= {KL_TOL}: floor {floor:.4f}"
    assert sc["kl"] <= KL_TOL, f"{name} on {potential} at beta 0.5: KL {sc['kl']:.4f} (floor {floor:.4f})"
    # power: the same samples against exp(-U), the untempered law, fail by far
    assert score(s.potential, res.theta)["kl"] > 3 * KL_TOL


def test_tempered_law_is_exact():
    """exp(-beta U) normalised on the grid is N(0, 1/beta) for the standard normal; the closed form of a
    Gaussian preset in any dimension has covariance cov / beta."""
    from scipy import stats

    from samplers.targets.presets import get_potential
    pot = get_potential("gaussian").tempered(0.5)
    xs = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(pot.density_xy(xs), stats.norm(0, np.sqrt(2)).pdf(xs), rtol=1e-6)
    np.testing.assert_allclose(pot.marginals[0](xs), stats.norm(0, np.sqrt(2)).pdf(xs), rtol=1e-3)
    big = get_potential("gaussian-100d").tempered(4.0)
    np.testing.assert_allclose(big.marginals[0](xs), stats.norm(0, np.sqrt(5 / 4)).pdf(xs), rtol=1e-12)
    assert get_potential("banana").tempered(1.0).name == "banana"


def test_schedule_removes_the_step_size_bias(make_sampler):
    """eps_t = eps (1 + t/eps_b)^-eps_c: SGLD at eps = 0.5 on the standard normal samples N(0, (2 + eps)/(2 - eps))
    (KL ~ 0.08); with eps_c = 1 the unweighted histogram of the late samples is the target (docs/tempering.md:
    samples are not weighted by eps_t)."""
    const, _, _ = kl_run(make_sampler("sgld", "gaussian", V=1.0, eps=0.5))
    assert const["kl"] > 3 * KL_TOL
    s = make_sampler("sgld", "gaussian", V=1.0, eps=0.5, eps_b=100.0, eps_c=1.0)
    sc, floor, _ = kl_run(s)
    assert s.step_size(2500) == pytest.approx(0.5 / 26)
    assert floor < KL_TOL / 3
    assert sc["kl"] <= KL_TOL, f"scheduled SGLD: KL {sc['kl']:.4f} (floor {floor:.4f})"


def test_schedule_with_beta(make_sampler):
    s = make_sampler("sghmc", "double-well", V=1.0, beta=0.5, eps=0.2, eps_b=100.0, eps_c=0.55)
    sc, floor, _ = kl_run(s)
    assert floor < KL_TOL / 3
    assert sc["kl"] <= KL_TOL, f"scheduled tempered SGHMC: KL {sc['kl']:.4f} (floor {floor:.4f})"


@pytest.mark.parametrize("params, words", [
    (dict(beta=0), "beta must be"), (dict(beta=-1), "beta must be"), (dict(beta="hot"), "beta must be a number"),
    (dict(beta="auto"), "beta must be a number"), (dict(eps_b=0), "eps_b must be > 0"),
    (dict(eps_c=1.5), "eps_c must be between 0 and 1"), (dict(eps_c=-0.1), "eps_c must be between 0 and 1")])
def test_bad_values_name_the_parameter(params, words, make_sampler):
    with pytest.raises(SamplerError, match=words):
        make_sampler("sgld", "gaussian", **params)


def test_simplex_samplers_refuse_beta(make_sampler):
    with pytest.raises(SamplerError, match="beta must be 1 for scir"):
        make_sampler("scir", "sparse-dirichlet", V=None, beta=0.5)
    assert make_sampler("scir", "sparse-dirichlet", V=None, beta=1).beta == 1.0


def test_cli_sample_and_diagnose_follow_beta(tmp_path):
    out = tmp_path / "t.npz"
    args = ["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "400", "--burn", "400",
            "--chains", "500", "--seed", "1", "--set", "beta=0.5", "--set", "eps_b=100", "--set", "eps_c=0.55",
            "--out", str(out)]
    assert main(args, out=io.StringIO()) == 0
    report = io.StringIO()
    assert main(["diagnose", str(out)], out=report) == 0
    kl = float(next(line for line in report.getvalue().splitlines() if line.startswith("KL")).split()[1])
    assert kl < KL_TOL, report.getvalue()   # scored against exp(-U/2); against exp(-U) it would be ~0.16


@pytest.mark.parametrize("setting, name", [("beta=0", "beta"), ("beta=x", "beta"), ("eps_b=-3", "eps_b"),
                                           ("eps_c=2", "eps_c")])
def test_cli_bad_values_exit_2_naming_the_parameter(setting, name, tmp_path):
    out = subprocess.run([sys.executable, "-m", "samplers", "sample", "--sampler", "sgld", "--potential", "gaussian",
                          "--steps", "1", "--set", setting, "--out", str(tmp_path / "x.npz")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], out.stderr


def test_momentum_and_thermostat_follow_the_temperature(make_sampler):
    """Errata E10: under exp(-beta H) the momentum's law is N(0, M/beta) (Z_K = integral of exp(-beta K), not
    of exp(+K)), and a thermostat drives r^T r / d to 1/beta: Gamma_xi = -1 enters the drift as -1/beta."""
    res = run(make_sampler("sghmc", "gaussian", V=0.0, beta=0.5, M=2.0), 500, 2000, burn=1000, seed=3, keep_aux=True)
    assert abs(res.aux.var() - 4.0) < 0.1, res.aux.var()          # M / beta = 4
    res = run(make_sampler("sgnht", "gaussian", V=4.0, beta=0.5), 500, 2000, burn=3000, seed=3, keep_aux=True)
    assert abs((res.aux[:, :, 0] ** 2).mean() - 2.0) < 0.05      # 1 / beta, with gradient noise it is not told of


def test_gradient_noise_correction_is_not_tempered(make_sampler):
    """Errata E10: tempering Eq. (9) divides the injected 2D by beta but not eps B^: the gradient noise enters
    through (D + Q) grad H~ whatever beta is. For SGLD on N(0, 1) at beta = 2 with V = B^ = 10, eps = 0.1 the
    stationary variance is (2/beta)/(2 - eps) = 0.526 (KL ~ 0.001 from the target's 0.5); dividing the
    whole noise eps (2 - eps B^) by beta would give (eps V (1 - 1/beta) + 2/beta)/(2 - eps) = 0.789."""
    s = make_sampler("sgld", "gaussian", V=10.0, beta=2.0, eps=0.1, Bhat=10.0)
    sc, floor, res = kl_run(s)
    assert floor < KL_TOL / 3 and sc["kl"] <= KL_TOL, (sc["kl"], floor)
    var = res.theta.var()
    assert abs(var - 1 / 1.9) < 0.02 and abs(var - 1.5 / 1.9) > 0.2, var


@pytest.mark.parametrize("name, params", [("hmc", {}), ("qnhmc", dict(adapt=0)), ("qnhmc", dict(adapt=50))])
def test_metropolis_samplers_at_beta_half_are_exact(name, params, make_sampler):
    """HMC and QNHMC at beta: p ~ N(0, M/beta) and the test min{1, exp(beta (H0 - H1))}; the (frozen-C) leapfrog
    map does not depend on beta, so the kernel stays exact. With adapt > 0, scored after B stops learning."""
    s = make_sampler(name, "double-well", V=0.0, beta=0.5, **params)
    sc, floor, res = kl_run(s, steps=300, burn=300)
    assert floor < KL_TOL / 3 and sc["kl"] <= KL_TOL, (sc["kl"], floor)
    assert score(s.potential, res.theta)["kl"] > 3 * KL_TOL
