import re

import numpy as np
import pytest
import sympy

from samplers.engine.edit import edited_recipe, matrix_cells
from samplers.engine.recipe import Recipe
from samplers.engine.stationarity import stationarity_residual
from samplers.engine.symbols import RecipeError, StateSymbols
from samplers.gradients import ExactGradient
from samplers.registry import REGISTRY, build_sampler, sampler_names
from samplers.targets.presets import get_potential


def hmc_like(D=None, Q=None, kinetic=None):
    sym = StateSymbols.make(1, ["r"])
    r = sym.aux[0]
    D = D if D is not None else sympy.diag(0, 1)
    Q = Q if Q is not None else sympy.Matrix([[0, -1], [1, 0]])
    return Recipe("t", sym, kinetic if kinetic is not None else r ** 2 / 2, D, Q), sym


def test_non_skew_q_names_the_entry():
    with pytest.raises(RecipeError, match=r"Q is not skew-symmetric: Q\[theta,r\] = -1 but Q\[r,theta\] = -1"):
        hmc_like(Q=sympy.Matrix([[0, -1], [-1, 0]]))


def test_nonzero_q_diagonal_is_not_skew():
    with pytest.raises(RecipeError, match=r"Q\[r,r\]"):
        hmc_like(Q=sympy.Matrix([[0, -1], [1, 2]]))


def test_asymmetric_d_names_the_entry():
    with pytest.raises(RecipeError, match=r"D is not symmetric: D\[theta,r\] = 1"):
        hmc_like(D=sympy.Matrix([[1, 1], [0, 1]]))


def test_negative_d_names_the_entry():
    with pytest.raises(RecipeError, match=r"D\[r,r\] = -2 < 0"):
        hmc_like(D=sympy.diag(0, -2))


def test_indefinite_d_gives_the_eigenvalue():
    with pytest.raises(RecipeError, match="eigenvalue"):
        hmc_like(D=sympy.Matrix([[1, 2], [2, 1]]))


def test_wrong_shape_and_non_finite_entries():
    with pytest.raises(RecipeError, match="must be 2x2"):
        hmc_like(D=sympy.eye(3))
    with pytest.raises(RecipeError, match="not finite"):
        hmc_like(D=sympy.diag(0, sympy.oo))


def test_gamma_is_derived_symbolically_with_the_chain_rule():
    sym = StateSymbols.make(1, [])
    rec = Recipe("sgrld", sym, 0, sympy.Matrix([[sympy.sqrt(sym.U + 2)]]), sympy.zeros(1, 1))
    # Gamma = d/dtheta sqrt(U + 2) = U'(theta) / (2 sqrt(U + 2))
    expected = sym.g[0] / (2 * sympy.sqrt(sym.u + 2))
    assert sympy.simplify(rec.Gamma.sym[0] - expected) == 0


def test_state_dependent_q_gives_gamma():
    sym = StateSymbols.make(1, ["r"])
    th, r = sym.theta[0], sym.aux[0]
    rec = Recipe("q", sym, r ** 2 / 2, sympy.zeros(2, 2), sympy.Matrix([[0, -th ** 2 - 1], [th ** 2 + 1, 0]]))
    # Gamma_r = d/dtheta Q[r, theta] = 2 theta; Gamma_theta = d/dr Q[theta, r] = 0
    assert list(rec.Gamma.sym) == [0, 2 * th]


def test_noise_covariance_must_stay_psd():
    rec, _ = hmc_like()
    z = np.zeros((3, 2))
    with pytest.raises(RecipeError, match="not positive semidefinite"):
        rec.step(z, np.random.default_rng(0), ExactGradient(get_potential("gaussian")), eps=0.5, bhat=10.0)


def test_latex_renders_sde_and_update():
    rec, _ = hmc_like()
    assert r"\sqrt{2\,1}" in rec.latex_sde() or r"\sqrt{2" in rec.latex_sde()
    up = rec.latex_update()
    assert r"\leftarrow" in up and r"\epsilon" in up and r"\mathcal N" in up
    m = rec.matrices_latex()
    assert set(m) == {"z", "H", "D", "Q", "Gamma"}


