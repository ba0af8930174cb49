"""Fuzzing what anyone can send a shared server or the command line (issue 16): a link's query, typed D and Q
cells, a file for `diagnose`. Every case must end in a documented outcome (a message, a RecipeError naming its
cell, exit status 2 with one line), in printable text, and quickly: a case slower than SLOW seconds would hold
one of the server's threads. Typed cells that reach sympy's expand, derivatives and LaTeX printer go through the
lab's guarded trial build, as on a server (a forked process with a time and memory limit): sympy cannot be
interrupted, and some cells take it minutes. Reproducible: derandomized, so CI runs the same cases every time;
4,950 cases in all (CI's time is short: each test's own examples, the cases that once failed, run
every time), about 45 s on one core."""
from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.model import lab as lab_module
from app.model import runner
from app.model.config import LabConfig, url_keys
from app.model.lab import trial_build
from app.model.urlstate import NAV_KEYS, apply_query, parse_search
from samplers.cli import main, save_npz
from samplers.engine import validate
from samplers.engine.edit import cell_variables, edited_recipe, matrix_cells, parse_matrix
from samplers.engine.recipe import Recipe
from samplers.engine.symbols import RecipeError
from samplers.registry import REGISTRY, build_sampler
from samplers.targets.expr import ExpressionError, parse_expression, symbols_for
from samplers.targets.presets import get_potential, preset_names

SLOW = 5.0
GUARDED_CASES = 50        # each a forked trial build: about 0.2 s apiece


def fuzz(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@contextlib.contextmanager
def timed(what):
    # CPU seconds of this process, not wall time: a hang guard that a busy machine (CI runs two workers beside
    # browsers) cannot trip; work that runs in a sandbox is held to its own wall-clock limit there
    start = time.process_time()
    yield
    seconds = time.process_time() - start
    assert seconds < SLOW, f"{seconds:.1f} CPU s: {what!r}"


def printable_line(text: str) -> bool:
    return "\n" not in text and all(c.isprintable() for c in text)


# -- (a) a link's query onto LabConfig ----------------------------------------------------------------
PARAMS = sorted({k for spec in REGISTRY.values() for k in spec.defaults})
KEYS = [*url_keys(LabConfig).values(), "D", "Q", *NAV_KEYS, *(f"a.{k}" for k in PARAMS), *(f"b.{k}" for k in PARAMS)]
JUNK = st.text(max_size=60) | st.text(st.characters(codec="ascii"), max_size=300)
NUMBERS = st.sampled_from(["nan", "inf", "-inf", "-0", "1e400", "1e-400", "0x10", "1_000", " 7 ", "", "-1",
                           "4294967296", "100001", "1e6", "1e7", "٣"])
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3),
                           max_leaves=30)
CELL_TEXT = st.lists(st.sampled_from([*"0123456789.+-*/^() ", "theta_1", "r_1", "U", "sin(", "x", "1e12"]),
                     max_size=30).map("".join)
MATRICES = st.lists(st.lists(CELL_TEXT | st.integers() | st.floats(), max_size=5), max_size=5)
DEEP = st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)
VALUES = (JUNK | NUMBERS | st.integers().map(str) | st.floats().map(repr) | st.sampled_from(
    [*REGISTRY, *preset_names(), "expr:x^4-2*x^2", "expr:" + "(" * 50, "<b>bold</b>", "[x](http://e.x)"])
    | JSON_VALUES.map(json.dumps) | MATRICES.map(json.dumps) | DEEP)
QUERIES = st.lists(st.tuples(st.sampled_from(KEYS) | JUNK, VALUES), max_size=12)


def _check_config(cfg: LabConfig):
    """What a link leaves in the configuration is what the lab accepts."""
    assert cfg.sampler in REGISTRY and cfg.sampler_b in REGISTRY
    for name in ("V", "chains", "seed", "speed", "burn", "batch"):
        value, (lo, hi) = getattr(cfg, name), LabConfig.param[name].bounds
        assert value is None or (math.isfinite(value) and lo <= value <= hi), (name, value)     # every one bounded
    for name in ("D", "Q"):
        cells = getattr(cfg, name)
        assert cells is None or all(isinstance(c, str) for row in cells for c in row)


