"""The state of a recipe: symbols for z = (theta, aux), U and grad U, and the errors that name an entry."""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from samplers.errors import InputError

DROPPABLE = {"gamma": r"\Gamma", "friction": r"D\nabla H", "noise_correction": r"\epsilon\hat B"}


class RecipeError(InputError):
    """An invalid (H, D, Q): the message names the offending entry and value; `cells` lists the
    entries at fault as (matrix, i, j), so an editor can mark them without reading the message."""

    def __init__(self, message: str, cells: tuple = ()):
        super().__init__(message)
        self.cells = tuple(cells)


@dataclass
class StateSymbols:
    """Symbols for z = (theta, aux), the value of U and the components of grad U."""
    theta: list
    aux: list
    u: sympy.Symbol
    g: list
    U: sympy.Expr  # U(theta) as an undefined function, for the chain rule

    @property
    def z(self):
        return self.theta + self.aux

    @classmethod
    def make(cls, dim: int, aux_names: list[str]):
        theta = [sympy.Symbol("theta" if dim == 1 else f"theta_{i + 1}", real=True) for i in range(dim)]
        aux = [sympy.Symbol(a, real=True) for a in aux_names]
        u = sympy.Symbol("U", real=True)
        g = [sympy.Symbol(r"\nabla\tilde{U}" if dim == 1 else rf"\partial_{{{i + 1}}}\tilde{{U}}", real=True)
             for i in range(dim)]
        return cls(theta, aux, u, g, sympy.Function("U", real=True)(*theta))

    def flatten(self, expr):
        """Replace U(theta) and its first derivatives by the symbols u and g."""
        # xreplace, not subs: the same exact replacement, without subs' matching (a tenth of a second per typed cell)
        subs = {sympy.Derivative(self.U, t): gi for t, gi in zip(self.theta, self.g)}
        expr = expr.xreplace(subs).xreplace({self.U: self.u})
        if expr.has(sympy.Derivative) or expr.has(self.U.func):
            raise RecipeError("D and Q may depend on U but not on its gradient (Gamma would need the Hessian)")
        return expr


def show(e, limit: int = 100) -> str:
    """An entry for an error message: short decimals, abs() as typed, cut (a typed cell may be 400 characters)."""
    e = sympy.sympify(e)
    plain = all(q.q <= 1000 for q in e.atoms(sympy.Rational)) and not e.atoms(sympy.Float)
    text = sympy.sstr(e if plain else sympy.N(e, 6)).replace("Abs(", "abs(")
    return text if len(text) <= limit else text[:limit] + "…"