def test_naive_switch_changes_only_the_named_term():
    pot = get_potential("gaussian")
    s = build_sampler("sgrhmc", pot)
    naive = s.recipe.with_drop({"gamma"})
    z = np.array([[0.3, -0.2], [1.0, 0.5]])
    u, g = pot.U(z[:, :1]), pot.grad(z[:, :1])
    diff = s.recipe.drift(z, u, g) - naive.drift(z, u, g)
    np.testing.assert_allclose(diff, s.recipe.Gamma(z, u, g))
    with pytest.raises(RecipeError, match="can only drop"):
        s.recipe.with_drop({"everything"})


# -- Theorem 1, measured: the Fokker-Planck residual ----------------------------------
@pytest.mark.parametrize("potential", ["gaussian", "double-well", "banana"])
@pytest.mark.parametrize("name", [n for n in sampler_names() if REGISTRY[n].recipe is not None
                                  and REGISTRY[n].family != "simplex"])   # theirs: tests/test_simplex.py
def test_stationarity_residual(name, potential, make_sampler):
    s = make_sampler(name, potential, V=1.0)
    res = stationarity_residual(s.recipe, s.potential)
    if s.spec.naive:
        assert res.relative > 5e-3, f"{name} should visibly leave exp(-H): residual {res.relative:.2e}"
    else:
        assert res.relative < 1e-5, f"{name} is a recipe: residual {res.relative:.2e}"


def test_thermostat_erratum_settled_by_the_drift():
    """Errata E2: with Q_{r,xi} = r/d, only H with (d/2)(xi - A)^2 gives Eq. (15)'s dynamics
    (r' = -grad U - xi r, xi' = r.r/d - 1); the printed 1/(2d) gives another sampler."""
    d, A = 2, sympy.Integer(1)
    sym = StateSymbols.make(d, ["r_1", "r_2", "xi"])
    r, xi = sym.aux[:2], sym.aux[2]
    Q = sympy.zeros(5, 5)
    for i in range(d):
        Q[i, d + i], Q[d + i, i] = -1, 1
        Q[d + i, 4], Q[4, d + i] = r[i] / d, -r[i] / d
    D = sympy.diag(0, 0, A, A, 0)
    eq15 = [r[0], r[1], -sym.g[0] - xi * r[0], -sym.g[1] - xi * r[1], (r[0] ** 2 + r[1] ** 2) / d - 1]

    def drift(thermo):
        return Recipe("sgnht", sym, (r[0] ** 2 + r[1] ** 2) / 2 + thermo, D, Q).drift_exprs()

    right = drift(sympy.Rational(d, 2) * (xi - A) ** 2)
    wrong = drift((xi - A) ** 2 / (2 * d))
    assert all(sympy.simplify(a - b) == 0 for a, b in zip(right, eq15))
    assert any(sympy.simplify(a - b) != 0 for a, b in zip(wrong, eq15))


def test_sgrhmc_momentum_drift_has_algorithm_1s_signs():
    """Errata E1: the momentum row of gSGRHMC's recipe is Algorithm 1's
    -G^-1/2 grad U + grad(G^-1/2) - G^-1 r, not Eq. (17)'s -G^-1/2 grad U - grad(G^-1/2) + G^-1 r."""
    s = build_sampler("sgrhmc", get_potential("gaussian"), None)
    sym = s.recipe.sym
    f_r = sympy.lambdify([sym.u, *sym.g, *sym.aux], s.recipe.drift_exprs()[1], "numpy")
    rng = np.random.default_rng(0)
    u, g, r = rng.uniform(0, 4, 50), rng.normal(size=50), rng.normal(size=50)
    w = u + s.metric_C
    half, ginv = np.sqrt(1.5) * w ** 0.25, 1.5 * np.sqrt(w)          # G^-1/2 and G^-1
    gamma = np.sqrt(1.5) / 4 * w ** -0.75 * g                         # d(G^-1/2)/d theta
    np.testing.assert_allclose(f_r(u, g, r), -half * g + gamma - ginv * r, rtol=1e-12)
    assert np.abs(f_r(u, g, r) - (-half * g - gamma + ginv * r)).max() > 1.0   # the printed Eq. (17)


