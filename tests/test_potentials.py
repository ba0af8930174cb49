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


# Issue 25, "Powers of products": a plain Gaussian typed with a power of a product was refused ("the gradient of U
# is not finite at (-7.5, 1)"), and so was chi-feng/mcmc-demo's banana typed as main/MCMC.js writes it: the
# bivariate normal of mean (0, 4) and covariance [[1, 0.5], [0.5, 1]] (precision (4/3)[[1, -0.5], [-0.5, 1]]) at
# y0 = x[0]/a, y1 = x[1]*a + a*b*(x[0]*x[0] + a*a), a = 2, b = 0.2. Both maps have Jacobian 1, so
# Z = 2 pi sqrt(det cov) = 2 pi sqrt(3/4) for the banana and sqrt(4 pi) sqrt(pi/9) for the Gaussian.
BANANA_MCMC_DEMO = ("(2/3)*((x/2)^2 - (x/2)*(2*y + 2*0.2*(x*x + 2*2) - 4) + (2*y + 2*0.2*(x*x + 2*2) - 4)^2)")


@pytest.mark.parametrize("text, log_z", [("(x/2)^2 + (3*(y-1))^2", np.log(2 * np.pi / 3)),
                                         (BANANA_MCMC_DEMO, np.log(2 * np.pi * np.sqrt(0.75)))])
def test_powers_of_products_are_accepted_with_finite_gradients(text, log_z):
    pot = get_potential("expr:" + text)
    assert pot.log_z == pytest.approx(log_z, abs=1e-6)
    rng = np.random.default_rng(3)
    lo, hi = np.array(pot.box).T
    pts = lo + (hi - lo) * rng.random((50, 2))
    pts[:10, 0] = 0.0                                     # where sympy's rule gave 0/0
    g = pot.grad(pts)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, fd_grad(pot.U, pts), rtol=1e-5, atol=1e-6 * np.abs(g).max())


@pytest.mark.parametrize("text, where, smoothing", [
    ("sqrt(x^2 + y^2)", "x = 0, y = 0", "sqrt(x^2 + y^2 + 1e-6)"),                 # the kink at r = 0
    ("(sqrt(x^2 + y^2) - 2.6)^2/0.033", "x = 0, y = 0", "sqrt(x^2 + y^2 + 1e-6)"),  # mcmc-demo's donut, unsmoothed
    ("x^2/2 + (x^2)^(1/3)", "x = 0", "(x^2 + 1e-6)^(1/3)"),
])
def test_a_kink_is_named_with_the_smoothing_that_fixes_it(text, where, smoothing):
    with pytest.raises(PotentialError) as err:
        get_potential("expr:" + text)
    assert f"not differentiable at {where}" in str(err.value) and f"e.g. {smoothing}" in str(err.value)
    fixed = text.replace("sqrt(x^2 + y^2)", smoothing) if "sqrt" in text else text.replace("(x^2)", "(x^2 + 1e-6)")
    assert np.isfinite(get_potential("expr:" + fixed).log_z)
