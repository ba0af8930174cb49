"""Escaped chains (issue 25, item 3): a chain that reaches an energy no draw of the target plausibly has is
counted and reported beside the diverged ones, by `run`, `sample` (its meta and output) and `diagnose`; scores
give the share of samples outside the target's box; and Bhat=auto at a step it cannot take is refused before the
run, naming the field."""
import json

import numpy as np
import pytest
from scipy import stats

from samplers.accuracy import ESCAPE_ALPHA, energy_bound, escaped_chains, score
from samplers.cli import main
from samplers.registry import build_sampler
from samplers.run import run
from samplers.targets.presets import get_potential

# the "Why": mass at r = 2.6 +- 0.13
RING = "expr:(sqrt(x^2+y^2+1e-6)-2.6)^2/0.033"
RING_RUN = ["--potential", RING, "--steps", "1000", "--burn", "200", "--chains", "200", "--seed", "1"]


def grid_draws(potential, n, rng):
    """Exact draws of a 2-D typed target up to the grid's resolution: a cell of the normalised grid by its
    mass, then uniform within it."""
    (x, y), dens = potential.grid(401)
    p = dens.ravel() / dens.sum()
    k = rng.choice(p.size, n, p=p)
    i, j = np.unravel_index(k, dens.shape)
    hx, hy = x[1] - x[0], y[1] - y[0]
    return np.stack([x[i] + hx * (rng.random(n) - 0.5), y[j] + hy * (rng.random(n) - 0.5)], axis=-1)


