"""Design files (docs/recipes.md): every shipped design is stationary and samples its target (KL against the
exact law, with the Monte Carlo floor checked), the broken one is measurably wrong, a designed SGHMC is the
catalogue's step for step, malformed files are refused naming their key or cell, and the CLI's exit codes."""
import json
import subprocess
import sys

import numpy as np
import pytest

from samplers.cli import main
from samplers.design import (
    DesignError,
    check,
    design_recipe,
    design_sampler,
    example_names,
    load_design,
    parse_design,
    recipe_from_dict,
    sampler_from_file,
)
from samplers.engine.edit import MAX_CELL_TERMS
from samplers.registry import build_sampler
from tests.test_statistical import KL_TOL, kl_run

BROKEN = "broken-metric-langevin"
TARGET = {"irreversible-langevin": "correlated-gaussian"}     # the 2-D design; the others are 1-D
CORRECT = [n for n in example_names() if n != BROKEN]

MINIMAL = """\
aux: [r]                  # auxiliary variables, in state order after theta
kinetic: "r**2/2"         # K; H = U(theta) + K
D: [["0", "0"], ["0", "1"]]
Q: [["0", "-1"], ["1", "0"]]
naive: gamma              # optional: the term the naive variant drops
"""


def test_the_shipped_designs_are_the_documented_ones():
    assert set(example_names()) == {"relativistic-sghmc", "sgnht", "irreversible-langevin", "laplace-momentum",
                                    BROKEN}


def test_the_minimal_form_is_accepted_as_written():
    design = parse_design(MINIMAL)
    assert (design.dim, design.aux, design.naive) == (1, ("r",), "gamma")
    recipe = design_recipe(design)
    assert recipe.n == 2 and not recipe.Gamma.const.any()
    assert check(design, "gaussian").ok


@pytest.mark.parametrize("name", example_names())
def test_stationarity_verdict(name):
    report = check(load_design(name), TARGET.get(name, "double-well"))
    if name == BROKEN:
        assert not report.ok and report.residual.relative > 0.05, report.residual.relative
    else:
        assert report.ok and report.residual.relative < 1e-8, report.residual.relative


@pytest.mark.parametrize("name", CORRECT)
def test_theta_marginal_matches_the_exact_law(name):
    s = sampler_from_file(name, TARGET.get(name, "double-well"))
    sc, floor, _ = kl_run(s)
    assert floor < KL_TOL / 3, f"too few effective samples to test KL <= {KL_TOL}: floor {floor:.4f}"
    assert sc["kl"] <= KL_TOL, f"{name}: KL {sc['kl']:.4f} (Monte Carlo floor {floor:.4f})"


def test_the_broken_design_is_measurably_wrong_and_right_without_its_drop():
    """The same harness: Gamma dropped from D(theta) = 2/(1 + theta^2) misses by many times the tolerance; the
    same file without its `drop` line passes."""
    broken = load_design(BROKEN)
    sc, floor, _ = kl_run(design_sampler(broken, "double-well"))
    assert floor < KL_TOL / 3 and sc["kl"] > 3 * KL_TOL, (sc["kl"], floor)
    data = dict(broken.marked.data)
    del data["drop"]
    sc, floor, _ = kl_run(design_sampler(load_design(data), "double-well"))
    assert sc["kl"] <= KL_TOL, (sc["kl"], floor)


def test_the_naive_sgnht_leaves_the_target():
    """Gamma_xi = -1 is the thermostat's pull to r^2 = 1: without it the chain heats."""
    design = load_design("sgnht")
    assert [str(g) for g in check(design, "double-well").gamma] == ["0", "0", "-1"]
    assert not check(design, "double-well", naive=True).ok
    sc, _, _ = kl_run(design_sampler(design, "double-well", naive=True), chains=500, steps=200, burn=500)
    assert sc["kl"] > 10 * KL_TOL


