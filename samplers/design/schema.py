"""A design file's keys checked one by one, into a `Design`: names, shapes, numbers. Nothing is parsed as an
expression here (build.py does that, through the engine's cell parser); every error names its key or cell."""
from __future__ import annotations

import builtins
import difflib
import keyword
import math
import re
from dataclasses import dataclass, field

import numpy as np

from samplers.design.yamlfile import Marked, short
from samplers.engine.symbols import DROPPABLE, StateSymbols
from samplers.sampler import COMMON

MAX_STATE = 6          # the lab's budget: Gamma, the compiled update and the residual stay well under 2 s
MAX_NAME = 24
# parameters of the sampler itself (the step, B-hat, and every sampler's beta and schedule); every other
# name under `params` is a constant the cells may use
SAMPLER_PARAMS = dict(eps=0.05, Bhat=0.0)
COMMON_NAMES = {p.name for p in COMMON}   # beta and the schedule
KEYS = ("name", "description", "aux", "kinetic", "D", "Q", "blocks", "naive", "drop", "box", "params")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
DESIGN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
THETA = re.compile(r"theta(_[0-9]+)?\Z")
# the compiled update is numpy code in which a state symbol is a local name: one called `sign` or `sqrt` would
# hide the function (d|r|/dr is sign(r)); the engine's own symbols (eps, bhat, beta) are arguments beside it
RESERVED = ({"U", "D", "Q", "H", "K", "Gamma", "bhat", "eps", "beta", "pi", "e", "E", "I"} | set(SAMPLER_PARAMS)
            | COMMON_NAMES | set(dir(np)) | set(dir(builtins)))


@dataclass(frozen=True, eq=False)
class Design:
    """A design file, checked: the state z = (theta, aux), K, D and Q as text cells, the update order, the terms
    dropped, the auxiliary box and the default parameters (the sampler's and the constants the cells use)."""
    name: str
    description: str
    dim: int
    aux: tuple
    kinetic: str
    D: tuple
    Q: tuple
    blocks: tuple | None
    naive: str | None
    drop: frozenset
    box: tuple
    params: dict
    constants: tuple
    source: str
    marked: Marked
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.dim + len(self.aux)

    @property
    def state_names(self) -> list[str]:
        return [str(v) for v in StateSymbols.make(self.dim, list(self.aux)).z]


def check_design(marked: Marked, source: str = "<text>", default_name: str = "design",
                 max_state: int = MAX_STATE) -> Design:
    """The keys of a read design file, checked in the order a reader would fix them."""
    data = marked.data
    for key in data:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (the keys: {', '.join(KEYS)})"
            raise marked.error((key,), f"unknown key '{short(key)}'{hint}", at_key=True)
    for key in ("D", "Q"):
        if key not in data:
            raise marked.error((), f"the design has no {key} (D and Q are required: matrices of expression cells)")
    name = _text(marked, "name", default_name, 40)
    if not DESIGN_NAME.match(name):
        raise marked.error(("name",), f"name: '{short(name)}' is not a name (letters, digits, '-', '_', '.')")
    description = _text(marked, "description", "", 500)
    aux = _names(marked, "aux")
    n = _size(marked, max_state)
    dim = n - len(aux)
    if dim < 1:
        raise marked.error(("aux",), f"aux names {len(aux)} variables but D is {n}x{n}: no room for theta "
                                     f"(the state is theta, then aux)")
    theta = [str(t) for t in StateSymbols.make(dim, []).theta]
    params, constants = _params(marked, set(aux))
    D, Q = (_cells(marked, key, theta + aux) for key in ("D", "Q"))
    kinetic = data.get("kinetic")
    if kinetic is None:
        if aux:
            raise marked.error((), "the design has no kinetic: K, the part of H = U(theta) + K over the auxiliary "
                                   "variables, is required when there are any")
        kinetic = "0"
    kinetic = _expression(marked, ("kinetic",), kinetic, "kinetic")
    drop = frozenset(_terms(marked, "drop"))
    naive = data.get("naive")
    if naive is not None:
        naive = _terms(marked, "naive", one=True)[0]
        if naive in drop:
            raise marked.error(("naive",), f"naive: the design already drops '{naive}'")
    return Design(name, description, dim, tuple(aux), kinetic, D, Q, _blocks(marked, theta + aux), naive, drop,
                  _box(marked, aux), params, tuple(constants), source, marked)


def _text(marked, key, default, limit) -> str:
    value = marked.data.get(key, default)
    if not isinstance(value, str) or len(value) > limit:
        raise marked.error((key,), f"{key} must be text of at most {limit} characters")
    return value.strip()


def check_name(marked, key: tuple, name, taken=()) -> str:
    """A variable or constant name: an identifier, not Python's, numpy's, the parser's or the recipe's."""
    label = ".".join(map(str, key))
    if not isinstance(name, str) or not NAME.match(name):
        why = " (names may not start with '_')" if isinstance(name, str) and name.startswith("_") else ""
        raise marked.error(key, f"{label}: '{short(name)}' is not a name: a letter, then letters, digits or "
                                f"'_'{why}")
    if len(name) > MAX_NAME:
        raise marked.error(key, f"{label}: '{short(name)}' is longer than {MAX_NAME} characters")
    if THETA.match(name):
        raise marked.error(key, f"{label}: '{name}' is the target's (theta in 1-D, theta_1, theta_2, ... in more)")
    if keyword.iskeyword(name) or name in RESERVED:
        raise marked.error(key, f"{label}: '{name}' is reserved (a Python, numpy or parser name, U, or a sampler "
                                f"parameter)")
    if name in taken:
        raise marked.error(key, f"{label}: '{name}' is already a name in this design")
    return name