@fuzz(800)
@given(QUERIES, st.booleans())
@example([("V", "nan")], True)                                        # passed every bounds check
@example([("a.eps", "\x1b[2J" + "x" * 300)], True)                     # the library's reason quoted it whole
@example([("n", "x" * 500), ("batch", "nan")], True)                   # int()'s message quoted it whole
@example([("D", "[" * 1900 + "]" * 1900)], True)                        # json recursed out of stack
@example([(f"k{i}", "1") for i in range(12)], True)                     # one message per junk key
@example([("b.eps", "")], False)                                        # a TypeError in the library's checks
@example([("batch", "0"), ("batch", "1" + "0" * 4000)], False)            # 'must be between 1 and None'; 4000 digits
def test_a_link_ends_in_messages(items, encode):
    from urllib.parse import urlencode
    search = "?" + (urlencode(items) if encode else "&".join(f"{k}={v}" for k, v in items))
    cfg = LabConfig()
    with timed(search[:200]):
        errors = apply_query(cfg, parse_search(search))
    assert isinstance(errors, list) and len(errors) <= 11
    for message in errors:
        assert isinstance(message, str) and printable_line(message) and len(message) <= 300, message
    for key, value in items:            # what a link says is shown quoted and cut: keys to 40 characters
        for text, limit in ((key, 41), (value, 200)):
            if len(text) > limit:
                assert not any(text in m for m in errors), text
    _check_config(cfg)


# -- (b) D and Q cells of sghmc on a 2-D target ------------------------------------------------------
BASE = build_sampler("sghmc", get_potential("banana")).recipe
VARIABLES = cell_variables(BASE)                  # theta_1, theta_2, r_1, r_2, U
NAMES = [str(v) for v in BASE.sym.z]
TOKENS = ["0", "1", "2", "0.5", "3.5", "1e-3", "1e12", "64", "65", "7", "16", *VARIABLES, "pi", "e",
          "+", "-", "*", "/", "^", "**", "(", ")", "(", ")", " ",
          "exp(", "log(", "sin(", "cos(", "tan(", "tanh(", "sqrt(", "abs(", "x", ",", "."]
TOKEN_SOUP = st.lists(st.sampled_from(TOKENS), max_size=80).map("".join)

LEAF = st.sampled_from([*VARIABLES, "1", "2", "0.5", "pi", "1e-3"])
EXPONENT = st.sampled_from(["2", "3", "7", "8", "16", "64", "-1", "-2", "-64", "0.5", "(1/3)", "2.5", "(7/2)"])


def _grow(inner):
    return (st.lists(inner, min_size=2, max_size=6).map("+".join)
            | st.lists(inner, min_size=2, max_size=4).map(lambda xs: "*".join(f"({x})" for x in xs))
            | st.tuples(inner, EXPONENT).map(lambda t: f"({t[0]})^{t[1]}")
            | st.tuples(st.sampled_from(["exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs"]), inner)
            .map(lambda t: f"{t[0]}({t[1]})")
            | st.tuples(inner, inner).map(lambda t: f"({t[0]})/({t[1]})")
            # forms sympy rewrites into powers or sums when it evaluates or expands them
            | st.tuples(EXPONENT, inner).map(lambda t: f"exp({t[0]}*log({t[1]}))")
            | st.tuples(inner, inner).map(lambda t: f"log(exp({t[0]})*exp({t[1]}))")
            | inner.map(lambda x: f"sqrt(({x})^2)") | inner.map(lambda x: f"abs({x})^4"))


STRUCTURED = st.recursive(LEAF, _grow, max_leaves=40)
SLOTS = st.tuples(st.sampled_from("DQ"), st.integers(0, 3), st.integers(0, 3))


def _place(cell, slot, mirrored):
    """sghmc's own cells with `cell` typed at slot; mirrored: also at its transpose (negated in Q), so that the
    symmetry checks pass and the build reaches Γ, the drift and the PSD check."""
    D, Q = matrix_cells(BASE._raw[0]), matrix_cells(BASE._raw[1])
    name, i, j = slot
    (D if name == "D" else Q)[i][j] = cell
    if mirrored and i != j:
        (D if name == "D" else Q)[j][i] = cell if name == "D" else f"-({cell})"
    return D, Q


