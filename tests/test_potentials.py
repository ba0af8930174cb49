import numpy as np
import pytest
from conftest import fd_grad
from scipy import stats

from samplers.targets.potential import Potential, PotentialError
from samplers.targets.presets import get_potential, preset_names

PRESETS = preset_names()


@pytest.mark.parametrize("name", PRESETS)
def test_gradient_matches_finite_differences(name):
    pot = get_potential(name)
    rng = np.random.default_rng(1)
    lo = np.array([b[0] for b in pot.box] + [pot.box[0][0]] * (pot.dim - len(pot.box)))
    hi = np.array([b[1] for b in pot.box] + [pot.box[0][1]] * (pot.dim - len(pot.box)))
    theta = lo + (hi - lo) * rng.random((20, pot.dim)) * 0.8 + 0.1 * (hi - lo)
    g = pot.grad(theta)
    fd = fd_grad(pot.U, theta)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5 * np.abs(g).max())


@pytest.mark.parametrize("name", [n for n in PRESETS if get_potential(n).dim <= 2])
def test_density_is_normalised(name):
    pot = get_potential(name)
    axes, dens = pot.grid(401)
    mass = np.trapezoid(dens, axes[0]) if pot.dim == 1 else np.trapezoid(np.trapezoid(dens, axes[1], axis=1), axes[0])
    assert mass == pytest.approx(1.0, abs=2e-3)


def test_gaussian_density_matches_scipy():
    pot = get_potential("gaussian")
    x = np.linspace(-4, 4, 41)
    np.testing.assert_allclose(pot.density_xy(x), stats.norm.pdf(x), rtol=1e-12)


def test_correlated_gaussian_matches_scipy():
    pot = get_potential("correlated-gaussian", rho=0.7)
    law = stats.multivariate_normal([0, 0], [[1, 0.7], [0.7, 1]])
    pts = np.random.default_rng(0).normal(size=(50, 2))
    np.testing.assert_allclose(pot.density(pts), law.pdf(pts), rtol=1e-10)
    np.testing.assert_allclose(pot.marginals[1](pts[:, 0]), stats.norm.pdf(pts[:, 0]), rtol=1e-12)


def test_mixture_matches_scipy():
    from samplers.targets.presets import MIXTURE_MEANS, MIXTURE_SD, MIXTURE_WEIGHTS
    pot = get_potential("mixture")
    pts = np.random.default_rng(0).uniform(-4, 4, size=(50, 2))
    ref = sum(w * stats.multivariate_normal(m, MIXTURE_SD ** 2 * np.eye(2)).pdf(pts)
              for w, m in zip(MIXTURE_WEIGHTS, MIXTURE_MEANS))
    np.testing.assert_allclose(pot.density(pts), ref, rtol=1e-10)


def test_gaussian_100d_matches_scipy():
    pot = get_potential("gaussian-100d")
    cov = np.ones((100, 100)) + 4 * np.eye(100)
    law = stats.multivariate_normal(np.zeros(100), cov)
    pts = law.rvs(size=5, random_state=1)
    np.testing.assert_allclose(pot.log_density(pts), law.logpdf(pts), rtol=1e-10)
    np.testing.assert_allclose(pot.marginals[3](1.0), stats.norm(0, np.sqrt(5)).pdf(1.0))


def test_grid_marginal_of_2d_matches_closed_form():
    # the grid route (used for banana) against the correlated Gaussian's exact marginal
    pot = get_potential("correlated-gaussian", rho=0.5)
    x = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(pot._grid_marginal(0)(x), stats.norm.pdf(x), atol=1e-6)


def test_double_well_constant_matches_quadrature():
    from scipy.integrate import quad
    z, _ = quad(lambda t: np.exp(-(t ** 4 - 2 * t ** 2)), -np.inf, np.inf)
    assert get_potential("double-well").log_z == pytest.approx(np.log(z), rel=1e-9)


def test_typed_potential_and_gradient():
    pot = get_potential("expr:x^4 - 2*x^2")
    assert pot.dim == 1
    t = np.linspace(-2, 2, 9)[:, None]
    np.testing.assert_allclose(pot.U(t), t[:, 0] ** 4 - 2 * t[:, 0] ** 2)
    np.testing.assert_allclose(pot.grad(t), 4 * t ** 3 - 4 * t)
    assert pot.log_z == pytest.approx(get_potential("double-well").log_z, rel=1e-6)
    pot2 = get_potential("expr:(x^2 + y^2)/2 + 0.5*x*y")
    assert pot2.dim == 2
    pts = np.random.default_rng(0).normal(size=(10, 2))
    np.testing.assert_allclose(pot2.grad(pts), fd_grad(pot2.U, pts), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("text, message", [
    ("x", "does not decay"),                 # not bounded below
    ("-x^2", "does not decay"),
    ("log(x)", "not finite"),
    ("exp(exp(x^2))", "not finite"),         # overflows inside the box
    ("x^2 +", "invalid expression"),
    ("__import__('os')", "invalid expression"),
])
def test_bad_typed_potentials_give_clear_errors(text, message):
    with pytest.raises(PotentialError, match=message) as err:
        get_potential("expr:" + text)
    # the user's own terms only: no grid, box or density ratio of the check that found it
    assert not any(word in str(err.value) for word in ("box", "peak", "((")), str(err.value)


def test_unknown_preset():
    with pytest.raises(PotentialError, match="unknown potential"):
        get_potential("nope")


def test_building_a_potential_evaluates_nothing_until_its_law_is_asked_for():
    calls = []

    def U(theta):
        calls.append(len(theta))
        return 0.5 * theta[:, 0] ** 2

    pot = Potential("lazy", 1, U, lambda t: t.copy(), ((-8.0, 8.0),))
    assert calls == []
    assert pot.log_z == pytest.approx(0.5 * np.log(2 * np.pi), rel=1e-6) and calls


@pytest.mark.parametrize("text, box", [("x^4 - 2*x^2", ((-2.5, 2.5),)), ("(x-3)^2", ((-1.0, 7.0),)),
                                       ("x^2/2", ((-5.0, 5.0),))])
def test_a_typed_potential_is_drawn_where_its_mass_is(text, box):
    pot = get_potential("expr:" + text)
    assert pot.box == box
    (xs,), dens = pot.grid(2001)
    assert dens[0] < 1e-4 * dens.max() and dens[-1] < 1e-4 * dens.max()    # nothing of the mass cut off


@pytest.mark.parametrize("text", ["tan(x) + x^2", "tan(x*y) + x^2 + y^2"])
def test_a_typed_potential_unbounded_below_between_grid_points_is_refused(text):
    with pytest.raises(PotentialError, match="unbounded below near"):
        get_potential("expr:" + text)