def test_default_metric_constant_keeps_u_plus_c_at_least_one_half():
    """Errata E3: G^-1 = 1.5 sqrt|U + C| (Supplement F.1) with the paper's C = 0.5 makes U + C change sign on
    the double well (min U = -1), where Gamma ~ |U + C|^-1/2 (SGRLD) or |U + C|^-3/4 (SGRHMC) is singular.
    The default C = 0.5 - min U is the paper's 0.5 when min U = 0 and keeps U + C >= 0.5 everywhere."""
    theta = np.linspace(-3, 3, 6001)[:, None]
    for potential, c in (("gaussian", 0.5), ("banana", 0.5), ("double-well", 1.5)):
        pot = get_potential(potential)
        for name in ("sgrld", "sgrhmc"):
            assert build_sampler(name, pot, None).metric_C == c
        if pot.dim == 1:
            assert (pot.U(theta) + c).min() >= 0.5 - 1e-9
    u = get_potential("double-well").U(theta)
    assert (u + 0.5).min() < 0 < (u + 0.5).max()       # the paper's C = 0.5 crosses zero near the modes


def test_residual_catches_a_dropped_gamma_for_state_dependent_diffusion():
    """Theorem 1's Gamma is not optional: SGRLD without it leaves the target."""
    pot = get_potential("double-well")
    s = build_sampler("sgrld", pot)
    assert stationarity_residual(s.recipe, pot).relative < 1e-5
    assert stationarity_residual(s.recipe.with_drop({"gamma"}), pot).relative > 1e-2


def test_residual_field_on_a_grid():
    pot = get_potential("gaussian")
    s = build_sampler("sghmc-naive", pot, C=0.5)
    res = stationarity_residual(s.recipe, pot, n_grid=51)
    assert res.grid_field().shape == (51, 51)
    assert res.names == ["theta", "r"]


def test_numeric_d_and_q_take_gamma_by_differences():
    """The same state-dependent D given as sympy and as a function: equal steps, zero residual."""
    pot = get_potential("double-well")
    sym = StateSymbols.make(1, [])
    th = sym.theta[0]
    symbolic = Recipe("s", sym, 0, sympy.Matrix([[1 + th ** 2]]), sympy.zeros(1, 1))
    numeric = Recipe("n", sym, 0, lambda z: (1 + z[:, :1, None] ** 2), np.zeros((1, 1)))
    z = np.linspace(-2, 2, 9)[:, None]
    np.testing.assert_allclose(numeric.Gamma(z, None, None), 2 * z, atol=1e-8)
    oracle = ExactGradient(pot)
    a = symbolic.step(z, np.random.default_rng(0), oracle, 0.01)
    b = numeric.step(z, np.random.default_rng(0), oracle, 0.01)
    np.testing.assert_allclose(a, b, atol=1e-9)
    assert stationarity_residual(numeric, pot).relative < 1e-5
    assert stationarity_residual(numeric.with_drop({"gamma"}), pot).relative > 1e-2
    assert "numeric" in numeric.matrices_latex()["D"]


def test_numeric_q_must_be_skew():
    sym = StateSymbols.make(1, ["r"])
    with pytest.raises(RecipeError, match=r"Q is not skew-symmetric: Q\[theta,r\]"):
        Recipe("n", sym, sym.aux[0] ** 2 / 2, np.zeros((2, 2)), lambda z: np.array([[0.0, 1.0], [1.0, 0.0]]))


def test_noise_correction_can_be_dropped():
    rec, _ = hmc_like()
    pot = get_potential("gaussian")
    z = np.zeros((4, 2))
    oracle = ExactGradient(pot)
    kept = rec.step(z, np.random.default_rng(0), oracle, eps=0.1, bhat=1.0)
    dropped = rec.with_drop({"noise_correction"}).step(z, np.random.default_rng(0), oracle, eps=0.1, bhat=1.0)
    plain = rec.step(z, np.random.default_rng(0), oracle, eps=0.1, bhat=0.0)
    np.testing.assert_allclose(dropped, plain)
    assert not np.allclose(kept, plain)


