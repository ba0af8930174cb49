"""The lab's designed sampler: a design (docs/recipes.md) held as plain data, edited step by step, checked,
carried in a link and in a YAML file.

The data is what a design file holds once read (aux, kinetic, D, Q, blocks, naive, drop, box, params), so one
checker serves the editor, links and uploads: the library's schema (`samplers.design.schema`), which parses no
expression. Cells are parsed, Γ derived and D, Q checked only when the lab builds the run, off the event loop
and within its time limit (lab.py); every message names the key or cell at fault.
"""
from __future__ import annotations

import json
import math
import re
from collections import OrderedDict

import yaml

from samplers.design import Design, DesignError, example_names, example_path
from samplers.design.schema import MAX_STATE, SAMPLER_PARAMS, check_design, check_name
from samplers.design.yamlfile import Marked, read_yaml

from .runner import LIMIT_S, Sandbox

DESIGN = "design"                 # the designed sampler among the lab's samplers (no registry name is it)
EMPTY = "empty"                   # the preset with no auxiliary variable and nothing moving: a design to start from
UPLOAD_MEMORY = 256 << 20          # what reading an uploaded design may add, in its sandbox
MAX_JSON = 6000                   # a six-variable design is about 1500 characters; a link is not a data format
DEFAULT_BOX = [-4.0, 4.0]         # the schema's default auxiliary box
_CHECKED: OrderedDict[str, Design] = OrderedDict()   # a Design keeps its derived recipes: reuse it across rebuilds
_CHECKED_SIZE = 32


def theta_names(dim: int) -> list[str]:
    return ["theta"] if dim == 1 else [f"theta_{k + 1}" for k in range(dim)]


def empty_design(dim: int = 1) -> dict:
    return {"aux": [], "kinetic": "0", "D": [["0"] * dim for _ in range(dim)],
            "Q": [["0"] * dim for _ in range(dim)]}


def preset_names() -> list[str]:
    return [EMPTY] + example_names()


def preset(name: str, dim: int = 1) -> dict:
    """A shipped design as data (the empty one at `dim`); DesignError for an unknown name."""
    if name == EMPTY:
        return empty_design(dim)
    return as_data(checked(yaml.safe_load(example_path(name).read_text("utf-8"))))


def uses_design(cfg) -> bool:
    """Does one of the lab's sides run the design?"""
    return cfg.sampler == DESIGN or (bool(cfg.compare) and cfg.sampler_b == DESIGN)


def current(data: dict | None, dim: int) -> dict:
    """The design the lab runs: the configuration's, else the empty one at the target's dimension."""
    return data if data is not None else empty_design(dim)


def key_of(data: dict) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def checked(data, max_state: int = MAX_STATE) -> Design:
    """The design's keys checked by the library's schema (names, shapes, numbers; no expression parsed):
    DesignError naming the key."""
    if not isinstance(data, dict):
        raise DesignError("a design is a mapping of keys (aux, kinetic, D, Q, ...)")
    key = key_of(data)
    if key in _CHECKED:
        _CHECKED.move_to_end(key)
        return _CHECKED[key]
    design = check_design(Marked(data, {}, {}), "the lab", DESIGN, max_state)
    _CHECKED[key] = design
    while len(_CHECKED) > _CHECKED_SIZE:
        _CHECKED.popitem(last=False)
    return design


def _number(x: float):
    return int(x) if float(x).is_integer() and abs(x) < 2 ** 53 else float(x)


def as_data(design: Design) -> dict:
    """A checked design as plain data in one spelling (keys at their defaults left out): what links, files and
    the editor hold, so one design always gives one link."""
    names = design.state_names
    out = {}
    if design.name != DESIGN:
        out["name"] = design.name
    if design.description:
        out["description"] = design.description
    out["aux"] = list(design.aux)
    out["kinetic"] = design.kinetic
    out["D"] = [list(row) for row in design.D]
    out["Q"] = [list(row) for row in design.Q]
    if design.blocks:
        out["blocks"] = [[names[i] for i in block] for block in design.blocks]
    if design.naive:
        out["naive"] = design.naive
    if design.drop:
        out["drop"] = sorted(design.drop)
    box = {name: [_number(lo), _number(hi)] for name, (lo, hi) in zip(design.aux, design.box)
           if [lo, hi] != DEFAULT_BOX}
    if box:
        out["box"] = box
    params = {k: _number(v) for k, v in design.params.items() if SAMPLER_PARAMS.get(k) != v}
    if params:
        out["params"] = params
    return out


def state_names(data: dict) -> list[str]:
    dim = len(data["D"]) - len(data.get("aux", []))
    return theta_names(max(dim, 1)) + list(data.get("aux", []))


def dim_of(data: dict) -> int:
    return len(data["D"]) - len(data.get("aux", []))


# -- edits: each returns a new dict (the configuration's parameter changes only by assignment) -------------
def _copy(data: dict) -> dict:
    return json.loads(json.dumps(data))


def set_cell(data: dict, which: str, i: int, j: int, text: str) -> dict:
    out = _copy(data)
    out[which][i][j] = text
    return out


def set_kinetic(data: dict, text: str) -> dict:
    out = _copy(data)
    out["kinetic"] = text
    return out