@fuzz(1000)
@given(TOKEN_SOUP, SLOTS)
def test_a_cell_of_tokens_is_parsed_or_refused_naming_it(cell, slot):
    name, i, j = slot
    D, Q = _place(cell, slot, False)
    with timed(cell):
        try:
            parse_matrix(name, D if name == "D" else Q, BASE)
        except RecipeError as err:
            assert err.cells == ((name, i, j),) and str(err).startswith(f"{name}[{NAMES[i]},{NAMES[j]}]: ")
            assert printable_line(str(err)), str(err)


def _check_library(cell, slot, mirrored):
    """The library's path for the case: a Recipe whose LaTeX prints, or a RecipeError naming the cell in one
    printable line."""
    D, Q = _place(cell, slot, mirrored)
    name, i, j = slot
    try:
        out = edited_recipe(BASE, D, Q, BASE.drop)
        out.latex_sde(), out.latex_update(), out.matrices_latex()      # what the lab shows of it
    except RecipeError as err:
        out = err
    if isinstance(out, Recipe):
        return
    message = str(out)
    assert printable_line(message) and len(message) < 600, message
    if out.cells:
        assert (name, i, j) in out.cells or (name, j, i) in out.cells, (message, out.cells)
        assert f"{name}[{NAMES[i]},{NAMES[j]}]" in message or f"{name}[{NAMES[j]},{NAMES[i]}]" in message, message
    else:       # a property of the whole matrix
        assert message.startswith("D is not positive semidefinite: eigenvalue"), message


GUARD_REFUSALS = (f"took longer than {runner.LIMIT_S['typed build']:g} s",
                  f"needs more than {lab_module.BUILD_MEMORY >> 20} MB", "nested too deeply to differentiate")


def _check_guarded(cell, slot, mirrored):
    """The case as a link or the editor hands it to a server: the lab's guarded trial build (a forked process with a
    time and memory limit), in which the library's path is checked first, then the lab's own build, whose message
    must be one printable line too. sympy may take minutes on a cell (expand, the LaTeX printer): the guard turns
    that into a refusal naming its limit, within SLOW seconds of the server's thread."""
    D, Q = _place(cell, slot, mirrored)
    cfg = LabConfig(potential="banana", sampler="sghmc", chains=10, D=D, Q=Q)
    real_build = lab_module.build

    def checked_build(cfg, fallback, have_runs):        # in the forked process: an AssertionError comes back as text
        _check_library(cell, slot, mirrored)
        out = real_build(cfg, fallback, have_runs)
        assert out.block is None or printable_line(out.block.message), out.block.message
        return out

    lab_module.build = checked_build
    try:
        with timed((cell, slot, mirrored)):
            why = trial_build(cfg, False, False)
    finally:
        lab_module.build = real_build
    assert why is None or any(limit in why for limit in GUARD_REFUSALS), why
    assert why is None or printable_line(why), why


@fuzz(GUARDED_CASES)
@given(TOKEN_SOUP | STRUCTURED, SLOTS, st.booleans())
@example("(theta_1+theta_2+r_1+r_2+U+2)^16", ("D", 2, 2), False)     # minutes, then a RecursionError
@example("(theta_1+theta_2+r_1+r_2+U+2)^64", ("D", 3, 3), False)     # never ended
@example("sin(theta_1+r_1+r_2+U)^20", ("D", 2, 3), False)            # simplify against cos(...)^20: minutes
@example("exp(64*log(theta_1+theta_2+r_1+r_2+U+2))", ("D", 2, 2), False)     # (...)^64 once evaluated
@example("log(exp(theta_1+r_1+U)*exp(theta_2+r_2))^16", ("D", 2, 2), False)  # expand's log rule made a sum
@example("(theta_1-theta_1)^-1", ("Q", 0, 2), True)                           # 'D[2,2] = zoo is not finite'
@example("(theta_1^2/theta_1^2)^-3", ("D", 2, 2), False)                      # LaTeX printer recursed
@example("(sqrt(theta_1+theta_2+r_1+r_2+U+2+pi)+theta_1)^6", ("D", 2, 2), False)   # sqrt(s)**2 is s: 147 terms, not 7
def test_a_typed_cell_builds_or_is_refused_naming_it(cell, slot, mirrored):
    _check_guarded(cell, slot, mirrored)


