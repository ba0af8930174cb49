import io
import json
import subprocess
import sys

import numpy as np
import pytest

from samplers.cli import main
from samplers.registry import sampler_names


def cli(*args):
    return subprocess.run([sys.executable, "-m", "samplers", *args], capture_output=True, text=True, timeout=120)


def test_list_names_every_sampler_and_potential():
    out = cli("list")
    assert out.returncode == 0
    listed = {line.split()[1] for line in out.stdout.splitlines()}
    assert set(sampler_names()) <= listed
    assert {"gaussian", "double-well", "banana", "correlated-gaussian", "mixture", "gaussian-100d",
            "logistic"} <= listed


def test_sample_help_says_what_each_number_does_and_lists_every_parameter(capsys):
    """--steps and --burn say that burn-in is extra; --set's help lists every declared parameter with its bounds."""
    from samplers.registry import declarations
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "burn-in is extra, the run takes B + N steps" in text and "N // THIN samples per chain" in text
    for flag in ("--thin THIN keep", "--chains CHAINS independent", "--seed SEED the random seed"):
        assert flag in text
    for p in declarations():
        assert " ".join(p.describe().split()) in text, p.name
    assert "eps: the step size ε (> 0 and <= 100) [every sampler but scir]" in text


def test_sample_is_reproducible_and_diagnosable(tmp_path, capsys):
    args = ["sample", "--sampler", "sghmc", "--potential", "double-well", "--grad-noise", "4", "--set", "eps=0.1",
            "--set", "C=3", "--steps", "200", "--burn", "50", "--thin", "2", "--chains", "30", "--seed", "4"]
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert main(args + ["--out", str(a)]) == 0
    assert main(args + ["--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    with np.load(a) as f:
        assert f["theta"].shape == (100, 30, 1)
        meta = json.loads(str(f["meta"]))
    assert meta["sampler"] == "sghmc" and meta["seed"] == 4 and meta["params"]["C"] == 3.0
    assert meta["diverged"] == 0
    capsys.readouterr()
    assert main(["diagnose", str(a)]) == 0
    out = capsys.readouterr().out
    for key in ("KL", "TV", "KS", "ESS"):
        assert key in out


def test_typed_potential_and_minibatch(tmp_path):
    out = tmp_path / "t.npz"
    assert main(["sample", "--sampler", "sgld", "--potential", "expr:x^4 - 2*x^2 + 0.3*x", "--steps", "20",
                 "--out", str(out)]) == 0
    assert main(["sample", "--sampler", "sgld", "--potential", "logistic", "--batch", "10", "--set", "eps=1e-4",
                 "--steps", "20", "--chains", "5", "--out", str(out)]) == 0


@pytest.mark.parametrize("args, message", [
    (["sample", "--sampler", "nope", "--potential", "gaussian", "--steps", "5", "--out", "x.npz"], "unknown sampler"),
    (["sample", "--sampler", "sgld", "--potential", "nope", "--steps", "5", "--out", "x.npz"], "unknown potential"),
    (["sample", "--sampler", "sgld", "--potential", "expr:x^^2", "--steps", "5", "--out", "x.npz"],
     "invalid expression"),
    (["sample", "--sampler", "sgld", "--potential", "expr:__import__('os')", "--steps", "5", "--out", "x.npz"],
     "invalid expression"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "5", "--set", "eps=-1",
      "--out", "x.npz"], "eps must be > 0"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "5", "--set", "bogus=1",
      "--out", "x.npz"], "has no parameter 'bogus'"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "5", "--set", "eps",
      "--out", "x.npz"], "KEY=VALUE"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "0", "--out", "x.npz"], "--steps"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--batch", "5", "--steps", "5",
      "--out", "x.npz"], "has no data"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--grad-noise", "-1", "--steps", "5",
      "--out", "x.npz"], ">= 0"),
    (["sample", "--sampler", "sgld", "--potential", "gaussian", "--steps", "5", "--set", "eps=",
      "--out", "x.npz"], "error: "),                                    # a TypeError's traceback
    (["diagnose", "missing.npz"], "error"),
    (["frobnicate"], "invalid choice"),
    ([], "required"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    out = subprocess.run([sys.executable, "-m", "samplers", *args], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def _npz(path, theta, meta):
    """A file as `sample` writes it, with any theta and any meta."""
    np.savez(path, theta=theta, meta=np.array(meta if isinstance(meta, str) else json.dumps(meta)))
    return path


def _huge_header(path):
    """theta.npy whose header declares 10^12 values and holds none (a zip bomb's cheap cousin)."""
    import io
    import zipfile
    buf = io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": (10 ** 4, 10 ** 4, 10 ** 4)}
    np.lib.format.write_array_header_1_0(buf, header)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("theta.npy", buf.getvalue())
        meta = io.BytesIO()
        np.lib.format.write_array(meta, np.array(json.dumps({"potential": "gaussian"})))
        zf.writestr("meta.npy", meta.getvalue())
    return path


def _compressed(path, method, damage=b""):
    """A samples file zipped with `method`, its first member's data overwritten by `damage`."""
    import io
    import zipfile
    arrays = {"theta": np.zeros((4, 3, 1)), "meta": np.array(json.dumps(GOOD_META))}
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr)
            zf.writestr(name + ".npy", buf.getvalue())
    raw = bytearray(path.read_bytes())
    start = 30 + len("theta.npy") + 20         # past the local header and into the compressed data
    raw[start:start + len(damage)] = damage
    path.write_bytes(bytes(raw))
    return path


def _unknown_method(path):
    """Both headers of theta.npy claim compression method 99."""
    raw = bytearray(_compressed(path, 0).read_bytes())
    for magic, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        i = raw.find(magic)
        raw[i + offset:i + offset + 2] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(raw))
    return path


