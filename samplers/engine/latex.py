"""A recipe in LaTeX: z, H, D, Q and Gamma, the SDE, and the update rule in the engine's order."""
from __future__ import annotations

import sympy


def matrices(recipe) -> dict:
    sym = recipe.sym
    if recipe.numeric:
        return dict(z=sympy.latex(sympy.Matrix(sym.z).T), H="U + " + sympy.latex(recipe.kinetic),
                    D=r"D(z)\ \text{(numeric)}", Q=r"Q(z)\ \text{(numeric)}",
                    Gamma=r"\Gamma(z)\ \text{(differences)}")
    H = sympy.Symbol("U") + sym.flatten(recipe.kinetic)
    show = lambda m: sympy.latex(m)  # noqa: E731
    return dict(z=sympy.latex(sympy.Matrix(sym.z).T), H=sympy.latex(H), D=show(recipe.D.sym),
                Q=show(recipe.Q.sym), Gamma=show(recipe.Gamma.sym.T))


def sde(recipe) -> str:
    if recipe.numeric:
        return r"dz = \left[-(D(z) + Q(z))\nabla H(z) + \Gamma(z)\right]dt + \sqrt{2D(z)}\,dW"
    sym = recipe.sym
    lines = []
    for i, fi in enumerate(recipe.drift_exprs()):
        dii = recipe.D.sym[i, i]
        noise = "" if dii == 0 else rf" + \sqrt{{2\,{sympy.latex(dii)}}}\, dW_{{{i + 1}}}"
        lines.append(rf"d{sympy.latex(sym.z[i])} &= \left({sympy.latex(fi)}\right) dt{noise}")
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
            zi = sympy.latex(sym.z[i])
            rhs = sympy.latex(sym.z[i] + eps * drift[i])
            if i in recipe.noisy:
                dii = sympy.latex(recipe.D.sym[i, i])
                rhs += rf" + \mathcal N\!\left(0,\ \epsilon\,(2\,{dii} - \epsilon \hat B_{{{zi}}})\right)"
            lines.append(rf"{zi} &\leftarrow {rhs}")
    note = ""
    if len(recipe.blocks) > 1:
        note = r"\\ &\text{(in this order, each line using the newest values)}"
    return r"\begin{aligned}" + r"\\ ".join(lines) + note + r"\end{aligned}"