@fuzz(600)
@given(STRUCTURED)
@example("(sqrt(theta_1+theta_2+r_1+r_2+U+2+pi)+theta_1)^6")     # 147 terms, counted 14: sqrt(s)**2 is s
@example("(abs(theta_1+theta_2+r_1+r_2+U+2+pi)+theta_1)^4")      # 238 terms, counted 12: abs(s)**2 is s**2
@example("((theta_1+theta_2+r_1+r_2+U+2+pi)^(1/3)+theta_1)^6")   # 52 terms, counted 14
@example("(r_1+r_2+U+2)*(r_1+r_2+U+3)*(r_1+r_2+U+4)*(r_1+r_2+U+5)")   # like terms combine: 70, not 256
def test_the_expanded_size_is_an_upper_bound(cell):
    """validate.expanded_terms bounds what multiplied_out builds, for a cell (evaluated, as parse_matrix leaves it)
    and its derivative (a row of Γ): the estimate that keeps expand off big expressions."""
    try:
        expr = parse_expression(cell, VARIABLES, float_decimals=True).doit()
    except ExpressionError:
        return
    for e in (expr, sympy.diff(expr, symbols_for(VARIABLES)[0])):
        estimate = validate.expanded_terms(e)
        with timed(cell):
            expanded = validate.multiplied_out(e)
        if estimate <= validate.EXPAND_TERMS:
            assert len(sympy.Add.make_args(expanded)) <= estimate, (cell, e, expanded)


# -- (c) files for `diagnose` ------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _small_references():
    """A file naming a target of more than two dimensions is scored against a reference HMC sample, run once per
    target and cached (17 CPU s for logistic-5d): the first such file would trip the hang guard on honest work.
    Malformed files are what is tested here, so the references are short ones, not stored."""
    from samplers import refsample
    full = refsample.reference_sample

    def short(potential, seed=0, kept=refsample.KEPT, chains=refsample.CHAINS, store=True):
        return full(potential, seed=seed, kept=40, chains=4, store=False)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(refsample, "reference_sample", short)
        yield


def _diagnose(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with timed(path.name), contextlib.redirect_stderr(err):
        status = main(["diagnose", str(path)], out=out)
    return status, out.getvalue(), err.getvalue()


def _check_cli(status, out, err):
    assert status in (0, 2)
    assert all(c.isprintable() or c == "\n" for c in out + err), (out, err)
    if status == 2:
        assert err.startswith("error: ") and err.count("\n") == 1 and not out, err
    else:
        assert err == "" and out.count("\n") >= 2, (out, err)


# scoring a logistic-regression posterior takes 4-7 s (accuracy.score on its data), a run, not a hang: left out
PRESETS = [name for name in preset_names() if name != "logistic"]
SPECS = st.sampled_from([*PRESETS, "dirichlet:1,2", "dirichlet:5,1,1", "dirichlet:1e12,1", "dirichlet:",
                         "expr:x^4-2*x^2", "expr:(x^2+y^2)/2", "expr:x^^2", "expr:-x^2", "nope", "\x1b[2Jgaussian",
                         "x" * 201]) | st.text(max_size=30)
METAS = (st.fixed_dictionaries({"potential": SPECS}, optional={"sampler": JSON_VALUES | st.text(max_size=30),
                                                             "diverged": JSON_VALUES})
         | JSON_VALUES).map(json.dumps) | st.text(max_size=50) | st.just("[" * 5000)
DTYPES = st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.complex128, np.bool_, "U3", object])
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
SHAPES = st.lists(st.integers(0, 6), min_size=1, max_size=4).map(tuple)