def _version_needed(path):
    """The zip's directory says theta.npy needs a zip reader of version 6.4."""
    raw = bytearray(_compressed(path, 0).read_bytes())
    i = raw.find(b"PK\x01\x02")
    raw[i + 6:i + 8] = (64).to_bytes(2, "little")
    path.write_bytes(bytes(raw))
    return path


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=(1, 0))
    return buf.getvalue()


def _members(path, **members):
    """A zip of these members (name: bytes), each with its right CRC: damage the zip itself would not catch."""
    import zipfile
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _header_damaged(path, member, offset, byte):
    """theta or meta's npy header with one byte changed (offset from the start of its dict), zipped intact."""
    arrays = {"theta.npy": _npy(np.zeros((4, 3, 1))), "meta.npy": _npy(np.array(json.dumps(GOOD_META)))}
    raw = bytearray(arrays[member])
    raw[raw.find(b"{") + offset] = ord(byte)
    arrays[member] = bytes(raw)
    return _members(path, **arrays)


GOOD_META = {"potential": "gaussian", "sampler": "sgld"}
BAD_FILES = {
    "empty": lambda p: (p.write_bytes(b""), p)[1],
    "truncated": lambda p: (p.write_bytes(_npz(p, np.zeros((2, 3, 1)), GOOD_META).read_bytes()[:200]), p)[1],
    "meta-list": lambda p: _npz(p, np.zeros((2, 3, 1)), [1, 2]),
    "meta-number": lambda p: _npz(p, np.zeros((2, 3, 1)), "3"),
    "meta-not-json": lambda p: _npz(p, np.zeros((2, 3, 1)), "{potential"),
    "structured": lambda p: _npz(p, np.zeros((2, 3), dtype=[("a", "f8")]), GOOD_META),
    "2-d theta": lambda p: _npz(p, np.zeros((2, 3)), GOOD_META),
    "huge header": _huge_header,
    "huge dirichlet": lambda p: _npz(p, np.zeros((2, 3, 2)), {"potential": "dirichlet:1e12,1"}),
    "long potential": lambda p: _npz(p, np.zeros((2, 3, 2)), {"potential": "dirichlet:" + ",".join(["1"] * 2000)}),
    "wrong dim": lambda p: _npz(p, np.zeros((2, 3, 5)), GOOD_META),
    # each of these escaped as a traceback: RecursionError, zlib.error, LZMAError, NotImplementedError
    "meta nested deeply": lambda p: _npz(p, np.zeros((2, 3, 1)), "[" * 5000),
    "deflate damaged": lambda p: _compressed(p, 8, b"\xff" * 40),
    "lzma damaged": lambda p: _compressed(p, 14, b"\x00" * 40),
    "unknown compression": _unknown_method,
    "zip version 6.4": _version_needed,
    # numpy's parser of old npy headers raised tokenize.TokenError or SyntaxError: tracebacks, exit 1 (issue 28)
    "theta header unterminated": lambda p: _header_damaged(p, "theta.npy", 0, "'"),
    "theta header syntax": lambda p: _header_damaged(p, "theta.npy", 11, ","),
    "meta header open bracket": lambda p: _header_damaged(p, "meta.npy", 0, "("),
    "meta header unterminated": lambda p: _header_damaged(p, "meta.npy", 1, '"'),
    "theta is meta": lambda p: _members(p, **{"theta.npy": _npy(np.array("{}")),
                                              "meta.npy": _npy(np.array(json.dumps(GOOD_META)))}),
    "theta is text": lambda p: _members(p, **{"theta.npy": b"theta", "meta.npy": _npy(np.array("{}"))}),
    "theta cut after its header": lambda p: _members(p, **{"theta.npy": _npy(np.zeros((4, 3, 1)))[:140],
                                                           "meta.npy": _npy(np.array(json.dumps(GOOD_META)))}),
    # and these gave numbers with warnings on stderr: `sample` never writes them (diverged chains are frozen)
    "NaN theta": lambda p: _npz(p, np.full((8, 3, 1), np.nan), GOOD_META),
    "infinite theta": lambda p: _npz(p, np.full((8, 3, 1), -np.inf), GOOD_META),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_diagnose_refuses_a_malformed_file_in_one_line(case, tmp_path, capsys):
    path = BAD_FILES[case](tmp_path / "x.npz")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("member", ["theta.npy", "meta.npy"])
def test_diagnose_ends_in_one_line_whatever_byte_of_an_npy_header_is_damaged(member, tmp_path, capsys):
    """Generated damage, as the issue's 400 files were (4 of them gave a traceback): each header byte changed in
    turn into a character that unbalances numpy's header parser. A file that still reads is scored (0)."""
    header_len = _npy(np.zeros((4, 3, 1)) if member == "theta.npy" else np.array(json.dumps(GOOD_META))).find(b"\n")
    for offset in range(header_len - 10):
        for byte in "'(,\x00":
            path = _header_damaged(tmp_path / "x.npz", member, offset, byte)
            code = main(["diagnose", str(path)], out=io.StringIO())
            err = capsys.readouterr().err
            assert code == 0 or (code == 2 and err.startswith("error: ") and err.count("\n") == 1), (offset, byte, err)


def test_diagnose_prints_no_terminal_escapes_from_the_file(tmp_path, capsys):
    path = _npz(tmp_path / "x.npz", np.random.default_rng(0).normal(size=(8, 20, 1)),
                {"potential": "gaussian", "sampler": "sgld\x1b[2J\x1b]0;owned\x07"})
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and out.startswith("sgld[2J]0;owned on gaussian")


@pytest.mark.parametrize("meta", [{"potential": "\x1b[2Jgaussian"}, {"potential": "expr:x^^\x1b]0;owned\x07"}])
def test_errors_print_no_terminal_escapes_from_the_file(meta, tmp_path, capsys):
    path = _npz(tmp_path / "x.npz", np.zeros((8, 20, 1)), meta)
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "\x1b" not in err and "\x07" not in err


@pytest.mark.parametrize("args, message", [
    (["--potential", "banana", "--steps", "250000000", "--chains", "2"], "GiB (at most 2 GiB)"),
    (["--potential", "gaussian", "--steps", "1", "--chains", "400000000"], "GiB"),
    (["--potential", "gaussian", "--steps", "1", "--burn", "1000000000000"], "at most 1,000,000,000"),
    (["--potential", "gaussian", "--steps", "1", "--sampler", "hmc", "--set", "L=1000000000"],
     "L must be between 1 and 1000"),
])
def test_sample_refuses_sizes_it_could_not_hold_or_finish(args, message, tmp_path, capsys):
    argv = ["sample", "--sampler", "sgld", *args, "--out", str(tmp_path / "x.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_diagnose_scores_exact_funnel_draws_at_their_noise_floor(tmp_path, capsys):
    """Issue 25, "Done when": diagnose on 2e5 exact draws of the funnel (y ~ N(0, 2.5^2), x | y ~ N(0, e^y)) scores
    at its noise floor. For exact draws KL ~ chi2_k / (2n), so its sd is sqrt(floor / n): within 4 of those."""
    from samplers.accuracy import kl_noise_floor
    from samplers.cli import save_npz
    from samplers.targets.presets import get_potential
    spec = "expr:y^2/12.5 + x^2*exp(-y)/2 + y/2"
    rng = np.random.default_rng(11)
    y = rng.normal(0.0, 2.5, 200_000)
    theta = np.stack([rng.normal(size=y.size) * np.exp(y / 2), y], axis=1).reshape(200, 1000, 2)
    path = tmp_path / "funnel.npz"
    save_npz(path, theta=theta, meta=np.array(json.dumps(dict(potential=spec, sampler="exact"))))
    capsys.readouterr()
    assert main(["diagnose", str(path)]) == 0
    kl = float(next(line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("KL")))
    floor = kl_noise_floor(get_potential(spec), theta)
    assert abs(kl - floor) <= 4 * np.sqrt(floor / y.size) + 0.02 * floor


def test_box_is_set_recorded_and_scored_on(tmp_path, capsys):
    """Issue 25: the CLI could not set a box at all. `sample --box` draws the target on it and records it, `diagnose`
    scores on the recorded box, and `diagnose --box` on another."""
    from samplers.accuracy import score
    from samplers.targets.presets import get_potential
    spec = "expr:y^2/12.5 + x^2*exp(-y)/2 + y/2"
    path = tmp_path / "f.npz"
    assert main(["sample", "--sampler", "sgld", "--potential", spec, "--box=-10,10,-8,8", "--set", "eps=0.01",
                 "--steps", "50", "--chains", "40", "--out", str(path)]) == 0
    with np.load(path) as f:
        theta, meta = f["theta"], json.loads(str(f["meta"]))
    assert meta["box"] == [[-10.0, 10.0], [-8.0, 8.0]]

    def kl(*extra):
        capsys.readouterr()
        assert main(["diagnose", str(path), *extra]) == 0
        return float(next(line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("KL")))
    assert kl() == pytest.approx(score(get_potential(spec, box=((-10, 10), (-8, 8))), theta)["kl"], abs=1e-5)
    assert kl("--box=-3,3,-5,5") == pytest.approx(score(get_potential(spec, box=((-3, 3), (-5, 5))), theta)["kl"],
                                                  abs=1e-5)
    assert kl("--box=-3,3,-5,5") != kl()


@pytest.mark.parametrize("box, message", [
    ("--box=1,-1", "each lo < hi"), ("--box=-1,1,2", "lo,hi (1-d) or lo,hi,lo,hi (2-d)"), ("--box=a,b", "numbers"),
    ("--box=-inf,1", "each lo < hi"), ("--box=-3,3", "needs 2 (lo, hi) pairs"),
])
def test_a_bad_box_is_one_line_and_exit_2(box, message, tmp_path):
    out = cli("sample", "--sampler", "sgld", "--potential", "banana", box, "--steps", "2", "--out",
              str(tmp_path / "b.npz"))
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_box_is_in_the_help():
    assert "--box=-10,10,-8,8" in cli("sample", "--help").stdout.replace("\n", " ").replace("  ", "")
    assert "--box" in cli("diagnose", "--help").stdout


def test_sample_in_float32(tmp_path, capsys):
    """--dtype float32 (issue 32): a float32 file that says so, reproducible, diagnosable; float64 writes no key."""
    args = ["sample", "--sampler", "sgld", "--potential", "gaussian", "--grad-noise", "1", "--steps", "200",
            "--chains", "500", "--seed", "3"]
    a, b, c = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "c.npz"
    assert main(args + ["--dtype", "float32", "--out", str(a)]) == 0
    assert main(args + ["--dtype", "float32", "--out", str(b)]) == 0
    assert main(args + ["--out", str(c)]) == 0
    assert a.read_bytes() == b.read_bytes()
    with np.load(a) as f, np.load(c) as g:
        assert f["theta"].dtype == np.float32 and g["theta"].dtype == np.float64
        assert json.loads(str(f["meta"]))["dtype"] == "float32" and "dtype" not in json.loads(str(g["meta"]))
    capsys.readouterr()
    assert main(["diagnose", str(a)]) == 0
    assert "KL" in capsys.readouterr().out
    assert main(args + ["--dtype", "float16", "--out", str(a)]) == 2


def test_estimators_from_the_command_line_and_diagnose_beyond_two_parameters(tmp_path, monkeypatch, capsys):
    """sgld-cv and --estimator/--sampling run a data posterior of four weights; diagnose scores the file marginal
    by marginal against an HMC reference it runs once and then reads from its cache."""
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 3))
    y = rng.random(300) < 1 / (1 + np.exp(-x @ [1.0, -1.0, 0.5]))
    csv = tmp_path / "d.csv"
    csv.write_text("\n".join(",".join(f"{v:.4f}" for v in row) + f",{int(c)}" for row, c in zip(x, y)))
    spec = f"logistic-csv:{csv}"
    out = tmp_path / "cv.npz"
    assert main(["sample", "--sampler", "sgld-cv", "--potential", spec, "--batch", "10", "--steps", "1000",
                 "--thin", "10", "--chains", "20", "--set", "eps=1e-3", "--out", str(out)]) == 0
    with np.load(out) as f:
        meta = json.loads(str(f["meta"]))
    assert meta["sampler"] == "sgld-cv" and "control variates" in meta["gradient"]
    capsys.readouterr()
    assert main(["diagnose", str(out)]) == 0
    text = capsys.readouterr().out
    assert "reference: HMC with Metropolis" in text and text.count(" KS ") == 4 and text.count(" W1 ") == 4, text
    assert list((tmp_path / "cache" / "reference").glob("*.npz"))
    assert main(["sample", "--sampler", "sgld", "--estimator", "svrg", "--sampling", "epochs", "--potential", spec,
                 "--batch", "10", "--steps", "10", "--chains", "4", "--out", str(tmp_path / "svrg.npz")]) == 0
    with np.load(tmp_path / "svrg.npz") as f:
        meta = json.loads(str(f["meta"]))
    assert meta["estimator"] == "svrg" and "SVRG" in meta["gradient"] and "epochs" in meta["gradient"]
    assert main(["sample", "--sampler", "sgld", "--estimator", "cv", "--potential", spec, "--steps", "10",
                 "--out", str(tmp_path / "x.npz")]) == 2
    assert "give a batch size" in capsys.readouterr().err
