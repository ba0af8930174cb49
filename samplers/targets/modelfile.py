"""Model files: a data posterior written as YAML and a CSV (docs/models.md), `--potential model:FILE.yaml`.

    params: [theta1, theta2]          # names, or {w: 3} for a vector w_1, w_2, w_3
    data: points.csv                  # a header row names the columns; the path is relative to this file
    loglik: log(exp(-(x - theta1)^2/4) + exp(-(x - theta1 - theta2)^2/4))   # one row's, up to a constant
    logprior: -theta1^2/20 - theta2^2/2                                      # up to a constant
    box: [[-1.5, 2.5], [-3, 3]]       # optional: where the exact law is drawn and scored (one or two params)
    start: [0, 0]                     # optional: where the mode search (and the chains) start
    description: ...                  # optional

`loglik` and `logprior` go through the typed-potential parser (`expr.py`: a whitelist, nothing is evaluated);
their gradients are derived once by sympy and compiled by lambdify from those whitelisted trees only, with every
argument renamed (dummify), so no name in a file reaches the generated code. Every refusal is a ModelFileError
naming the file, the line and column, and the field. The limits below are documented in docs/models.md.
"""
from __future__ import annotations

import csv
import io
import keyword
import os
import re
from pathlib import Path

import numpy as np
import sympy

from samplers.marked import Marked, read_marked, short
from samplers.targets import expr as expr_parser
from samplers.targets.expr import ExpressionError, differentiate, parse_expression
from samplers.targets.potential import Potential, PotentialError
from samplers.targets.usermodel import DataModel

EXAMPLES = Path(__file__).parent / "examples"     # the shipped model files and their data
MAX_YAML_CHARS = 16_000       # a model file is a few lines
MAX_YAML_NODES = 500
MAX_CSV_BYTES = 16 << 20      # 16 MiB of data
MAX_ROWS = 1_000_000
MAX_COLUMNS = 100
MAX_PARAMS = 100              # scalars, vectors counted by their length
MAX_NAME = 32
KEYS = ("params", "data", "loglik", "logprior", "box", "start", "description")
REQUIRED = ("params", "data", "loglik", "logprior")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


class ModelFileError(PotentialError):
    """A model file or its data that cannot be used: `source` (the file), `line` and `column` (from 1; None when
    the fault is at no one place), `field` (the key or column at fault)."""

    def __init__(self, message: str, key: tuple = (), line: int | None = None, column: int | None = None,
                 cells: tuple = (), source: str | None = None):
        self.detail, self.key, self.line, self.column, self.source = message, tuple(key), line, column, source
        self.field = _field(self.key)
        where = f"line {line}, column {column}: " if line is not None else ""
        what = f"{self.field}: " if self.field else ""
        super().__init__((f"{source}: " if source else "") + where + what + message)

    def located(self, source: str) -> ModelFileError:
        return ModelFileError(self.detail, self.key, self.line, self.column, (), source)


def _field(key: tuple) -> str:
    out = ""
    for k in key:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def read_model_text(text: str, source: str, read_csv) -> tuple[DataModel, dict]:
    """A model file's text, `source` its name in messages, `read_csv(path)` -> the CSV's text (or raises
    ModelFileError/OSError). Returns the DataModel and the file's optional settings (box, start, description)."""
    try:
        marked = read_marked(text, ModelFileError, "the model file", f"it needs {', '.join(REQUIRED)}",
                             ", ".join(REQUIRED), MAX_YAML_CHARS, MAX_YAML_NODES)
        return _build(marked, read_csv)
    except ModelFileError as err:
        raise err.located(source) if err.source is None else err from None