# -- D and Q typed cell by cell (samplers/engine/edit.py) ------------------------------------
def _big_fractions(latex: str) -> list[str]:
    """\\frac{61237 ...}{50000}: a typed decimal shown as the rational it was read as."""
    return re.findall(r"\\frac\{-?\d{4,}", latex)


@pytest.mark.parametrize("pot_name", ["double-well", "gaussian", "expr:x^4 - 2*x^2 + 0.3*x"])
def test_cells_typed_back_unchanged_give_the_registered_recipe(pot_name):
    pot = get_potential(pot_name)
    base = build_sampler("sgrhmc", pot).recipe
    D, Q = matrix_cells(base._raw[0]), matrix_cells(base._raw[1])
    edited = edited_recipe(base, D, Q, base.drop)
    z = np.column_stack([np.linspace(-1.5, 1.5, 7), np.linspace(-2, 2, 7)])
    u, g = pot.U(z[:, :1]), pot.grad(z[:, :1])
    np.testing.assert_allclose(edited.Gamma(z, u, g), base.Gamma(z, u, g), rtol=1e-14, atol=0)
    np.testing.assert_allclose(edited.drift(z, u, g), base.drift(z, u, g), rtol=1e-14, atol=0)
    assert stationarity_residual(edited, pot).relative == pytest.approx(
        stationarity_residual(base, pot).relative, rel=1e-9)
    shown = edited.latex_sde() + edited.matrices_latex()["Gamma"] + edited.latex_update()
    assert not _big_fractions(shown), shown
    assert edited.latex_sde() == base.latex_sde()


def test_cells_print_a_parameter_root_as_the_root():
    base = build_sampler("sgrhmc", get_potential("double-well")).recipe
    assert matrix_cells(base._raw[1])[0][1] == "-sqrt(1.5)*abs(U + 1.5)**(1/4)"
    assert matrix_cells(base._raw[0])[1][1] == "1.5*sqrt(abs(U + 1.5))"
    assert matrix_cells(build_sampler("sghmc", get_potential("gaussian")).recipe._raw[0])[1][1] == "1"


def test_typed_decimals_stay_decimals_in_the_math():
    """A cell typed as 1.22474 (sqrt(1.5) to six digits) shows 1.225, not 61237/50000."""
    base = build_sampler("sgrhmc", get_potential("double-well")).recipe
    D = matrix_cells(base._raw[0])
    Q = [["0", "-1.22474*abs(U + 1.5)**(1/4)"], ["1.22474*abs(U + 1.5)**(1/4)", "0"]]
    edited = edited_recipe(base, D, Q, base.drop)
    shown = edited.latex_sde() + edited.matrices_latex()["Gamma"] + edited.latex_update()
    assert not _big_fractions(shown), shown
    assert "1.225" in edited.latex_sde() and "0.3062" in edited.matrices_latex()["Gamma"]
    assert "1.22474487" not in base.latex_sde()      # floats to four significant digits


def test_float_decimals_parse_to_the_double_the_numerics_use():
    from samplers.targets.expr import parse_expression
    e = parse_expression("1.22474*U + 2.0", ("U",), float_decimals=True)
    assert sympy.Float(1.22474) in e.atoms(sympy.Float) and sympy.Integer(2) in e.atoms(sympy.Integer)
    assert parse_expression("1.22474*U", ("U",)).atoms(sympy.Rational) >= {sympy.Rational(61237, 50000)}


# -- typed cells cannot make a shared server hang (issue 16) --------------------------------------
def _sghmc_2d():
    """sghmc on a 2-D target: z = (theta_1, theta_2, r_1, r_2), as the lab edits it."""
    base = build_sampler("sghmc", get_potential("banana")).recipe
    return base, matrix_cells(base._raw[0]), matrix_cells(base._raw[1])


def _build_timed(base, D, Q):
    """edited_recipe's outcome (the recipe or its RecipeError) and its CPU time (a busy machine does not add to
    it: the refusal is decided before any expansion, which took 26 s to forever)."""
    import time
    start = time.process_time()
    try:
        out = edited_recipe(base, D, Q, base.drop)
    except RecipeError as err:
        out = err
    return out, time.process_time() - start


SUM6 = "(theta_1+theta_2+r_1+r_2+U+2)"