@st.composite
def arrays(draw, dtype=DTYPES, shape=SHAPES):
    dtype, shape = np.dtype(draw(dtype)), draw(shape)
    size = int(np.prod(shape))
    if dtype.kind == "f":
        values = draw(st.lists(FLOATS | st.floats(-5, 5), min_size=size, max_size=size))
        with np.errstate(over="ignore"):
            return np.array(values, dtype=dtype).reshape(shape)
    if dtype.kind == "O":
        return np.array([None] * size, dtype=object).reshape(shape)
    return np.zeros(shape, dtype=dtype)


THETAS = arrays() | arrays(st.just(np.float64), st.tuples(st.integers(0, 12), st.integers(0, 6), st.integers(1, 3)))
MEMBERS = st.just({}) | st.dictionaries(st.sampled_from(["theta", "meta", "x"]), THETAS, max_size=2)


@fuzz(1000)
@given(st.binary(max_size=400) | st.binary(max_size=40).map(lambda b: b"PK\x03\x04" + b))
def test_diagnose_arbitrary_bytes(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npz"
        path.write_bytes(data)
        _check_cli(*_diagnose(path))


# up to 100 variables: hypothesis draws each value of a file (pmf's 2500 would be 150 000 of them)
DIMS = {spec: dim for spec in [*PRESETS, "dirichlet:1,2", "dirichlet:5,1,1", "expr:x^4-2*x^2",
                               "expr:(x^2+y^2)/2+x*y/3"] if (dim := get_potential(spec).dim) <= 100}
ODD = st.lists(st.sampled_from(["\x1b", "[2J", "\x07", "]0;", "\u202e", "\n", "\r", "\x9b", "a", "é"]),
               max_size=12).map("".join)


@st.composite
def nearly_valid(draw):
    """A file as `sample` writes it for a known potential, with odd numbers and odd text in its meta."""
    spec = draw(st.sampled_from(sorted(DIMS)))
    shape = (draw(st.integers(0, 12)), draw(st.integers(1, 5)), DIMS[spec] + draw(st.sampled_from([0, 0, 0, 1])))
    size = int(np.prod(shape))
    values = draw(st.lists(st.floats(-1e300, 1e300) | st.floats(-3, 3) | st.sampled_from([0.0, -0.0, 5e-324]),
                           min_size=size, max_size=size))
    meta = {"potential": spec, "sampler": draw(ODD | JSON_VALUES), "diverged": draw(ODD | JSON_VALUES)}
    return np.array(values, dtype=float).reshape(shape), json.dumps(meta)


@fuzz(500)
@given(nearly_valid() | st.tuples(THETAS, METAS), MEMBERS, st.booleans())
@example((np.full((8, 3, 1), np.nan), json.dumps({"potential": "gaussian"})), {}, True)
@example((np.zeros((8, 3, 1)), "[" * 5000), {}, True)
@example((np.zeros((8, 3, 1)), json.dumps({"potential": "\x1b[2Jgaussian"})), {}, True)
def test_diagnose_malformed_samples_files(file, extra, pickled):
    theta, meta = file
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npz"
        members = {"theta": theta, "meta": np.array(meta), **extra}
        if pickled or any(a.dtype.kind == "O" for a in members.values()):
            np.savez(path, **members)           # np.savez pickles object arrays; diagnose must not unpickle
        else:
            save_npz(path, **members)
        _check_cli(*_diagnose(path))


GOOD = io.BytesIO()
with zipfile.ZipFile(GOOD, "w", zipfile.ZIP_DEFLATED) as _zf:
    for _name, _arr in {"theta": np.random.default_rng(0).normal(size=(6, 4, 1)),
                        "meta": np.array(json.dumps({"potential": "gaussian", "sampler": "sgld"}))}.items():
        _buf = io.BytesIO()
        np.lib.format.write_array(_buf, _arr)
        _zf.writestr(_name + ".npy", _buf.getvalue())


@fuzz(1000)
@given(st.lists(st.tuples(st.integers(0, len(GOOD.getvalue()) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_diagnose_a_damaged_file(flips):
    """A compressed samples file with bytes changed here and there: headers, deflate stream, directory."""
    data = bytearray(GOOD.getvalue())
    for at, byte in flips:
        data[at] = byte
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npz"
        path.write_bytes(bytes(data))
        _check_cli(*_diagnose(path))