def load_model_file(path: str) -> tuple[DataModel, dict]:
    """A model file on disk; its CSV is read relative to the file's folder."""
    path = str(path)
    try:
        size = os.stat(path).st_size
    except OSError as err:
        raise ModelFileError(f"cannot read the model file ({err.strerror or err})", source=short(path, 80)) from None
    if size > 4 * MAX_YAML_CHARS:
        raise ModelFileError(f"the model file is {size:,} bytes long (at most {MAX_YAML_CHARS:,} characters)",
                             source=short(path, 80))
    if not os.path.isfile(path):
        raise ModelFileError("not a file", source=short(path, 80))
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(MAX_YAML_CHARS + 1)
    folder = os.path.dirname(os.path.abspath(path))

    def read_csv(name):
        full = os.path.join(folder, name)
        if not os.path.isfile(full):
            raise ModelFileError("not a file", source=short(name, 80))
        size = os.stat(full).st_size
        if size > MAX_CSV_BYTES:
            raise ModelFileError(f"{size:,} bytes (at most {MAX_CSV_BYTES:,})", source=short(name, 80))
        with open(full, encoding="utf-8", errors="replace", newline="") as f:
            text = f.read(MAX_CSV_BYTES + 1)      # a file that grows after its size was read is cut here
        if len(text) > MAX_CSV_BYTES:
            raise ModelFileError(f"more than {MAX_CSV_BYTES:,} characters", source=short(name, 80))
        return text
    return read_model_text(text, short(path, 80), read_csv)


def model_file_potential(path: str, name: str | None = None) -> Potential:
    """`model:FILE.yaml`: the file's posterior as a Potential (its exact law normalised when it has one or two
    parameters)."""
    model, extra = load_model_file(path.strip())
    extra.setdefault("description", f"the model file {short(path, 80)}")
    return model.potential(name or f"model:{path.strip()}", formula=model.formula(), **extra)


# ----------------------------------------------------------------------------------------------------------
def _build(m: Marked, read_csv) -> tuple[DataModel, dict]:
    data = m.data
    for key in data:
        if key not in KEYS:
            raise m.error((key,), f"unknown key (the keys are {', '.join(KEYS)})", at_key=True)
    for key in REQUIRED:
        if key not in data:
            raise m.error((), f"the key '{key}' is missing (it needs {', '.join(REQUIRED)})")
    params = _params(m)
    path = data["data"]
    if not isinstance(path, str) or not path.strip():
        raise m.error(("data",), "the name of a CSV file, relative to this file")
    path = path.strip()
    try:
        csv_text = read_csv(path)
    except ModelFileError as err:
        line, column = m.at(("data",))
        raise ModelFileError(f"the CSV file '{short(path)}': {err.detail}", ("data",), line, column) from None
    except OSError as err:
        raise m.error(("data",), f"cannot read the CSV file '{short(path)}' ({err.strerror or err})") from None
    header = _header(csv_text, path)
    taken = set(params)
    usable = [c for c in header if _NAME.match(c) and len(c) <= MAX_NAME and _free(c) and c not in taken]
    loglik = _expression(m, "loglik", params + usable)
    used = [c for c in usable if sympy.Symbol(c, real=True) in loglik.free_symbols]
    if not used:
        raise m.error(("loglik",), f"uses no column of {short(path)} (its columns: {', '.join(map(short, header))})")
    logprior = _expression(m, "logprior", params)
    cols = _columns(csv_text, path, header, used)
    extra = {}
    for key in ("box", "start"):
        if key in data:
            extra[key] = _numbers(m, key, len(params))
    if "description" in data:
        extra["description"] = short(data["description"], 300)
    return formula_model(params, used, cols, loglik, logprior), extra


def _free(name: str) -> bool:
    """Not a word the grammar or Python reserves (the parser's functions and constants, Python's keywords)."""
    reserved = set(expr_parser._FUNCTIONS) | set(expr_parser._CONSTANTS)
    return name not in reserved and not keyword.iskeyword(name)