@pytest.mark.parametrize("cell, limit", [
    (SUM6 + "^16", "exponent at most 7 for a sum of 6 terms"),      # 26-158 s, then a RecursionError
    (SUM6 + "^64", "exponent at most 7 for a sum of 6 terms"),      # never finished
    ("1/" + SUM6 + "^12", "exponent at most 7 for a sum of 6 terms"),
    ("(((theta_1+r_1)^2+r_2)^2+U)^2+(((theta_1+r_1)^2+r_2)^2+U)^4", "exponent at most 3 for a sum of 11 terms"),
    ("*".join(SUM6.replace("2)", f"{k})") for k in range(2, 10)), "multiply fewer sums together"),
])
def test_a_cell_too_large_multiplied_out_is_refused_at_once(cell, limit):
    base, D, Q = _sghmc_2d()
    D[2][2] = cell
    err, seconds = _build_timed(base, D, Q)
    assert isinstance(err, RecipeError) and err.cells == (("D", 2, 2),)
    assert str(err).startswith("D[r_1,r_1]: too large multiplied out") and limit in str(err), str(err)
    assert seconds < 1.0


def test_a_cell_within_the_limit_still_builds():
    base, D, Q = _sghmc_2d()
    D[2][2] = SUM6 + "^6"           # 462 terms multiplied out
    rec, seconds = _build_timed(base, D, Q)
    assert isinstance(rec, Recipe) and seconds < 5.0


def _nest(functions, inner, depth):
    for k in range(depth):
        inner = f"{functions[k % len(functions)]}({inner})"
    return inner


# cells at the parser's limits (depth 40, 400 characters or parts), every one of sghmc's 16 typed alike
AT_THE_LIMITS = {
    "functions": _nest(["sin", "cos", "tanh", "exp"], "theta_1+theta_2*r_1-U", 38),
    "roots": _nest(["sqrt", "abs"], "theta_1+r_2", 38),
    "fractions": "(" * 19 + "theta_1+1" + ")^-1+r_1" * 19,
    "powers": "(" * 19 + "theta_1" + ")^64" * 19,
    "largest power": SUM6 + "^7",
    "power in exp": "exp(" + SUM6 + "^7)",
    "root of a power": "sqrt(" + SUM6 + "^4)^3",
    "mixed": "+".join(["sin(theta_1*r_1)^64", "cos(U)^64/(1+r_2^2)", "tanh(theta_2-U)^63", "abs(r_1-r_2)^(64)",
                       "exp(-U^2)*log(1+theta_1^2)"] * 3),
}


@pytest.mark.parametrize("where", ["diagonal", "everywhere"])
@pytest.mark.parametrize("case", sorted(AT_THE_LIMITS))
def test_cells_at_the_parsers_limits_build_in_well_under_5_s(case, where):
    """D symmetric, Q skew and D's diagonal an abs(): every check passes or fails only at the last one, PSD."""
    base, _, _ = _sghmc_2d()
    cell = AT_THE_LIMITS[case]
    D = [[f"abs({cell})" if i == j else cell if where == "everywhere" else "0" for j in range(4)] for i in range(4)]
    Q = [[("0" if i == j else cell if i < j else f"-({cell})") if where == "everywhere" else "0" for j in range(4)]
         for i in range(4)]
    out, seconds = _build_timed(base, D, Q)
    assert isinstance(out, Recipe) or "positive semidefinite" in str(out), str(out)
    assert seconds < 5.0, f"{case}: {seconds:.1f} s"


def test_symmetry_is_not_asked_of_simplify():
    """sympy.simplify compared these two for over 5 minutes."""
    base, D, Q = _sghmc_2d()
    D[2][3], D[3][2] = "sin(theta_1+r_1+r_2+U)^20", "cos(theta_2)^20"
    err, seconds = _build_timed(base, D, Q)
    assert isinstance(err, RecipeError) and err.cells == (("D", 2, 3), ("D", 3, 2))
    assert str(err).startswith("D is not symmetric: D[r_1,r_2] = sin(")
    assert seconds < 5.0


