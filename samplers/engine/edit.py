"""User-edited recipes: D and Q typed cell by cell, parsed by the whitelist parser.

Cells are expressions in the state variables (theta, r, xi, ... as the sampler names them)
and U, the potential's value (so a metric like 1.5*sqrt(abs(U + 0.5)) works, and Gamma
follows by the chain rule). Every error names the cell.
"""
from __future__ import annotations

import sympy
from sympy.printing.str import StrPrinter

from samplers.engine.recipe import Recipe
from samplers.engine.symbols import RecipeError
from samplers.targets.expr import ExpressionError, parse_expression


def cell_variables(recipe: Recipe) -> tuple[str, ...]:
    return tuple(str(s) for s in recipe.sym.z) + ("U",)


def parse_matrix(name: str, cells, recipe: Recipe) -> sympy.Matrix:
    """A matrix of typed cells for `recipe`'s state, with U turned back into U(theta)."""
    n = recipe.n
    if len(cells) != n or any(len(row) != n for row in cells):
        raise RecipeError(f"{name} must be {n}x{n}")
    variables = cell_variables(recipe)
    u_plain = sympy.Symbol("U", real=True)
    out = sympy.zeros(n, n)
    for i, row in enumerate(cells):
        for j, text in enumerate(row):
            text = str(text).strip() or "0"
            try:
                expr = parse_expression(text, variables, float_decimals=True)
            except ExpressionError as err:
                raise RecipeError(f"{name}[{recipe.sym.z[i]},{recipe.sym.z[j]}]: {err}", cells=[(name, i, j)]) from None
            out[i, j] = expr.subs(u_plain, recipe.sym.U)
    return out


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
    return Recipe(base.name + " (edited)", base.sym, base.kinetic, D, Q, blocks=base.blocks,
                  drop=base.drop if drop is None else drop, aux_box=base.aux_box, description=base.description)