def _names(marked, key) -> list[str]:
    value = marked.data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise marked.error((key,), f"{key} must be a list of names, e.g. [r] or [r, xi]")
    out = []
    for i, name in enumerate(value):
        out.append(check_name(marked, (key, i), name, out))
    return out


def _size(marked, max_state) -> int:
    """The state size, from D and Q: square, alike, at most max_state."""
    sizes = {}
    for key in ("D", "Q"):
        rows = marked.data[key]
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise marked.error((key,), f"{key} must be a list of rows, each a list of cells: "
                                       f'[["0", "0"], ["0", "1"]]')
        n = len(rows)
        if n > max_state:
            raise marked.error((key,), f"{key} is {n}x{n}: the state may have at most {max_state} variables")
        for i, row in enumerate(rows):
            if len(row) != n:
                raise marked.error((key, i), f"{key} is not square: it has {n} rows but row {i + 1} has "
                                             f"{len(row)} cells")
        sizes[key] = n
    if sizes["D"] != sizes["Q"]:
        raise marked.error(("Q",), f"D is {sizes['D']}x{sizes['D']} but Q is {sizes['Q']}x{sizes['Q']}")
    return sizes["D"]


def _expression(marked, key: tuple, value, label: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise marked.error(key, f"{label}: expected an expression (text such as \"r**2/2\" or a number), "
                                f"got {short(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise marked.error(key, f"{label}: {value} is not finite")
    return str(value)


def _cells(marked, key, names) -> tuple:
    return tuple(tuple(_expression(marked, (key, i, j), cell, f"{key}[{names[i]},{names[j]}]")
                       for j, cell in enumerate(row)) for i, row in enumerate(marked.data[key]))


def _number(marked, key, value, label) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise marked.error(key, f"{label} must be a finite number, got {short(value)}")
    if abs(value) > 1e12:
        raise marked.error(key, f"{label} must be at most 1e12 in size, got {value:g}")
    return float(value)


def _params(marked, taken) -> tuple[dict, list]:
    value = marked.data.get("params", {})
    if not isinstance(value, dict):
        raise marked.error(("params",), "params must be a mapping of names to numbers, e.g. {eps: 0.1, C: 1}")
    params, constants = dict(SAMPLER_PARAMS), []
    for name, v in value.items():
        key = ("params", name)
        if name not in SAMPLER_PARAMS and name not in COMMON_NAMES:
            constants.append(check_name(marked, key, name, taken))
        params[name] = _number(marked, key, v, f"params.{name}")
    return params, constants


def _terms(marked, key, one: bool = False) -> list[str]:
    value = marked.data.get(key, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or (one and len(values) != 1):
        raise marked.error((key,), f"{key} must be {'one of' if one else 'a list of'} {', '.join(DROPPABLE)}")
    for i, term in enumerate(values):
        if term not in DROPPABLE:
            where = (key,) if isinstance(value, str) else (key, i)
            raise marked.error(where, f"{key}: '{short(term)}' is not a term that can be dropped "
                                      f"({', '.join(DROPPABLE)})")
    return list(values)


EULER = "euler"        # `blocks: euler`: every variable in one block, plain explicit Euler, asked for by name


def _blocks(marked, names) -> tuple | None:
    """The file's update order: None when it gives none (the default order, `default_blocks`), one block of every
    variable for `blocks: euler`, else its blocks as state indices."""
    value = marked.data.get("blocks")
    if value is None:
        return None
    if value == EULER:
        return (tuple(range(len(names))),)
    if not isinstance(value, list) or not value:
        raise marked.error(("blocks",), f"blocks must be '{EULER}' (plain explicit Euler) or a list of blocks, "
                                        f"each a list of state names: "
                                        + f"{[[n] for n in names[::-1]]}".replace("'", ""))
    out, seen = [], set()
    for b, block in enumerate(value):
        block = [block] if isinstance(block, str) else block
        if not isinstance(block, list) or not block:
            raise marked.error(("blocks", b), f"blocks[{b}] must be a non-empty list of state names")
        for k, name in enumerate(block):
            where = ("blocks", b) if isinstance(value[b], str) else ("blocks", b, k)
            if name not in names:
                raise marked.error(where, f"blocks: '{short(name)}' is not a state variable "
                                          f"(z = ({', '.join(names)}))")
            if name in seen:
                raise marked.error(where, f"blocks: '{name}' is updated twice")
            seen.add(name)
        out.append(tuple(names.index(name) for name in block))
    missing = [name for name in names if name not in seen]
    if missing:
        raise marked.error(("blocks",), f"blocks must update every state variable once: missing {', '.join(missing)}")
    return tuple(out)


def _box(marked, aux) -> tuple:
    value = marked.data.get("box", {})
    if not isinstance(value, dict):
        raise marked.error(("box",), "box must map auxiliary names to [low, high], e.g. {r: [-4, 4]}")
    for name in value:
        if name not in aux:
            raise marked.error(("box", name), f"box: '{short(name)}' is not an auxiliary variable "
                                              f"(aux: {', '.join(aux) or 'none'})", at_key=True)
    out = []
    for name in aux:
        lo_hi = value.get(name, [-4.0, 4.0])
        key = ("box", name)
        if not isinstance(lo_hi, list) or len(lo_hi) != 2:
            raise marked.error(key, f"box.{name} must be [low, high]")
        lo, hi = (_number(marked, key + (i,), v, f"box.{name}") for i, v in enumerate(lo_hi))
        if not lo < hi:
            raise marked.error(key, f"box.{name}: low {lo:g} must be below high {hi:g}")
        out.append((lo, hi))
    return tuple(out)