def test_naive_sghmc_on_the_ring_reports_escaped_chains(tmp_path, capsys):
    """The issue's case: main said '0 diverged' with 5 % of the samples beyond r = 3.5."""
    out = tmp_path / "ring.npz"
    assert main(["sample", "--sampler", "sghmc-naive", "--set", "eps=0.1", *RING_RUN, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with np.load(out) as f:
        meta, theta = json.loads(str(f["meta"])), f["theta"]
    r = np.hypot(theta[..., 0], theta[..., 1])
    far = (r > 3.5).any(axis=0)           # U - min U > 24 there: the Gamma(2, 1) bound for 2e5 draws is 19.8
    assert meta["diverged"] == 0 and meta["escaped"] >= far.sum() > 20, (meta, far.sum())
    assert f"0 diverged chains, {meta['escaped']} escaped" in printed and "warning:" in printed
    assert main(["diagnose", str(out)]) == 0
    diag = capsys.readouterr().out
    assert f"0 diverged, {meta['escaped']} escaped" in diag
    outside = float(next(line for line in diag.splitlines() if line.startswith("OUT")).split()[1])
    assert outside == pytest.approx(((np.abs(theta) > 4).any(axis=-1)).mean(), abs=1e-5)


def test_a_corrected_run_and_exact_draws_escape_nowhere(tmp_path):
    """The count's false alarms: exact draws of the ring (the same 200 x 1000 states) and SGHMC with friction
    at a small step report none, the bound being the (1 - alpha/n) quantile of Gamma(2, 1)."""
    pot = get_potential(RING)
    theta = grid_draws(pot, 200_000, np.random.default_rng(0)).reshape(1000, 200, 2)
    assert not escaped_chains(pot, theta).any()
    assert score(pot, theta)["outside"] == 0.0
    res = run(build_sampler("sghmc", pot, eps=0.02), steps=1000, chains=200, burn=500, seed=1)
    assert res.diverged == 0 and res.escaped == 0 and "escaped" not in res.meta


@pytest.mark.parametrize("dim", [1, 2, 10])
def test_the_energy_bound_holds_for_exact_gaussian_draws(dim):
    """U - min U of a Gaussian is Gamma(d/2, 1), inside Gamma(d, 1): over 1e6 draws the largest stays under the
    bound; and the bound is not slack without end: it is below the Gamma(d/2) quantile at alpha/n * 1e-6."""
    n = 1_000_000
    e = stats.gamma.rvs(dim / 2, size=n, random_state=np.random.default_rng(dim))
    assert e.max() < energy_bound(dim, n)
    assert energy_bound(dim, n) < stats.gamma.isf(ESCAPE_ALPHA / n * 1e-6, dim / 2)


def test_escaped_chains_are_told_apart_from_diverged_ones():
    pot = get_potential("gaussian")
    theta = np.zeros((10, 4, 1))
    theta[5, 1] = 12.0            # U = 72: implausible among 40 draws (bound 7.0)
    theta[:, 3] = 40.0            # a frozen chain far out
    assert escaped_chains(pot, theta).tolist() == [False, True, False, True]
    assert escaped_chains(pot, theta, alive=[True, True, True, False]).tolist() == [False, True, False, False]
    # a tempered law exp(-beta U) is narrower: the same state is further out in its energy
    theta[5, 1] = 3.3
    assert not escaped_chains(pot, theta)[1] and escaped_chains(pot, theta, beta=4.0)[1]


BHAT_RUN = ["sample", "--sampler", "sgld", "--potential", "logistic", "--batch", "50", "--set", "Bhat=auto",
            "--steps", "40", "--chains", "16", "--seed", "3"]


def test_bhat_auto_at_a_step_it_cannot_take_is_refused_before_the_run(tmp_path, capsys):
    """The issue's case: it aborted midway with a RecipeError. Now one line naming Bhat=auto and the largest
    step it can take, no file written; and that step runs through (the bound is not a guess)."""
    out = tmp_path / "b.npz"
    assert main([*BHAT_RUN, "--set", "eps=0.01", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Bhat=auto: at eps = 0.01") and "take eps <=" in err and not out.exists()
    bound = float(err.split("take eps <= ")[1].split(",")[0])
    assert main([*BHAT_RUN, "--set", f"eps={bound}", "--out", str(out)]) == 0 and out.exists()
    assert main([*BHAT_RUN, "--set", f"eps={4 * bound}", "--out", str(out)]) == 2


def test_the_lab_counts_escaped_chains_and_the_share_outside_its_box():
    """Issue 25, item 3, in the lab: the ring's naive SGHMC run shows its escaped chains and the share of its
    samples outside the box beside the diverged ones; the corrected run beside it shows none escaped."""
    from app.model.config import LabConfig
    from app.model.lab import Lab
    lab = Lab(LabConfig(potential=RING, sampler="sghmc-naive", params={"eps": "0.1"}, compare=True,
                        sampler_b="sghmc", params_b={"eps": "0.01"}, chains=200, seed=1, speed=50, burn=200))
    assert not lab.blocks
    lab.play()
    for _ in range(16):
        lab.frame(50)     # the speed, whatever the machine's load (a timed frame stops early when busy)
    a, b = (run.metrics() for run in lab.runs)
    assert a["diverged"] == 0 and a["escaped"] > 0 and a["outside"] > 0.001, a
    assert b["escaped"] == 0, b


def test_a_box_in_the_link_is_the_box_the_lab_draws_and_scores_on():
    """Issue 25, item 2: `box=` in a link (the CLI's --box) sets the typed target's box; a bad box is refused
    with the reason, naming the setting, and the lab keeps its own."""
    from app.model.config import LabConfig
    from app.model.lab import Lab
    from app.model.urlstate import from_query, parse_search, query_string
    upd, errors = from_query({"pot": "expr:y^2/18 + x^2*exp(-y)/2 + y/2", "box": "-30,30,-10,10"})
    assert not errors
    lab = Lab(LabConfig(**upd, chains=100))
    assert not lab.blocks and [tuple(b) for b in lab.runs[0].pot.box[:2]] == [(-30, 30), (-10, 10)]
    assert "box=-30%2C30%2C-10%2C10" in query_string(lab.config) or "box=-30,30,-10,10" in query_string(lab.config)
    assert from_query(parse_search(query_string(lab.config)))[0]["box"] == "-30,30,-10,10"
    for bad in ("3,1", "a,b", "1,2,3"):
        upd, errors = from_query({"box": bad})
        assert upd == {} and len(errors) == 1 and "box" in str(errors[0]).lower(), errors