SGHMC_DESIGN = dict(aux=["r"], kinetic="r**2/(2*M)", D=[["0", "0"], ["0", "C"]], Q=[["0", "-1"], ["1", "0"]],
                    blocks=[["r"], ["theta"]], params=dict(eps=0.07, C=1.5, M=2))


@pytest.mark.parametrize("name, design, params", [
    ("sghmc", SGHMC_DESIGN, dict(eps=0.07, C=1.5, M=2.0)),
    ("sghmc", {k: v for k, v in SGHMC_DESIGN.items() if k != "blocks"}, dict(eps=0.07, C=1.5, M=2.0)),
    ("sgnht", "sgnht", dict(eps=0.02, A=1.0)),
])
def test_a_designed_sampler_is_the_catalogues_step_for_step(name, design, params):
    """One random stream (gradient noise, then injected noise): the designed recipe through the engine equals
    the named sampler's engine step and its fast path."""
    designed = design_sampler(load_design(design), "double-well", V=1.0)
    named = build_sampler(name, "double-well", 1.0, **params)
    z0 = named.init_state(50, np.random.default_rng(0))
    paths = []
    for step in (designed.engine_step, named.engine_step, named.step):
        rng, z = np.random.default_rng(3), z0
        out = []
        for t in range(1, 41):
            z, _ = step(z, rng, t)
            out.append(z)
        paths.append(np.array(out))
    np.testing.assert_allclose(paths[0], paths[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(paths[0], paths[2], rtol=0, atol=1e-9)
    assert np.abs(paths[0][-1] - z0).max() > 0.1


# Issue 25, "Designs": a Q that depends on theta, written as a user would, without a `blocks` line: the speed
# at which theta follows r grows with |theta|. On today's main it was stepped by explicit Euler and diverged.
THETA_Q = """\
aux: [r]
kinetic: "r**2/2"
D: [["0", "0"], ["0", "1"]]
Q: [["0", "-(2 + theta**2)"], ["2 + theta**2", "0"]]
params: {eps: 0.01}
"""
QUARTIC = "expr:x^4"


def tv_noise_floor(potential, theta) -> float:
    """Expected TV of the histogram from Monte Carlo error alone: E|p_b - q_b| = sqrt(2 Var(p_b) / pi) for a
    normal error, Var(p_b) from the spread between independent chains (which accounts for autocorrelation)."""
    from samplers.accuracy import edges_for
    edges = edges_for(potential)
    counts = np.stack([np.histogram(theta[:, c, 0], edges)[0] for c in range(theta.shape[1])])
    var = (counts / theta.shape[0]).var(axis=0, ddof=1) / theta.shape[1]
    return float(0.5 * np.sqrt(2 * var / np.pi).sum())


def _quartic_tv(text):
    from samplers.accuracy import score
    from samplers.run import run
    s = design_sampler(parse_design(text), QUARTIC)
    res = run(s, steps=2000, chains=200, burn=1000, seed=5)
    return score(s.potential, res.theta)["tv"], tv_noise_floor(s.potential, res.theta), res.diverged


def test_a_design_without_blocks_steps_aux_first_and_samples_a_quartic_well():
    """Done-when of issue 25: TV <= 0.04 at eps = 0.01, 200 chains (the issue's run). The floor check makes
    0.04 a statement about the sampler, not about the sample size; the same file with `blocks: euler` (what
    main did without a blocks line) misses it, so the test can fail."""
    design = parse_design(THETA_Q)
    assert [list(b) for b in design_recipe(design).blocks] == [[1], [0]]
    assert "{r} -> {theta} (default: auxiliary variables first" in "\n".join(check(design, QUARTIC).lines())
    tv, floor, diverged = _quartic_tv(THETA_Q)
    assert floor < 0.04 / 3, floor
    assert diverged == 0 and tv <= 0.04, (tv, floor, diverged)
    tv, _, diverged = _quartic_tv(THETA_Q + "blocks: euler\n")
    assert diverged > 0 and tv > 0.04, (tv, diverged)


def test_explicit_euler_is_available_by_name():
    design = parse_design(_yaml(blocks="euler"))
    assert design_recipe(design).blocks[0].tolist() == [0, 1] and len(design_recipe(design).blocks) == 1
    assert "{theta, r} (the file's blocks: plain explicit Euler)" in "\n".join(check(design, "gaussian").lines())
    with pytest.raises(DesignError, match="blocks must be 'euler'"):
        parse_design(_yaml(blocks="leapfrog"))


def test_a_d_coupling_theta_and_aux_keeps_one_block():
    """Blocks draw their noise apart: a D with a theta-aux entry would lose the correlation if split."""
    text = _yaml(D='[["1", "0.5"], ["0.5", "1"]]')
    design = parse_design(text)
    assert len(design_recipe(design).blocks) == 1
    assert "D couples theta with an auxiliary variable" in "\n".join(check(design, "gaussian").lines())


def test_constants_are_parameters():
    s = sampler_from_file("relativistic-sghmc", "double-well", c=2, eps=0.05)
    assert s.params["c"] == 2.0 and s.params["eps"] == 0.05
    assert str(s.recipe.kinetic) == "4*sqrt(r**2/4 + 1)"
    with pytest.raises(Exception, match="no parameter 'speed'"):
        sampler_from_file("relativistic-sghmc", "double-well", speed=2)


def _yaml(**keys) -> str:
    """The minimal design with keys replaced (a value of None removes the key), one key per line."""
    base = dict(aux='[r]', kinetic='"r**2/2"', D='[["0", "0"], ["0", "1"]]', Q='[["0", "-1"], ["1", "0"]]')
    base.update(keys)
    return "".join(f"{k}: {v}\n" for k, v in base.items() if v is not None)


HUGE = '"(theta + r + U + 2)**20"'


@pytest.mark.parametrize("text, message, line", [
    ("aux: [r\nD: 1\n", "not valid YAML", 2),
    (_yaml(D='[["0", "0"], ["0", "q"]]'), "D[r,r]: unknown name 'q'", 3),
    (_yaml(D='[["0", "0"], ["0"]]'), "D is not square: it has 2 rows but row 2 has 1 cells", 3),
    (_yaml(Q='[["0", "-1"], ["2", "0"]]'), "Q is not skew-symmetric: Q[theta,r] = -1 but Q[r,theta] = 2", 4),
    (_yaml(D='[["0", "0"], ["0", "-1"]]'), "D is not positive semidefinite: D[r,r] = -1 < 0", 3),
    (_yaml(D='[["1", "2"], ["2", "1"]]'), "D is not positive semidefinite: eigenvalue -1", 3),
    (_yaml(D='[["0", "0"], ["0", "r"]]', Q='[["0", "-1"], ["1", "0"]]', kinetic='"r**2/2 + r*theta"'),
     "D is not positive semidefinite: D[r,r] = -", 3),
    (_yaml(D='[["0", "r"], ["theta", "1"]]'), "D is not symmetric: D[theta,r] = r but D[r,theta] = theta", 3),
    (_yaml(aux="[__class__]"), "aux.0: '__class__' is not a name", 1),
    (_yaml(params="{__import__: 1}"), "params.__import__: '__import__' is not a name", 5),
    (_yaml(aux="[U]"), "aux.0: 'U' is reserved", 1),
    (_yaml(aux="[sign]"), "aux.0: 'sign' is reserved", 1),
    (_yaml(aux="[lambda]"), "aux.0: 'lambda' is reserved", 1),
    (_yaml(aux="[theta_2]"), "aux.0: 'theta_2' is the target's", 1),
    (_yaml(params="{r: 1}"), "params.r: 'r' is already a name", 5),
    (_yaml(D=f'[["0", "0"], ["0", {HUGE}]]'), "D[r,r]: too large multiplied out", 3),
    (_yaml(kinetic='"' + "exp(" * 50 + "r" + ")" * 50 + '"'), "kinetic: expression is nested too deeply", 2),
    (_yaml(kinetic='"U + r**2/2"'), "kinetic: unknown name 'U'", 2),
    (_yaml(aux="[r, s1, s2, s3, s4, s5]", D=str([["0"] * 7] * 7).replace("'", '"'),
           Q=str([["0"] * 7] * 7).replace("'", '"')), "D is 7x7: the state may have at most 6 variables", 3),
    (_yaml(aux="[r, s]"), "aux names 2 variables but D is 2x2: no room for theta", 1),
    (_yaml(kinetc='"r"'), "unknown key 'kinetc' (did you mean 'kinetic'?)", 5),
    ("aux: [r]\naux: [s]\nD: [[\"0\"]]\nQ: [[\"0\"]]\n", "'aux' is given twice", 2),
    (_yaml(D=None), "the design has no D", None),
    (_yaml(kinetic=None), "the design has no kinetic", None),
    (_yaml(naive="friciton"), "naive: 'friciton' is not a term that can be dropped", 5),
    (_yaml(blocks="[[r], [q]]"), "blocks: 'q' is not a state variable (z = (theta, r))", 5),
    (_yaml(blocks="[[r]]"), "blocks must update every state variable once: missing theta", 5),
    (_yaml(box="{s: [0, 1]}"), "box: 's' is not an auxiliary variable", 5),
    (_yaml(box="{r: [1, -1]}"), "box.r: low 1 must be below high -1", 5),
    (_yaml(params="{eps: fast}"), "params.eps must be a finite number, got fast", 5),
    (_yaml(D='[["0", "0"], ["0", true]]'), "D[r,r]: expected an expression", 3),
    (_yaml(aux="!!python/object/apply:os.system [echo pwned]"), "the tag tag:yaml.org,2002:python/object/apply:os",
     1),
    (_yaml(kinetic="!!python/object/apply:os.system echo"), "not valid YAML: could not determine a constructor", 2),
    ("- 1\n- 2\n", "the design must be a mapping", 1),
    ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{k}: &{k} [{', '.join(['*' + p] * 9)}]\n"
                                                  for p, k in zip("abcdef", "bcdefg")),
     "the design has more than 2,000 values", None),
])
def test_malformed_designs_name_their_key_or_cell(text, message, line):
    with pytest.raises(DesignError) as err:
        parse_design(text)
    assert message in str(err.value), str(err.value)
    assert "too large" not in message or f"at most {MAX_CELL_TERMS:,}" in str(err.value)
    assert err.value.line == line, str(err.value)
    if line is not None:
        assert str(err.value).startswith(f"line {line}, column {err.value.column}: ")