@pytest.mark.parametrize("a, b", [
    ("theta_1*(r_1+1)", "theta_1*r_1+theta_1"),                       # equal multiplied out
    ("sin(theta_1+r_1)^2", "1-cos(r_1+theta_1)^2"),                   # equal at every probe point
])
def test_symmetric_cells_typed_differently_are_accepted(a, b):
    base, D, Q = _sghmc_2d()
    D[0][0] = D[1][1] = "10"
    D[0][1], D[1][0] = f"0.01*{a}", f"0.01*({b})"
    assert isinstance(_build_timed(base, D, Q)[0], Recipe)


def test_a_derivation_out_of_stack_names_the_cell():
    """Python compiles the drift, and sympy differentiates, by recursion: with little stack left (a server's
    thread) a cell that parses can still exhaust it. The outcome is a RecipeError naming the cell, never a
    RecursionError (which escaped to the server, and the edit silently did nothing)."""
    import inspect
    import sys
    base, D, Q = _sghmc_2d()
    D[2][2] = "(" * 19 + "theta_1+1" + ")^-1+r_1" * 19
    depth, limit = len(inspect.stack()), sys.getrecursionlimit()
    outcomes = []
    for spare in range(100, 400, 10):
        sys.setrecursionlimit(depth + spare)
        try:
            outcomes.append(edited_recipe(base, D, Q))
        except RecipeError as err:
            outcomes.append(err)
        finally:
            sys.setrecursionlimit(limit)
    errors = [o for o in outcomes if isinstance(o, RecipeError)]
    assert any("nested too deeply" in str(e) for e in errors)
    assert all(e.cells == (("D", 2, 2),) for e in errors), [str(e) for e in errors]


@pytest.mark.parametrize("cell, message", [
    ("(theta_1-theta_1)^-1", "D[r_1,r_1]: undefined (division by zero or a pole)"),     # was 'D[2,2] = zoo'
    ("sin(1/(r_2-r_2))", "D[r_1,r_1]: undefined (division by zero or a pole)"),
])
def test_a_cell_undefined_once_evaluated_is_named_in_words(cell, message):
    base, D, Q = _sghmc_2d()
    D[2][2] = cell
    err, _ = _build_timed(base, D, Q)
    assert isinstance(err, RecipeError) and str(err) == message and err.cells == (("D", 2, 2),)


@pytest.mark.parametrize("matrix, i, j, cell, partner", [
    ("D", 2, 2, "(-theta_1^2)^0.5", None),             # was 1.0*I*Abs(theta_1), "exact", then a casting error
    ("D", 3, 3, "1 + sqrt(-1 - theta_1^2)", None),
    ("D", 3, 3, "log(-1 - r_1^2)", None),
    ("Q", 0, 2, "-(-theta_1^2)^0.5", "(-theta_1^2)^0.5"),       # skew-symmetric, and complex
])
def test_a_complex_valued_cell_is_refused_with_the_cell_named(matrix, i, j, cell, partner):
    base, D, Q = _sghmc_2d()
    cells = D if matrix == "D" else Q
    cells[i][j] = cell
    if partner is not None:
        cells[j][i] = partner
    err, _ = _build_timed(base, D, Q)
    z = base.sym.z
    assert isinstance(err, RecipeError), err
    assert str(err).startswith(f"{matrix}[{z[i]},{z[j]}]: complex-valued") and err.cells == ((matrix, i, j),), str(err)


def test_an_asymmetry_of_long_cells_is_told_in_one_short_line():
    base, D, Q = _sghmc_2d()
    D[2][3], D[3][2] = ("+".join(f"{f}({k}*theta_1*r_1)" for k in range(2, 22)) for f in ("sin", "cos"))
    err, _ = _build_timed(base, D, Q)
    assert str(err).startswith("D is not symmetric: D[r_1,r_2] = ") and len(str(err)) < 300, str(err)


def test_a_typed_cell_is_shown_as_a_formula():
    """The parser keeps (theta_1^2/theta_1^2)^-3 unevaluated, and sympy's LaTeX printer recursed on it without end."""
    base, D, Q = _sghmc_2d()
    D[2][2] = "(theta_1^2/theta_1^2)^-3"
    rec = edited_recipe(base, D, Q, base.drop)
    assert rec.matrices_latex()["D"] and rec.latex_sde() and rec.latex_update()