def _params(m: Marked) -> list[str]:
    spec = m.data["params"]
    if isinstance(spec, str):
        spec = [spec]
    if not isinstance(spec, list) or not spec:
        raise m.error(("params",), "a list of names, e.g. [theta1, theta2], or {w: 3} for a vector of length 3")
    names: list[str] = []
    for i, item in enumerate(spec):
        if isinstance(item, dict) and len(item) == 1:
            (name, length), = item.items()
            if not isinstance(length, int) or isinstance(length, bool) or not 1 <= length <= MAX_PARAMS:
                raise m.error(("params", i, name), f"a vector's length is a whole number from 1 to {MAX_PARAMS}")
            expanded = [f"{name}_{j + 1}" for j in range(length)]
        elif isinstance(item, str):
            name, expanded = item, [item]
        else:
            raise m.error(("params", i), "a name, or {name: length} for a vector")
        _check_name(m, ("params", i), str(name), "parameter")
        for n in expanded:
            if n in names:
                raise m.error(("params", i), f"'{short(n)}' is named twice")
            names.append(n)
        if len(names) > MAX_PARAMS:
            raise m.error(("params", i), f"more than {MAX_PARAMS} parameters")
    return names


def _check_name(m: Marked, key: tuple, name: str, what: str):
    if len(name) > MAX_NAME:
        raise m.error(key, f"a {what} name has at most {MAX_NAME} characters")
    if not _NAME.match(name):
        raise m.error(key, f"'{short(name)}' is not a {what} name: a letter, then letters, digits or _"
                      + (" (names starting with _ are reserved)" if name.startswith("_") else ""))
    if not _free(name):
        raise m.error(key, f"'{short(name)}' is reserved (a function, a constant or a Python keyword)")


def _expression(m: Marked, key: str, variables: list[str]) -> sympy.Expr:
    text = m.data[key]
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise m.error((key,), "an expression, e.g. -theta1^2/2")
    try:
        return parse_expression(text, tuple(variables))
    except ExpressionError as err:
        line, column = m.at((key,))
        if line is not None and err.position is not None:
            column = _column_of(m.text, line, column, text, err.position)
        if key == "logprior" and "unknown name" in err.message:
            raise ModelFileError(f"{err.message}; the prior is written in the parameters only", (key,), line,
                                 column) from None
        raise ModelFileError(err.message, (key,), line, column) from None


def _column_of(text: str, line: int, column: int, value: str, position: int) -> int:
    """The file's column of character `position` of a one-line value that starts at (line, column): plain or
    quoted. Elsewhere (a block scalar) the value's own column."""
    lines = text.splitlines()
    if line - 1 >= len(lines):
        return column
    rest = lines[line - 1][column - 1:]
    if rest.startswith(value):
        return column + position
    if rest[:1] in "'\"" and rest[1:].startswith(value):
        return column + 1 + position
    return column


def _header(text: str, path: str) -> list[str]:
    first = next(iter(io.StringIO(text)), "")
    row = next(csv.reader([first]), [])
    header = [c.strip() for c in row]
    if not header or not any(header):
        raise ModelFileError("the first line must be a header naming the columns", ("data",), 1, 1,
                             source=short(path))
    if len(header) > MAX_COLUMNS:
        raise ModelFileError(f"{len(header)} columns (at most {MAX_COLUMNS})", (), 1, 1, source=short(path))
    seen = set()
    for j, name in enumerate(header):
        if name in seen and name:
            raise ModelFileError(f"the column '{short(name)}' is named twice", (), 1, j + 1, source=short(path))
        seen.add(name)
    return header


def _columns(text: str, path: str, header: list[str], used: list[str]) -> np.ndarray:
    """The used columns as floats, (len(used), N): ModelFileError naming the line and column of a bad cell."""
    where = [header.index(c) for c in used]
    reader = csv.reader(io.StringIO(text))
    next(reader)
    out = []
    for row in reader:
        line = reader.line_num
        if not row or not any(c.strip() for c in row):
            continue
        if len(out) >= MAX_ROWS:
            raise ModelFileError(f"more than {MAX_ROWS:,} rows", (), line, 1, source=short(path))
        if len(row) != len(header):
            raise ModelFileError(f"{len(row)} cells, the header names {len(header)}", (), line, 1, source=short(path))
        values = []
        for j in where:
            cell = row[j].strip()
            try:
                v = float(cell)
            except ValueError:
                v = np.nan
            if not np.isfinite(v):
                raise ModelFileError(f"'{short(cell, 20)}' is not a finite number", (header[j],), line, j + 1,
                                     source=short(path))
            values.append(v)
        out.append(values)
    if not out:
        raise ModelFileError("a header and no data rows", (), None, None, source=short(path))
    return np.ascontiguousarray(np.array(out, float).T)


