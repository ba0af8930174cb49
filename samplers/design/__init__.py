"""Samplers designed in a file: (H, D, Q) written as YAML (docs/recipes.md), made into the engine's Recipe and a
Sampler that runs, is diagnosed and is checked like a named one.

    design = load_design("samplers/design/examples/relativistic-sghmc.yaml")   # a path, YAML text or a name
    recipe = design_recipe(design)                # Gamma by sympy, recipe.latex_sde(), recipe.latex_update()
    s = design_sampler(design, "double-well", eps=0.1)           # samplers.run.run(s, ...) as for any sampler
    report = check(design, "double-well")          # the Fokker-Planck residual at exp(-H); report.ok

or in one call: recipe_from_file(source, potential) and sampler_from_file(source, potential).

The file is read with YAML's safe loader and every expression with the whitelist parser (nothing is
evaluated); the state holds at most `max_state` variables (6) and each cell is bounded in size as a typed
cell in the lab is (MAX_CELL_TERMS). Every error is a DesignError (a RecipeError) naming the key or cell,
after its line and column when it comes from a file.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from samplers.design.build import Report, build_recipe, check, check_dim, design_sampler, design_spec
from samplers.design.schema import MAX_STATE, Design, check_design
from samplers.design.yamlfile import DesignError, Marked, read_yaml
from samplers.engine.recipe import Recipe
from samplers.sampler import Sampler
from samplers.targets.presets import get_potential

__all__ = ["Design", "DesignError", "MAX_STATE", "Report", "check", "design_recipe", "design_sampler",
           "design_spec", "example_names", "example_path", "load_design", "parse_design", "read_design",
           "design_from_dict", "recipe_from_dict", "recipe_from_file", "sampler_from_file"]

EXAMPLES = resources.files("samplers.design") / "examples"


def example_names() -> list[str]:
    """The shipped designs, by name (samplers/design/examples/<name>.yaml)."""
    return sorted(p.name[:-5] for p in EXAMPLES.iterdir() if p.name.endswith(".yaml"))


def example_path(name: str):
    if name not in example_names():
        raise DesignError(f"no shipped design '{name}' (the shipped ones: {', '.join(example_names())})")
    return EXAMPLES / f"{name}.yaml"


def parse_design(text: str, source: str = "<text>", name: str = "design", max_state: int = MAX_STATE) -> Design:
    """A design from YAML text; `name` unless the file names itself."""
    return _checked(text, source, name, max_state)


def read_design(path, max_state: int = MAX_STATE) -> Design:
    """A design from a file, named after the file unless it names itself."""
    try:
        text = Path(path).read_text(encoding="utf-8") if not hasattr(path, "read_text") else path.read_text("utf-8")
    except FileNotFoundError:
        raise DesignError(f"cannot read design file {path}: no such file (the shipped designs, found by name: "
                          f"{', '.join(example_names())})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DesignError(f"cannot read design file {path}: {getattr(err, 'strerror', None) or err}") from None
    stem = Path(str(path)).name.rsplit(".", 1)[0] or "design"
    return _checked(text, str(path), stem, max_state, located=Path(str(path)).name)


def design_from_dict(data: dict, name: str = "design", max_state: int = MAX_STATE) -> Design:
    """A design from plain data (what yaml.safe_load gives); errors name the key or cell, without a line."""
    if not isinstance(data, dict):
        raise DesignError("a design is a mapping of keys (aux, kinetic, D, Q, ...)")
    return _checked(Marked(data, {}, {}), "<dict>", name, max_state)


def load_design(source, max_state: int = MAX_STATE) -> Design:
    """A Design from a path (str or Path), the name of a shipped design, YAML text, a dict, or a Design."""
    if isinstance(source, Design):
        return source
    if isinstance(source, dict):
        return design_from_dict(source, max_state=max_state)
    if isinstance(source, str) and "\n" not in source and ":" not in source:     # YAML text has a key: a name
        if Path(source).exists() or source not in example_names():
            return read_design(source, max_state)
        return read_design(example_path(source), max_state)
    if isinstance(source, str):
        return parse_design(source, max_state=max_state)
    return read_design(source, max_state)


def design_recipe(design: Design, naive: bool = False, **constants) -> Recipe:
    """The design's Recipe at the file's constants, or at those given; naive drops the file's `naive` term."""
    return build_recipe(design, naive, **constants)


def recipe_from_file(source, potential=None, naive: bool = False, max_state: int = MAX_STATE,
                     **constants) -> Recipe:
    """load_design(source) as a Recipe, checked against the potential's dimension when one is given."""
    design = load_design(source, max_state)
    if potential is not None:
        check_dim(design, get_potential(potential) if isinstance(potential, str) else potential)
    return build_recipe(design, naive, **constants)


def recipe_from_dict(data: dict, potential=None, naive: bool = False, max_state: int = MAX_STATE,
                     **constants) -> Recipe:
    return recipe_from_file(design_from_dict(data, max_state=max_state), potential, naive, max_state, **constants)


def sampler_from_file(source, potential, V=None, batch=None, naive: bool = False, max_state: int = MAX_STATE,
                      **params) -> Sampler:
    """load_design(source) as a Sampler on the potential (see design_sampler)."""
    return design_sampler(load_design(source, max_state), potential, V, batch, naive, **params)


def _checked(text, source: str, name: str, max_state: int, located: str | None = None) -> Design:
    try:
        marked = text if isinstance(text, Marked) else read_yaml(text)
        design = check_design(marked, source, name, max_state)
        build_recipe(design)        # every cell parsed, Gamma derived, D and Q checked: errors now, not at a run
    except DesignError as err:
        raise (err.located(located) if located else err) from None
    return design
