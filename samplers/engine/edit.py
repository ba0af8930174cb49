"""User-edited recipes: D and Q typed cell by cell, parsed by the whitelist parser.

Cells are expressions in the state variables (theta, r, xi, ... as the sampler names them)
and U, the potential's value (so a metric like 1.5*sqrt(abs(U + 0.5)) works, and Gamma
follows by the chain rule). Every error names the cell.

A cell's size when multiplied out is bounded (MAX_CELL_TERMS): (theta_1 + theta_2 + r_1 + r_2 + U + 2)**16 has
20,349 terms, and expanding it and its derivatives kept a core busy for minutes.
"""
from __future__ import annotations

import sympy
from sympy.printing.str import StrPrinter

from samplers.engine import validate
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import RecipeError
from samplers.targets.expr import ExpressionError, parse_expression

MAX_CELL_TERMS = 1000


def cell_variables(recipe: Recipe) -> tuple[str, ...]:
    return tuple(str(s) for s in recipe.sym.z) + ("U",)


def parse_matrix(name: str, cells, recipe: Recipe) -> sympy.Matrix:
    """A matrix of typed cells for `recipe`'s state, with U turned back into U(theta)."""
    n = recipe.n
    if len(cells) != n or any(len(row) != n for row in cells):
        raise RecipeError(f"{name} must be {n}x{n}")
    variables = cell_variables(recipe)
    out = sympy.zeros(n, n)
    for i, row in enumerate(cells):
        for j, text in enumerate(row):
            where = f"{name}[{recipe.sym.z[i]},{recipe.sym.z[j]}]"
            out[i, j] = parse_cell(text, variables, recipe.sym.U, where, (name, i, j))
    return out


def parse_cell(text, variables, U, where: str, cell=None, values=None) -> sympy.Expr:
    """One typed cell in `variables` (U among them turned into U(theta), the undefined function `U`),
    with named constants replaced by `values` ({Symbol: number}); the errors start with `where`."""
    text = str(text).strip() or "0"
    u_plain = sympy.Symbol("U", real=True)
    cells = [cell] if cell is not None else []
    try:
        # evaluated as sympy builds its own: the parser keeps forms that make sympy's LaTeX printer recurse
        # without end ((theta_1^2/theta_1^2)^-3), and that hide a power (exp(64*log(a + b)) is (a + b)^64)
        expr = parse_expression(text, variables, float_decimals=True).xreplace({u_plain: U, **(values or {})}).doit()
        if expr.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):     # 1/(theta_1 - theta_1), once evaluated
            raise ExpressionError("undefined (division by zero or a pole)")
        # (-theta_1^2)^0.5 is I*|theta_1|, sqrt(-1 - theta_1^2) is never real: the step's real arrays cannot hold
        # them (the run stopped at its first step with a casting error)
        if expr.has(sympy.I) or expr.is_extended_real is False:
            raise ExpressionError(f"complex-valued ({expr}): a cell must be real for every state")
        _check_growth(expr)
        return expr
    except ExpressionError as err:
        raise RecipeError(f"{where}: {err}", cells=cells) from None
    except RecursionError:
        raise RecipeError(f"{where}: nested too deeply", cells=cells) from None


def _check_growth(expr) -> None:
    terms = validate.expanded_terms(expr)
    if terms <= MAX_CELL_TERMS:
        return
    count = f"{terms:,.0f}" if terms < 1e9 else "more than a billion"
    message = f"too large multiplied out ({count} terms, at most {MAX_CELL_TERMS:,})"
    # the innermost power of a sum that grows too large alone (its base does not) is the one to lower
    for p in sympy.postorder_traversal(expr):
        if (p.is_Pow and p.base.is_Add and p.exp.is_Rational and validate.expanded_terms(p) > MAX_CELL_TERMS
                and validate.expanded_terms(p.base) <= MAX_CELL_TERMS):
            k = validate.growth(p.base)[0]
            n = max(m for m in range(1, 65) if validate.monomials(m, k) <= MAX_CELL_TERMS)
            raise ExpressionError(f"{message}: exponent at most {n} for a sum of {k:,.0f} terms")
    raise ExpressionError(f"{message}: multiply fewer sums together, or lower their exponents")


def _short_decimal(x: float) -> str | None:
    """x in at most six significant digits, if that is x exactly (as a double)."""
    text = format(x, ".6g")
    if float(text) != x:
        return None
    return text if "e" not in text else repr(x)


def float_cell_text(f: sympy.Float) -> str:
    """A recipe's float as cell text that parses back to the same float.

    A parameter (metric_D = 1.5) reaches a recipe as a float and its square root as
    1.22474487139159: that prints as sqrt(1.5), which the cell parser (decimals kept as floats)
    turns back into the same float, so a cell typed back unchanged is the registered recipe.
    """
    x = float(f)
    short = _short_decimal(x)
    if short is not None:
        return short
    if x > 0:
        square = format(x * x, ".6g")
        if "e" not in square and sympy.sqrt(sympy.Float(square)) == f:
            return f"sqrt({square})"
    return repr(x)


class _CellPrinter(StrPrinter):
    def _print_Float(self, expr):
        return float_cell_text(expr)


def matrix_cells(matrix: sympy.Matrix) -> list[list[str]]:
    """A recipe's matrix as editable text cells (U(theta) printed as U), each parsing back to its entry."""
    printer = _CellPrinter()

    def show(e):
        e = e.replace(lambda x: isinstance(x, sympy.core.function.AppliedUndef), lambda x: sympy.Symbol("U"))
        return printer.doprint(e).replace("Abs(", "abs(")
    return [[show(matrix[i, j]) for j in range(matrix.shape[1])] for i in range(matrix.shape[0])]


def edited_recipe(base: Recipe, D_cells, Q_cells, drop=None) -> Recipe:
    """The base recipe's H and update order with the user's D and Q (validated: symmetric PSD, skew)."""
    D = parse_matrix("D", D_cells, base)
    Q = parse_matrix("Q", Q_cells, base)
    try:
        return Recipe(base.name + " (edited)", base.sym, base.kinetic, D, Q, blocks=base.blocks,
                      drop=base.drop if drop is None else drop, aux_box=base.aux_box, description=base.description,
                      mirror=base.mirror)
    except RecursionError:
        # sympy differentiates, and Python compiles the drift, by recursion: a deep cell can exhaust the stack
        # (sooner in a server's thread). The base recipe builds, so the fault is in a typed cell: the largest.
        typed = {"D": D, "Q": Q}
        cells = [(name, i, j) for name in typed for i in range(base.n) for j in range(base.n)]
        name, i, j = max(cells, key=lambda c: sympy.count_ops(typed[c[0]][c[1], c[2]]))
        raise RecipeError(f"{name}[{base.sym.z[i]},{base.sym.z[j]}]: nested too deeply to derive Γ from it",
                          cells=[(name, i, j)]) from None
