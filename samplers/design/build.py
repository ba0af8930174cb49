"""A checked design made into the engine's objects: its Recipe (cells through the engine's cell parser, Gamma
and the update by the engine), its SamplerSpec and Sampler, and the report `check` prints."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from samplers.cache import BoundedCache
from samplers.design.schema import Design
from samplers.design.yamlfile import DesignError
from samplers.engine.edit import parse_cell
from samplers.engine.recipe import Recipe
from samplers.engine.stationarity import Residual, stationarity_residual
from samplers.engine.symbols import RecipeError, StateSymbols
from samplers.gradients import make_oracle
from samplers.sampler import STANDARD, Param, Sampler, SamplerSpec, coerce_params
from samplers.targets.presets import get_potential

CACHE_SIZE = 8          # recipes kept per design, by parameter values: a lab flips between a few
INIT_CANDIDATES = 256   # auxiliary start values drawn per chain, one kept in proportion to exp(-beta K)


def _value(x: float):
    """A constant as the cells see it: 2 stays the integer 2, so c**2 prints as it was typed."""
    return sympy.Integer(int(x)) if float(x).is_integer() and abs(x) < 2 ** 53 else sympy.Float(x)


def drop_of(design: Design, naive: bool) -> frozenset:
    if not naive:
        return design.drop
    if design.naive is None:
        raise DesignError(f"design '{design.name}' names no naive variant (add naive: gamma to the file)")
    return design.drop | {design.naive}


def build_recipe(design: Design, naive: bool = False, **params) -> Recipe:
    """The design's Recipe at these constants (defaults: the file's params); naive drops its `naive` term."""
    unknown = set(params) - set(design.constants)
    if unknown:
        raise DesignError(f"design '{design.name}' has no constant {', '.join(sorted(unknown))} "
                          f"(its constants: {', '.join(design.constants) or 'none'})")
    values = {k: float(params.get(k, design.params[k])) for k in design.constants}
    drop = drop_of(design, naive)
    key = (tuple(sorted(values.items())), drop)
    recipes = design.cache.setdefault("recipes", BoundedCache(CACHE_SIZE))
    return recipes.get_or_make(key, lambda: _derive(design, values, drop))


def _derive(design: Design, values: dict, drop: frozenset) -> Recipe:
    sym = StateSymbols.make(design.dim, list(design.aux))
    names = design.state_names
    subs = {sympy.Symbol(k, real=True): _value(v) for k, v in values.items()}
    marked = design.marked

    def cell(key, text, label, variables, ref=None):
        try:
            return parse_cell(text, variables, sym.U, label, ref, subs)
        except RecipeError as err:
            raise marked.error(key, str(err), err.cells) from None

    kinetic = cell(("kinetic",), design.kinetic, "kinetic", tuple(names) + design.constants)
    variables = tuple(names) + ("U",) + design.constants
    mats = {m: sympy.Matrix([[cell((m, i, j), text, f"{m}[{names[i]},{names[j]}]", variables, (m, i, j))
                              for j, text in enumerate(row)] for i, row in enumerate(getattr(design, m))])
            for m in ("D", "Q")}
    blocks = [list(b) for b in design.blocks] if design.blocks else default_blocks(design.dim, design.n, mats["D"])
    try:
        return Recipe(design.name + (" (naive)" if drop - design.drop else ""), sym, kinetic, mats["D"], mats["Q"],
                      blocks=blocks, drop=drop, aux_box=list(design.box), description=design.description)
    except RecipeError as err:
        # an error at no one cell (an eigenvalue of D) is about the matrix its message starts with
        key = err.cells[0] if err.cells else (str(err)[0],) if str(err)[:2] in ("D ", "Q ") else ()
        raise marked.error(key, str(err), err.cells) from None
    except RecursionError:
        # as in the lab's editor: sympy differentiates, and Python compiles the drift, by recursion
        m, i, j = max(((m, i, j) for m in mats for i in range(design.n) for j in range(design.n)),
                      key=lambda c: sympy.count_ops(mats[c[0]][c[1], c[2]]))
        raise marked.error((m, i, j), f"{m}[{names[i]},{names[j]}]: nested too deeply to derive Γ from it",
                           [(m, i, j)]) from None


def default_blocks(dim: int, n: int, D) -> list[list[int]]:
    """The update order of a design whose file gives none: the auxiliary variables first, then theta with their
    new values, as every named Hamiltonian sampler steps (momentum and thermostat, then position). Plain explicit
    Euler, every variable from the old state, gains energy on every oscillation of a momentum (its step is not
    symplectic) and diverges on a steep target at steps the ordered update takes in its stride. A D that couples
    theta with an auxiliary variable keeps one block: the noise of coupled variables is drawn together, and
    blocks draw theirs apart."""
    if n == dim or any(D[i, j] != 0 for i in range(dim) for j in range(dim, n)):
        return [list(range(n))]
    return [list(range(dim, n)), list(range(dim))]


def order_text(design: Design, recipe: Recipe) -> str:
    """The update order a design steps with, and where it comes from, as `check` prints it."""
    names = design.state_names
    order = " -> ".join("{" + ", ".join(names[i] for i in b) + "}" for b in recipe.blocks)
    if design.blocks is not None:
        return order + (" (the file's blocks: plain explicit Euler)" if len(design.blocks) == 1 and design.aux
                        else " (the file's blocks)")
    if len(recipe.blocks) == 1:
        return order + (" (default: no auxiliary variables, one block)" if not design.aux else
                        " (default: one block, as D couples theta with an auxiliary variable)")
    return order + " (default: auxiliary variables first, then theta with their new values)"


def design_param(name: str, value) -> Param:
    """A design's parameter: a named sampler's of that name (eps > 0, ...), else a constant of its cells."""
    if name in STANDARD:
        return STANDARD[name].at(value)
    return Param(name, value, "a constant of the design's cells", type=int if isinstance(value, int) else float)


def design_spec(design: Design, naive: bool = False) -> SamplerSpec:
    """A SamplerSpec for the design (cached): its parameters are the file's params, constants among them."""
    specs = design.cache.setdefault("specs", {})
    if naive not in specs:
        drop_of(design, naive)      # refuse a naive variant the design does not name, before anything is built
        consts = design.constants
        specs[naive] = SamplerSpec(
            name=design.name + ("-naive" if naive else ""),
            title=design.name + (" (naive)" if naive else ""),
            source=f"design {design.source}" + (f", {design.naive} dropped" if naive else ""),
            doc=design.description or f"the design in {design.source}",
            params=tuple(design_param(k, v) for k, v in design.params.items()),
            layout=lambda d, p: {"aux": list(design.aux)},
            recipe=lambda s: build_recipe(design, naive, **{k: s.params[k] for k in consts}),
            init_aux=_init_aux if design.aux else None, corrected=design.name if naive else None, family="design")
    return specs[naive]