def _numbers(m: Marked, key: str, d: int):
    value = m.data[key]

    def number(v, k):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise m.error(k, "a finite number")
        return float(v)
    if key == "start":
        if not isinstance(value, list) or len(value) != d:
            raise m.error((key,), f"one number per parameter ({d})")
        return [number(v, (key, i)) for i, v in enumerate(value)]
    if d > 2 and not (isinstance(value, list) and len(value) == 2):
        raise m.error((key,), "two [lo, hi] pairs: the box of the first two parameters")
    want = min(d, 2)
    if not isinstance(value, list) or len(value) != want:
        raise m.error((key,), f"{want} [lo, hi] pair{'s' if want > 1 else ''}, one per plotted parameter")
    box = []
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise m.error((key, i), "a [lo, hi] pair")
        lo, hi = number(pair[0], (key, i, 0)), number(pair[1], (key, i, 1))
        if not lo < hi:
            raise m.error((key, i), "lo must be below hi")
        box.append((lo, hi))
    return box


# ----------------------------------------------------------------------------------------------------------
class FormulaModel(DataModel):
    """A DataModel whose callables are compiled from a whitelisted sympy tree; the rows are kept column by column
    ((columns, N), so a batch of one column is contiguous)."""

    def __init__(self, params, columns, cols, loglik, logprior):
        self.cols = cols
        self.columns = tuple(columns)
        self.loglik_expr, self.logprior_expr = loglik, logprior
        p_syms = [sympy.Symbol(n, real=True) for n in params]
        c_syms = [sympy.Symbol(n, real=True) for n in columns]
        args = p_syms + c_syms
        d = len(p_syms)
        # one compiled function each: the per-row value, its gradient (common subexpressions shared), the prior's
        f_ll = sympy.lambdify(args, loglik, "numpy", dummify=True)
        f_g = sympy.lambdify(args, [differentiate(loglik, s) for s in p_syms], "numpy", dummify=True, cse=True)
        f_p = sympy.lambdify(p_syms, logprior, "numpy", dummify=True)
        f_pg = sympy.lambdify(p_syms, [differentiate(logprior, s) for s in p_syms], "numpy", dummify=True)

        def loglik_fn(theta, xb):
            return f_ll(*np.moveaxis(theta, -1, 0), *xb)

        def grad_fn(theta, xb):
            shape = np.broadcast_shapes(theta.shape[:-1], xb.shape[1:])
            out = np.empty(shape + (d,))
            for j, part in enumerate(f_g(*np.moveaxis(theta, -1, 0), *xb)):
                out[..., j] = part
            return out

        def prior_fn(theta):
            return f_p(*theta.T)

        def prior_grad_fn(theta):
            out = np.empty(theta.shape)
            for j, part in enumerate(f_pg(*theta.T)):
                out[:, j] = part
            return out
        super().__init__(cols.T, loglik_fn, grad_fn, prior_fn, prior_grad_fn, names=params)

    def _take(self, idx):
        return self.cols[:, idx]

    def formula(self) -> str:
        return (r"U(\theta) = -\sum_{i=1}^N \left[" + sympy.latex(self.loglik_expr) + r"\right] - \left["
                + sympy.latex(self.logprior_expr) + r"\right]")


def formula_model(params, columns, cols, loglik, logprior) -> FormulaModel:
    return FormulaModel(params, columns, cols, loglik, logprior)