def test_the_state_budget_is_an_argument_and_dict_errors_name_the_key():
    with pytest.raises(DesignError, match="at most 2 variables"):
        load_design("sgnht", max_state=2)
    assert design_recipe(load_design("sgnht", max_state=3)).n == 3
    data = dict(aux=["r"], kinetic="r**2/2", D=[["0", "0"], ["0", "1"]], Q=[["0", "-1"], ["1", "0"]])
    assert recipe_from_dict(data, "gaussian").n == 2
    with pytest.raises(DesignError, match=r"^Q\[r,theta\]: unknown name 'x'"):
        recipe_from_dict(dict(data, Q=[["0", "-1"], ["x", "0"]]), "gaussian")
    with pytest.raises(DesignError, match="is for 1-dimensional theta .* 'banana' is 2-dimensional"):
        recipe_from_dict(data, "banana")


def test_a_file_error_names_the_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(_yaml(D='[["0", "0"], ["0", "q"]]'))
    with pytest.raises(DesignError, match=r"^mine\.yaml: line 3, column 23: D\[r,r\]: unknown name 'q'"):
        load_design(str(path))
    with pytest.raises(DesignError, match="cannot read design file"):
        load_design(str(tmp_path / "missing.yaml"))


def test_cli_sample_check_and_diagnose(tmp_path, capsys):
    out = tmp_path / "r.npz"
    args = ["sample", "--recipe", "relativistic-sghmc", "--potential", "double-well", "--set", "c=2",
            "--steps", "30", "--chains", "20", "--out", str(out)]
    assert main(args) == 0
    with np.load(out) as f:
        assert f["theta"].shape == (30, 20, 1)
        meta = json.loads(str(f["meta"]))
    assert meta["sampler"] == "relativistic-sghmc" and meta["params"]["c"] == 2.0 and meta["recipe"]
    assert main(["diagnose", str(out)]) == 0
    assert main(args[:-2] + ["--out", str(out), "--naive"]) == 0
    assert "Gamma is zero" in capsys.readouterr().out
    assert main(["check", "sgnht", "--potential", "double-well"]) == 0
    shown = capsys.readouterr().out
    assert "Gamma = (0, 0, -1)" in shown and "✓" in shown and r"\begin{aligned}" in shown
    assert main(["check", BROKEN, "--potential", "double-well"]) == 1
    assert "verdict: ✗" in capsys.readouterr().out
    path = tmp_path / "min.yaml"
    path.write_text(MINIMAL)
    assert main(["check", str(path), "--potential", "gaussian", "--naive"]) == 0