def design_sampler(design: Design, potential, V=None, batch=None, naive: bool = False, oracle=None,
                   **params) -> Sampler:
    """The design as a Sampler on a potential (a Potential or a preset/expr name): exact gradients, simulated
    noise of variance V, or minibatches of `batch` points, or the given oracle."""
    pot = get_potential(potential) if isinstance(potential, str) else potential
    check_dim(design, pot)
    return Sampler(design_spec(design, naive), pot, oracle or make_oracle(pot, V, batch), **params)


def check_dim(design: Design, potential) -> None:
    if potential.dim != design.dim:
        raise DesignError(f"design '{design.name}' is for {design.dim}-dimensional theta (D is {design.n}x{design.n} "
                          f"with aux {list(design.aux)}), potential '{potential.name}' is {potential.dim}-dimensional")


def _init_aux(s: Sampler, chains: int, rng) -> np.ndarray:
    """Auxiliary variables near their law exp(-beta K) on the design's box: candidates drawn uniformly, one per
    chain kept in proportion to its weight. K is taken at the potential's start, so a K that depends on theta
    starts only near its law; burn-in does the rest."""
    recipe, n_aux = s.recipe, len(s.aux_names)
    lo, hi = np.array(recipe.aux_box, float).reshape(n_aux, 2).T
    cand = lo + (hi - lo) * rng.random((chains, INIT_CANDIDATES, n_aux))
    start = np.zeros(s.dim) if s.potential.start is None else np.asarray(s.potential.start, float)
    z = np.concatenate([np.broadcast_to(start, (chains * INIT_CANDIDATES, s.dim)),
                        cand.reshape(-1, n_aux)], axis=1)
    k = sympy.lambdify([recipe.sym.z], recipe.sym.flatten(recipe.kinetic), "numpy")
    with np.errstate(all="ignore"):
        energy = np.broadcast_to(np.asarray(k(list(z.T)), float), (len(z),)).reshape(chains, INIT_CANDIDATES)
        energy = np.where(np.isfinite(energy), energy, np.inf)
        w = np.exp(-s.beta * (energy - energy.min(axis=1, keepdims=True)))
    w = np.nan_to_num(w)
    cdf = np.cumsum(w, axis=1)
    pick = np.minimum((cdf < rng.random((chains, 1)) * cdf[:, -1:]).sum(axis=1), INIT_CANDIDATES - 1)
    return cand[np.arange(chains), pick]


