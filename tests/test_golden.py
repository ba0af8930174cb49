"""`python -m samplers list|sample|diagnose|reproduce` write the same outputs as before the redesign.

tests/golden/ was written by tests/golden_cases.py at the last commit of the old layout; a change
that alters a random stream, an operation's order or a printed line shows up here. The comparison
holds on any processor and BLAS kernel (issue 33): bytes where the arithmetic is the same on every
machine, numbers within a tolerance where it is not (golden_cases.py says which run is which, and why).
.ci/run runs this file a second time under another OpenBLAS kernel.
"""
import csv
import io
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from golden_cases import (
    CHAOTIC_ATOL,
    CHAOTIC_ROWS,
    CHAOTIC_RTOL,
    COMMON,
    DIAGNOSE,
    SAMPLE,
    ULP_PATHS,
    ULP_RTOL,
    sample_args,
)

from samplers.cli import main

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
# timings (qnhmc-table1's, qnhmc-logistic's, qnhmc-pmf's, whose equal-time RMSEs depend on them): all else must match
WALL_CLOCK = {"seconds", "burn_in_s", "ess_per_s", "rmse_at_equal_time", "truth_rmse_at_equal_time", "running_time_s"}


def _cell(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _same(a, b, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    """Equal, numbers to within rtol: BLAS sums a dot product in an order that depends on its kernel and
    thread count (CI runs one thread per process), which moves the last digits of QNHMC's 100-d
    trajectories (measured up to 5e-12 across kernels)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or (math.isnan(a) and math.isnan(b))
    return a == b


def _same_chaotic(a, b) -> bool:
    """A chaotic row's cell: numbers within CHAOTIC_RTOL or CHAOTIC_ATOL; a count that one kernel's run reached
    and another's did not (an empty cell beside a number) passes (golden_cases.CHAOTIC_ROWS)."""
    if isinstance(a, float) and isinstance(b, float):
        return _same(a, b, CHAOTIC_RTOL, CHAOTIC_ATOL)
    return a == b or "" in (a, b)


def _rows_match(name: str, have: list, want: list) -> bool:
    chaotic = CHAOTIC_ROWS.get(name)
    if len(have) != len(want) or any(len(r) != len(w) for r, w in zip(have, want)):
        return False
    return all(all(map(_same_chaotic if chaotic and chaotic in str(w[0]) else _same, r, w))
               for r, w in zip(have, want))


def _arrays_match(got: bytes, want: bytes) -> bool:
    """The sample arrays of two .npz files within ULP_RTOL of the golden array's scale."""
    a, b = np.load(io.BytesIO(got)), np.load(io.BytesIO(want))
    if a.files != b.files:
        return False
    for key in (k for k in a.files if k != "meta"):
        x, y = a[key], b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        scale = np.nanmax(np.abs(y)) if y.size and y.dtype.kind == "f" else 0.0
        if not (np.allclose(x, y, rtol=0.0, atol=ULP_RTOL * scale, equal_nan=True) if y.dtype.kind == "f"
                else np.array_equal(x, y)):
            return False
    return True


def _sample_files_match(name: str, got: bytes, want: bytes) -> bool:
    """Byte identity, or for golden_cases.ULP_PATHS the same metadata and arrays within ULP_RTOL."""
    if name not in ULP_PATHS:
        return got == want
    return str(np.load(io.BytesIO(got))["meta"]) == str(np.load(io.BytesIO(want))["meta"]) and _arrays_match(got, want)


def _untimed(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    keep = [i for i, key in enumerate(rows[0]) if key not in WALL_CLOCK]
    return [[_cell(row[i]) for i in keep] for row in rows]


def _read(name, mode="r"):
    with open(os.path.join(GOLDEN, name), mode) as f:
        return f.read()


def test_list_is_unchanged():
    # a fresh process, as a user runs it: the order must not depend on what was imported before
    out = subprocess.run([sys.executable, "-m", "samplers", "list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _read("list.txt")


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_sample_writes_the_same_bytes(name, tmp_path):
    path = tmp_path / f"{name}.npz"
    assert main(sample_args(name, path), out=io.StringIO()) == 0
    assert _sample_files_match(name, path.read_bytes(), _read(f"{name}.npz", "rb")), \
        f"{name} ({ULP_PATHS.get(name, 'bytes')}): {' '.join(SAMPLE[name] + COMMON)}"


def _sample(tmp_path, name: str, *extra: str) -> bytes:
    path = tmp_path / f"{name}-{len(extra)}.npz"
    assert main([*sample_args(name, path), *extra], out=io.StringIO()) == 0
    return path.read_bytes()


@pytest.mark.parametrize("name", sorted(ULP_PATHS))
def test_a_seeded_run_repeats_byte_for_byte_on_one_machine(name, tmp_path):
    # the tolerance is for other machines only: on one machine a seeded run is a pure function of its arguments
    (tmp_path / "again").mkdir()
    assert _sample(tmp_path, name) == _sample(tmp_path / "again", name)


@pytest.mark.parametrize("name, change", [("msgnht-splitting", ["--seed", "4"]),
                                          ("sgrhmc-banana", ["--set", "eps=0.020000002"])])
def test_the_tolerant_comparison_still_catches_a_changed_seed_or_step(name, change, tmp_path):
    # the power of ULP_RTOL on the arrays alone: another seed, or SGRHMC's step size (default 0.02) moved by one
    # part in 10^7, must fail it (the last --seed or --set on the command line wins)
    want = _read(f"{name}.npz", "rb")
    assert _arrays_match(_sample(tmp_path, name), want)
    assert not _arrays_match(_sample(tmp_path, name, *change), want)


@pytest.mark.parametrize("name", DIAGNOSE)
def test_diagnose_prints_the_same_lines(name):
    out = io.StringIO()
    assert main(["diagnose", os.path.join(GOLDEN, f"{name}.npz")], out=out) == 0
    assert out.getvalue() == _read(f"{name}.diagnose.txt")


def test_reproductions_write_the_same_csv(tmp_path):
    from samplers.reproduce import names, reproduce
    expected = sorted(f for f in os.listdir(os.path.join(GOLDEN, "reproduce")))
    assert expected == sorted(f"{n}.csv" for n in names())
    with open(os.devnull, "w") as sink:
        for name in names():
            reproduce(name, out_dir=tmp_path, seed=0, quick=True, stream=sink)
            got = (tmp_path / f"{name}.csv").read_text()
            want = _untimed(_read(f"reproduce/{name}.csv"))
            have = _untimed(got)
            assert _rows_match(name, have, want), (name, have, want)