@pytest.mark.parametrize("args, message", [
    (["check", "BAD", "--potential", "gaussian"], "bad.yaml: line 3, column 23: D[r,r]: unknown name 'q'"),
    (["sample", "--recipe", "BAD", "--potential", "gaussian", "--steps", "5", "--out", "x.npz"], "D[r,r]"),
    (["sample", "--recipe", "sgnht", "--potential", "banana", "--steps", "5", "--out", "x.npz"],
     "is for 1-dimensional theta"),
    (["sample", "--recipe", "irreversible-langevin", "--naive", "--potential", "banana", "--steps", "5",
      "--out", "x.npz"], "names no naive variant"),
    (["sample", "--sampler", "sghmc", "--naive", "--potential", "gaussian", "--steps", "5", "--out", "x.npz"],
     "--naive goes with --recipe"),
    (["sample", "--recipe", "sgnht", "--set", "eps=-1", "--potential", "gaussian", "--steps", "5",
      "--out", "x.npz"], "eps must be > 0"),
    (["check", "nowhere.yaml", "--potential", "gaussian"], "cannot read design file"),
])
def test_cli_refuses_bad_designs_in_one_line(args, message, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(_yaml(D='[["0", "0"], ["0", "q"]]'))
    args = [str(bad) if a == "BAD" else str(tmp_path / a) if a == "x.npz" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_bad_design_file_gives_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("aux: [r]\nD: [[\"0\", \"0\"], [\"0\", \"1\"]]\nQ: [[\"0\", \"-1\"], [\"1\", \"0\"\n")
    out = subprocess.run([sys.executable, "-m", "samplers", "check", str(bad), "--potential", "gaussian"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.startswith("error: bad.yaml: line ") and "not valid YAML" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("text", ["[" * 2000, "D: " + "[" * 2000, "D: " + "{a: " * 1000 + "1" + "}" * 1000],
                         ids=["brackets", "brackets under a key", "braces"])
def test_deeply_nested_brackets_are_refused_before_yaml_parses_them(text, monkeypatch):
    """PyYAML recursed to Python's limit before refusing these, 0.6-11 s on the server's loop (issue 28)."""
    import yaml

    from samplers.design import yamlfile

    def not_parsed(*args, **kwargs):
        raise AssertionError("parsed")
    monkeypatch.setattr(yaml, "compose", not_parsed)
    with pytest.raises(yamlfile.DesignError, match="nested too deeply"):
        yamlfile.read_yaml(text)
