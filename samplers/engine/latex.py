"""A recipe in LaTeX: z, H, D, Q and Gamma, the SDE, and the update rule in the engine's order."""
from __future__ import annotations

import sympy
from sympy.printing.latex import LatexPrinter

FLOAT_DIGITS = 4


class _Printer(LatexPrinter):
    """sympy's LaTeX with floats to FLOAT_DIGITS significant digits: sqrt(1.5) computed from
    metric_D = 1.5 is 1.225 on screen, not 1.22474487139159."""

    def _print_Float(self, expr):
        return super()._print_Float(sympy.Float(expr, FLOAT_DIGITS))


def _latex(expr) -> str:
    return _Printer().doprint(expr)


def matrices(recipe) -> dict:
    sym = recipe.sym
    if recipe.numeric:
        return dict(z=_latex(sympy.Matrix(sym.z).T), H="U + " + _latex(recipe.kinetic),
                    D=r"D(z)\ \text{(numeric)}", Q=r"Q(z)\ \text{(numeric)}",
                    Gamma=r"\Gamma(z)\ \text{(differences)}")
    H = sympy.Symbol("U") + sym.flatten(recipe.kinetic)
    return dict(z=_latex(sympy.Matrix(sym.z).T), H=_latex(H), D=_latex(recipe.D.sym),
                Q=_latex(recipe.Q.sym), Gamma=_latex(recipe.Gamma.sym.T))


def sde(recipe) -> str:
    if recipe.numeric:
        return r"dz = \left[-(D(z) + Q(z))\nabla H(z) + \Gamma(z)\right]dt + \sqrt{2D(z)}\,dW"
    sym = recipe.sym
    lines = []
    for i, fi in enumerate(recipe.drift_exprs()):
        dii = recipe.D.sym[i, i]
        noise = "" if dii == 0 else rf" + \sqrt{{2\,{_latex(dii)}}}\, dW_{{{i + 1}}}"
        lines.append(rf"d{_latex(sym.z[i])} &= \left({_latex(fi)}\right) dt{noise}")
    return r"\begin{aligned}" + r"\\ ".join(lines).replace(r"\nabla\tilde{U}", r"\nabla U") \
        + r"\end{aligned}"


def update(recipe) -> str:
    if recipe.numeric:
        return (r"z \leftarrow z - \epsilon\left[(D + Q)\nabla\tilde H - \Gamma\right]"
                r" + \mathcal N\!\left(0, \epsilon(2D - \epsilon\hat B)\right)")
    sym, eps = recipe.sym, sympy.Symbol(r"\epsilon")
    drift = recipe.drift_exprs()
    lines = []
    for plan in recipe.block_plan:
        for i in plan["rows"]:
            zi = _latex(sym.z[i])
            rhs = _latex(sym.z[i] + eps * drift[i])
            if i in recipe.noisy:
                dii = _latex(recipe.D.sym[i, i])
                rhs += rf" + \mathcal N\!\left(0,\ \epsilon\,(2\,{dii} - \epsilon \hat B_{{{zi}}})\right)"
            lines.append(rf"{zi} &\leftarrow {rhs}")
    note = ""
    if len(recipe.blocks) > 1:
        note = r"\\ &\text{(in this order, each line using the newest values)}"
    return r"\begin{aligned}" + r"\\ ".join(lines) + note + r"\end{aligned}"

