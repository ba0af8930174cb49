"""The numbers the lessons state where they correct a source or themselves, and the errata E12-E18: each is
recomputed here, from the library's own steps where a step is involved (read off exactly on a Gaussian, with
`lessons.checks.common.affine_step_maps`) and by quadrature or algebra otherwise."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy
from scipy.integrate import quad
from scipy.linalg import expm, logm, solve_discrete_lyapunov

from lessons.checks.common import affine_step_maps, chain_mean_se
from lessons.checks.recipe import LESSON2_D, LESSON2_Q
from samplers.engine.edit import edited_recipe
from samplers.engine.symbols import RecipeError
from samplers.registry import build_sampler
from samplers.run import run


def stationary(F, G):
    return solve_discrete_lyapunov(F, G @ G.T)


# -- the lessons' own numbers ---------------------------------------------------------------------------------
def test_lesson08_zeros_of_u_plus_half_are_not_at_the_modes():
    """Lesson 8: U + 0.5 = 0 for U = theta^4 - 2 theta^2 at |theta| = 0.54 and 1.31, either side of the mode 1."""
    roots = np.sort(np.abs(np.roots([1, 0, -2, 0, 0.5]).real))[::2]
    assert np.allclose(roots, [0.5412, 1.3066], atol=1e-4)
    assert roots[0] < 1 < roots[1]
    assert np.round(roots, 2).tolist() == [0.54, 1.31]


def test_lesson12_mass_ratio_is_1_74_not_e_to_the_delta_u():
    """Lesson 12: the tilted double well's deeper mode holds 63.5 % at beta = 1, a ratio of 1.74, while
    e^(Delta U) with Delta U = 0.60 (the difference of the minima) is 1.82; 99.8 % at beta = 11."""
    def u(t):
        return t ** 4 - 2 * t ** 2 + 0.3 * t
    barrier = 0.0754
    lo, hi = sorted(np.roots([4, 0, -4, 0.3]).real)[::2]          # the two minima
    delta_u = u(hi) - u(lo)

    def mass(beta, a, b):
        return quad(lambda t: math.exp(-beta * (u(t) - u(lo))), a, b, limit=200)[0]
    deep, shallow = mass(1, -4, barrier), mass(1, barrier, 4)
    assert round(delta_u, 2) == 0.60 and round(math.exp(delta_u), 2) == 1.82
    assert round(deep / shallow, 2) == 1.74 and round(deep / (deep + shallow), 3) == 0.635
    assert round(mass(11, -4, barrier) / (mass(11, -4, barrier) + mass(11, barrier, 4)), 3) == 0.998


def test_lesson12_santa_marginal_does_not_need_a_separable_h():
    """Lesson 12 (and 1): Santa's H = U + p^2/2 + (xi - g2(theta))^2/2 does not separate, yet the integral over
    xi of exp(-beta (xi - g2)^2 / 2) is sqrt(2 pi / beta) whatever g2(theta) is."""
    for beta in (1.0, 4.0):
        for g2 in (0.3, 2.5):
            val = quad(lambda x, b=beta, c=g2: math.exp(-b * (x - c) ** 2 / 2), -np.inf, np.inf)[0]
            assert val == pytest.approx(math.sqrt(2 * math.pi / beta), rel=1e-10)


def test_lesson05_ladder_floor_of_sghmc_without_bhat():
    """Lesson 5: under the ladder's scaling (eps V / 2 held at 0.2) SGHMC with C = 3 and B^ = 0 runs at the
    temperature (C + eps V/2) / C = 1.067 as eps -> 0; with B^ = V at 1."""
    C, d_v = 3.0, 0.2
    for bhat_is_v, temperature in ((False, (C + d_v) / C), (True, 1.0)):
        var_r = []
        for eps in (0.004, 0.002):
            V = 2 * d_v / eps
            s = build_sampler("sghmc", "gaussian", eps=eps, C=C, V=V, Bhat=V if bhat_is_v else 0.0)
            var_r.append(stationary(*affine_step_maps(s, 2))[1, 1])
        # the Euler scheme's own O(eps) error, removed by extrapolating the two step sizes to 0
        limit = 2 * var_r[1] - var_r[0]
        assert limit == pytest.approx(temperature, abs=2e-3)
    assert round((C + d_v) / C, 3) == 1.067


def test_lesson05_naive_sghmc_error_vanishes_with_a_fixed_v():
    """Lesson 5: with a fixed gradient noise V (not the ladder's V ~ 1/eps) naive SGHMC's error falls as the
    step falls: its heating eps V / 2 per unit time vanishes with eps. Gaussian, V = 4, momentum resampled
    every 50 steps; E[theta^2] against 1, standard errors between chains."""
    err = {}
    for eps in (0.1, 0.025):
        s = build_sampler("sghmc-naive", "gaussian", V=4.0, eps=eps, resample_every=50)
        res = run(s, int(round(40 / eps)), 1000, burn=int(round(5 / eps)), thin=5, seed=3)
        err[eps] = chain_mean_se(res.theta[:, :, 0] ** 2 - 1)
    (big, se_big), (small, se_small) = err[0.1], err[0.025]
    assert big > 10 * se_big                                   # a real bias at eps = 0.1
    assert small < big / 4 - 4 * math.hypot(se_small, se_big / 4)


def test_lesson09_bch_half_steps_contribute_h2_over_8():
    """Lesson 9: log(e^(hA/2) e^(hB/2)) = (h/2)(A + B) + (h^2/8)[A, B] + O(h^3), and the palindrome's error is
    O(h^3)."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((2, 4, 4)) / 2
    comm = A @ B - B @ A
    errs = []
    for h in (0.02, 0.01):
        half = logm(expm(h * A / 2) @ expm(h * B / 2)).real
        rest = half - h * (A + B) / 2 - h ** 2 / 8 * comm
        assert np.abs(rest).max() < 0.05 * h ** 2 * np.abs(comm).max()
        sym = logm(expm(h * A / 2) @ expm(h * B) @ expm(h * A / 2)).real
        errs.append(np.abs(sym - h * (A + B)).max())
    assert 6 < errs[0] / errs[1] < 10                          # halving h divides an O(h^3) error by 8


# -- errata E12-E18 --------------------------------------------------------------------------------------------
def test_gamma_enters_the_step_with_a_plus_sign():
    """E12: one noiseless Euler step of the engine on lesson 2's banana recipe (D = diag(1 + theta_1^2/2, 1),
    Q_12 = theta_1 theta_2 / 2, Gamma = (3 theta_1/2, -theta_2/2)) is z + eps(-(D + Q) grad U + Gamma), not the
    printed z - eps[(D + Q) grad U + Gamma]."""
    s = build_sampler("sgld", "banana", eps=0.01)
    s = s.with_recipe(edited_recipe(s.recipe, LESSON2_D, LESSON2_Q))
    z = np.array([[0.7, -0.4], [-1.2, 0.3]])

    class NoNoise:
        def standard_normal(self, size=None, dtype=np.float64, out=None):
            return np.zeros(size)
    new, _ = s.engine_step(z, NoNoise(), 1)
    g = s.potential.grad(z)
    t1, t2 = z[:, 0], z[:, 1]
    dq = np.stack([(1 + t1 ** 2 / 2) * g[:, 0] + t1 * t2 / 2 * g[:, 1], -t1 * t2 / 2 * g[:, 0] + g[:, 1]], axis=1)
    gamma = np.stack([1.5 * t1, -t2 / 2], axis=1)
    assert np.allclose(new, z + 0.01 * (-dq + gamma), atol=1e-12)
    assert not np.allclose(new, z - 0.01 * (dq + gamma), atol=1e-4)


def test_naive_sghmc_diffusion_is_half_eps_v_and_friction_bound():
    """E13: the naive step adds momentum variance eps^2 V = 2 eps (eps V / 2): D_rr = eps V / 2, not eps V.
    SGHMC with C = eps V / 2 and B^ = V injects nothing and has exactly the stationary law of SGHMC with exact
    gradients at that C; a C below eps B^ / 2 is refused."""
    eps, V = 0.1, 4.0
    F, G = affine_step_maps(build_sampler("sghmc-naive", "gaussian", eps=eps, V=V), 2)
    added = (G @ G.T)[1, 1]
    assert added == pytest.approx(eps ** 2 * V) and added / (2 * eps) == pytest.approx(eps * V / 2)
    C = eps * V / 2
    noisy = stationary(*affine_step_maps(build_sampler("sghmc", "gaussian", eps=eps, C=C, V=V, Bhat=V), 2))
    exact = stationary(*affine_step_maps(build_sampler("sghmc", "gaussian", eps=eps, C=C), 2))
    assert np.allclose(noisy, exact, atol=1e-12)
    with pytest.raises(RecipeError, match="not positive semidefinite"):
        s = build_sampler("sghmc", "gaussian", eps=eps, C=C / 2, V=V, Bhat=V)
        s.step(s.init_state(4, np.random.default_rng(0)), np.random.default_rng(1), 1)


def test_older_riemannian_term_with_the_printed_factor_two():
    """E14: in 1-D, with g = G^-1, the printed 2|G|^-1/2 d(g |G|^1/2) is g' (the recipe's own Gamma), the term
    without the 2 is g'/2, and the drift -g U' + g'/2 has the zero-current density e^-U sqrt(G); in 2-D the
    printed term is not the recipe's Gamma."""
    t = sympy.symbols("theta", real=True)
    g = sympy.Function("g", positive=True)(t)
    G = 1 / g
    printed = sympy.simplify(2 * sympy.sqrt(G) ** -1 * sympy.diff(g * sympy.sqrt(G), t))
    older = sympy.simplify(sympy.sqrt(G) ** -1 * sympy.diff(g * sympy.sqrt(G), t))
    assert sympy.simplify(printed - sympy.diff(g, t)) == 0
    assert sympy.simplify(older - sympy.diff(g, t) / 2) == 0
    U = sympy.Function("U")(t)
    p = sympy.exp(-U) / sympy.sqrt(g)                           # e^-U sqrt(G)
    current = (-g * sympy.diff(U, t) + older) * p - sympy.diff(g * p, t)
    assert sympy.simplify(current) == 0
    x, y = sympy.symbols("x y", real=True)
    Ginv = sympy.Matrix([[1 + x ** 2, 0], [0, 1 + x ** 2 + y ** 2]])
    det = Ginv.inv().det()
    z = (x, y)
    printed2 = [sympy.simplify(2 / sympy.sqrt(det) * sum(sympy.diff(Ginv[i, j] * sympy.sqrt(det), z[j])
                                                         for j in range(2))) for i in range(2)]
    recipe2 = [sum(sympy.diff(Ginv[i, j], z[j]) for j in range(2)) for i in range(2)]
    assert any(sympy.simplify(a - b) != 0 for a, b in zip(printed2, recipe2))


def test_sgnht_thermostat_drift_has_no_factor_r():
    """E15: the drift the lab derives from SGNHT's (H, D, Q) has the xi row r.r/d - 1, a scalar without the
    factor r printed in (S.17)."""
    for pot in ("gaussian", "banana"):
        s = build_sampler("sgnht", pot)
        sym = s.recipe.sym
        d = s.dim
        r, xi = sym.aux[:d], sym.aux[d]
        f_xi = s.recipe.drift_exprs()[sym.z.index(xi)]
        assert sympy.simplify(f_xi - (sum(v ** 2 for v in r) / d - 1)) == 0
        assert all(sympy.simplify(f_xi / v) != sympy.simplify(sum(w ** 2 for w in r) / d - 1) for v in r)


def test_skew_flow_has_many_stationary_laws_and_appendix_b_reverses_it():
    """E16: on the paper's Gaussian (Sigma = 11^T + 4I, d = 10, C = Sigma, M = I) the flow of Eq. (7) keeps
    N(0, s Sigma_H) for every s > 0, not only s = 1; Appendix B's field is minus Eq. (7)'s."""
    from lessons.checks.qnhmc import flow_generators
    d = 10
    Sigma = np.ones((d, d)) + 4 * np.eye(d)
    A = np.linalg.inv(Sigma)
    _, L = flow_generators(A, Sigma, Sigma)
    target = np.block([[Sigma, np.zeros((d, d))], [np.zeros((d, d)), np.eye(d)]])
    for s in (1.0, 0.5, 3.0):
        assert np.abs(L @ (s * target) + (s * target) @ L.T).max() < 1e-9 * s
    C, Z = Sigma, np.zeros((d, d))
    appendix_b = np.block([[Z, -C], [C, Z]]) @ np.block([[A, Z], [Z, np.eye(d)]])   # (-C p, C grad U)
    assert np.allclose(appendix_b, -L)


def test_sghmc_high_friction_limit_time_scale():
    """E17: for SGHMC's SDE on U = theta^2/2 (dz = -A z dt + noise, A = [[0, -1], [1, C]]) the autocorrelation
    of theta at t = C u tends to SGLD's e^-u: the time scale is t = C u and the inertia term vanishes."""
    gaps = []
    for C in (3.0, 10.0, 30.0):
        A = np.array([[0.0, -1.0], [1.0, C]])
        gaps.append(max(abs(expm(-A * C * u)[0, 0] - math.exp(-u)) for u in (0.5, 1.0, 2.0)))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3


def test_sghmc_splitting_kick_scales_with_the_step():
    """E18: the library's splitting step, read off on the Gaussian, kicks by -h theta with variance 2 C h; its
    stationary covariance tends to I. The printed kick (no h: r - theta + N(0, 2C h)) does not."""
    from lessons.checks.integrators import derived_maps
    for eps in (0.1, 0.05):
        F, G = affine_step_maps(build_sampler("sghmc", "gaussian", eps=eps, C=1.0, integrator="splitting"), 2)
        F0, G0 = derived_maps("splitting", eps)
        assert np.allclose(F, F0, atol=1e-12) and np.allclose(G @ G.T, G0 @ G0.T, atol=1e-12)
    half = np.array([[1.0, 0.05], [0.0, 1.0]])
    relax = np.diag([1.0, math.exp(-0.05)])
    printed_kick = np.array([[1.0, 0.0], [-1.0, 1.0]])             # r -= grad U, no h
    Fp = half @ relax @ printed_kick @ relax @ half
    assert np.abs(np.linalg.eigvals(Fp)).max() > 1 or \
        np.abs(stationary(Fp, half @ relax @ np.array([[0.0], [math.sqrt(0.2)]])) - np.eye(2)).max() > 0.5
    assert np.abs(stationary(*derived_maps("splitting", 0.1)) - np.eye(2)).max() < 0.01


def test_lesson07_demo_shift_shows_in_the_ensemble_mean():
    """Lesson 7's demo (banana, V = 25, eps = 0.02, A = 1): the mean of xi over the chains sits at A + eps V / 2 =
    1.25 (its discretisation part measured at V = 0 and taken off), one chain's xi scatters by 1/sqrt(d) = 0.71,
    and SGHMC with C = 1 runs at a kinetic temperature near 1 + eps V / 2 = 1.25."""
    kw = dict(burn=3000, thin=2, seed=2, keep_aux=True)
    noisy = run(build_sampler("sgnht", "banana", V=25.0, eps=0.02, A=1.0), 1500, 500, **kw)
    quiet = run(build_sampler("sgnht", "banana", eps=0.02, A=1.0), 1500, 500, **kw)
    (xi, se), (xi0, se0) = chain_mean_se(noisy.aux[:, :, 2]), chain_mean_se(quiet.aux[:, :, 2])
    assert abs(xi - xi0 - 0.25) < 4 * math.hypot(se, se0)
    assert noisy.aux[:, :, 2].std() == pytest.approx(1 / math.sqrt(2), rel=0.05)
    hot = run(build_sampler("sghmc", "banana", V=25.0, eps=0.02, C=1.0), 1500, 500, **kw)
    T, se_T = chain_mean_se((hot.aux ** 2).mean(axis=2))
    assert abs(T - 1.25) < 0.02 + 4 * se_T      # 0.02: the Euler scheme's own share at eps = 0.02