def add_aux(data: dict, name: str, max_state: int = MAX_STATE) -> dict:
    """The design with one more auxiliary variable, last in the state, its rows and columns of D and Q zero."""
    name = name.strip()
    aux = list(data.get("aux", []))
    if len(data["D"]) >= max_state:
        raise DesignError(f"aux: the state may have at most {max_state} variables")
    check_name(Marked({}, {}, {}), ("aux", len(aux)), name, state_names(data) + list(_constants(data)))
    out = _copy(data)
    out["aux"] = aux + [name]
    for which in ("D", "Q"):
        out[which] = [row + ["0"] for row in out[which]] + [["0"] * (len(out[which]) + 1)]
    if out.get("blocks"):
        out["blocks"].append([name])
    return out


def remove_aux(data: dict, index: int) -> dict:
    """The design without its index-th auxiliary variable (its row and column of D and Q gone)."""
    out = _copy(data)
    name = out["aux"].pop(index)
    k = dim_of(data) + index
    for which in ("D", "Q"):
        out[which] = [[c for j, c in enumerate(row) if j != k] for i, row in enumerate(out[which]) if i != k]
    if out.get("blocks"):
        out["blocks"] = [b for b in ([v for v in block if v != name] for block in out["blocks"]) if b]
    if name in out.get("box", {}):
        del out["box"][name]
    return out


def rename_aux(data: dict, index: int, name: str) -> dict:
    """The design with its index-th auxiliary variable renamed, in every cell, K, the blocks and the box."""
    name = name.strip()
    old = data["aux"][index]
    if name == old:
        return data
    taken = [v for v in state_names(data) if v != old] + list(_constants(data))
    check_name(Marked({}, {}, {}), ("aux", index), name, taken)
    word = re.compile(rf"\b{re.escape(old)}\b")
    out = _copy(data)
    out["aux"][index] = name
    out["kinetic"] = word.sub(name, str(out.get("kinetic", "0")))
    for which in ("D", "Q"):
        out[which] = [[word.sub(name, str(c)) for c in row] for row in out[which]]
    if out.get("blocks"):
        out["blocks"] = [[name if v == old else v for v in block] for block in out["blocks"]]
    if old in out.get("box", {}):
        out["box"][name] = out["box"].pop(old)
    return out


def _constants(data: dict) -> list[str]:
    return [k for k in data.get("params", {}) if k not in SAMPLER_PARAMS]


def params_text(data: dict) -> str:
    """The step size and the constants as one line of `name = value`s (the defaults shown too)."""
    params = {"eps": SAMPLER_PARAMS["eps"], **data.get("params", {})}
    return ", ".join(f"{k} = {_number(v)}" for k, v in params.items())


def set_params(data: dict, text: str) -> dict:
    """The design with its parameters from `name = value, ...`; DesignError naming the item at fault."""
    params = {}
    for item in (s.strip() for s in text.replace(";", ",").split(",")):
        if not item:
            continue
        name, eq, value = (s.strip() for s in item.partition("="))
        if not eq:
            raise DesignError(f"params: '{item[:40]}' is not name = value")
        try:
            number = float(value)
        except ValueError:
            raise DesignError(f"params.{name[:24]}: '{value[:40]}' is not a number") from None
        if not math.isfinite(number):
            raise DesignError(f"params.{name[:24]}: {value[:40]} is not finite")
        params[name] = _number(number)
    out = _copy(data)
    out["params"] = {k: v for k, v in params.items() if SAMPLER_PARAMS.get(k) != v}
    if not out["params"]:
        del out["params"]
    return as_data(checked(out))


# -- links and files -----------------------------------------------------------------------------------
def to_json(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def from_json(text: str) -> dict:
    """A link's design: ValueError (its reason, one line) unless it passes the schema."""
    if len(text) > MAX_JSON:
        raise ValueError(f"too long (at most {MAX_JSON} characters)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg} at character {err.pos}") from None
    try:
        return as_data(checked(data))
    except DesignError as err:
        raise ValueError(str(err)) from None


def to_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)


def _read_uploaded(send, text):
    try:
        send(("ok", from_yaml(text)))
    except DesignError as err:
        send(("refused", str(err)))
    except RecursionError:
        send(("refused", "the design is nested too deeply"))


def read_upload(text: str, limit_s: float | None = None) -> dict:
    """from_yaml in a sandbox, killed past the typed-build limit: an upload is parsed off the event loop and
    cannot hold a worker either (4 kB of nested brackets once took 0.6-11 s to refuse; issue 28). DesignError
    for anything it cannot use."""
    limit_s = LIMIT_S["typed build"] if limit_s is None else limit_s
    kind, value = Sandbox(_read_uploaded, text, memory=UPLOAD_MEMORY).first(limit_s)
    if kind == "ok":
        return value
    if kind == "refused":
        raise DesignError(value)
    raise DesignError(f"the design took longer than {limit_s:g} s to read" if kind == "time" else
                      f"the design needs more than {UPLOAD_MEMORY >> 20} MB to read")


def from_yaml(text: str) -> dict:
    """An uploaded design: DesignError naming the key, with its line and column, unless it passes the schema."""
    marked = read_yaml(text)
    return as_data(check_design(marked, "the uploaded file", DESIGN, MAX_STATE))