@dataclass
class Report:
    """What `python -m samplers check` prints: H, Gamma, the SDE and the update, the verdicts and the residual."""
    design: Design
    recipe: Recipe
    residual: Residual
    tol: float = 1e-4

    @property
    def ok(self) -> bool:
        return self.residual.ok(self.tol)

    @property
    def gamma(self) -> list:
        return [self.recipe.Gamma.sym[i] for i in range(self.recipe.n)]

    def lines(self) -> list[str]:
        r, mark = self.recipe, lambda ok: "✓" if ok else "✗"
        z = ", ".join(map(str, r.sym.z))
        dropped = f", dropping {', '.join(sorted(r.drop))}" if r.drop else ""
        h = sympy.Symbol("U") + r.sym.flatten(r.kinetic)
        return [
            f"design {self.design.name} ({self.design.source}){dropped}",
            f"z     = ({z})",
            f"H     = {sympy.sstr(h)}",
            f"Gamma = ({', '.join(sympy.sstr(g) for g in self.gamma)})" + (" (dropped)" if "gamma" in r.drop else ""),
            "D symmetric, positive semidefinite at 64 probe points: " + mark(True),
            "Q skew-symmetric: " + mark(True),
            f"Fokker-Planck residual at exp(-H): {self.residual.relative:.3g} relative (tolerance {self.tol:g}) "
            f"{mark(self.ok)}",
            f"update order: {order_text(self.design, r)}",
            "SDE (LaTeX):",
            "  " + r.latex_sde(),
            "update, Eq. (9) (LaTeX):",
            "  " + r.latex_update(),
            f"verdict: {mark(self.ok)} " + ("exp(-H) is stationary" if self.ok else
                                           "exp(-H) is not stationary: this sampler does not sample the target"),
        ]


def check(design: Design, potential, naive: bool = False, **params) -> Report:
    """The design's recipe (built: D symmetric PSD, Q skew, or DesignError) and its Fokker-Planck residual at
    exp(-H) on the potential's box times the auxiliary box."""
    pot = get_potential(potential) if isinstance(potential, str) else potential
    check_dim(design, pot)
    # every parameter is checked as a run would check it (eps > 0, ...), only the constants shape the recipe
    values = coerce_params(design_spec(design, naive), params)
    recipe = build_recipe(design, naive, **{k: values[k] for k in design.constants})
    return Report(design, recipe, stationarity_residual(recipe, pot))
