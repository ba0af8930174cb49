"""The lab's designed sampler without a browser: the design as data (app/model/design.py), in the lab as side A
or B, in a link and a YAML file, and its editor's widgets in process (app/views/design.py)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from app.model import design as dm
from app.model import runner
from app.model.config import LabConfig
from app.model.lab import RESIDUAL_OK, Lab, trial_build
from app.model.reasons import BlockKind
from app.model.urlstate import from_query, parse_search, query_string
from samplers.design import DesignError

SGNHT_CELLS = [("D", 1, 1, "1"), ("Q", 0, 1, "-1"), ("Q", 1, 0, "1"), ("Q", 1, 2, "r"), ("Q", 2, 1, "-r")]
SGNHT_K = "r**2/2 + (xi - 1)**2/2"


def sgnht_from_empty() -> dict:
    data = dm.add_aux(dm.add_aux(dm.empty_design(1), "r"), "xi")
    data = dm.set_kinetic(data, SGNHT_K)
    for which, i, j, text in SGNHT_CELLS:
        data = dm.set_cell(data, which, i, j, text)
    return data


@pytest.mark.parametrize("name", dm.preset_names())
def test_every_preset_round_trips_through_a_link_and_a_yaml_file(name):
    data = dm.preset(name)
    assert dm.from_json(dm.to_json(data)) == data
    assert dm.from_yaml(dm.to_yaml(data)) == data


def test_auxiliary_variables_are_added_renamed_everywhere_and_removed():
    data = sgnht_from_empty()
    assert data["aux"] == ["r", "xi"] and len(data["D"]) == 3 and data["Q"][1][2] == "r"
    renamed = dm.rename_aux(data, 0, "p")
    assert renamed["kinetic"] == "p**2/2 + (xi - 1)**2/2" and renamed["Q"][1][2] == "p" and renamed["Q"][2][1] == "-p"
    removed = dm.remove_aux(renamed, 1)
    assert removed["aux"] == ["p"] and removed["Q"] == [["0", "-1"], ["1", "0"]]
    for bad, words in [("__class__", "aux.2: '__class__' is not a name"), ("theta", "is the target's"),
                       ("r", "already a name"), ("sqrt", "reserved")]:
        with pytest.raises(dm.DesignError, match=words):
            dm.add_aux(data, bad)
    full = data
    for k in range(3):
        full = dm.add_aux(full, f"s{k}")
    with pytest.raises(dm.DesignError, match="at most 6 variables"):
        dm.add_aux(full, "s9")


def test_parameters_are_typed_as_one_line_and_checked_naming_the_item():
    data = dm.preset("sgnht")
    assert dm.params_text(data) == "eps = 0.02, A = 1"
    assert dm.set_params(data, "eps = 0.01, A = 2")["params"] == {"eps": 0.01, "A": 2}
    for text, words in [("eps = abc", "params.eps: 'abc' is not a number"), ("A 2", "is not name = value"),
                        ("__x = 1", "'__x' is not a name")]:
        with pytest.raises(dm.DesignError, match=words):
            dm.set_params(data, text)


def test_sgnht_built_from_the_empty_design_is_stationary_and_samples_the_target():
    lab = Lab(LabConfig(potential="double-well", sampler=dm.DESIGN, chains=1000, V=0.0))
    assert not lab.blocks and lab.sides[0].residual is not None      # the empty design: nothing moves, still a recipe
    lab.config.design = sgnht_from_empty()
    assert not lab.blocks, lab.blocks
    side = lab.sides[0]
    assert side.residual < RESIDUAL_OK and side.exact and side.sampler.n == 3
    assert lab.frame(2000)
    assert lab.runs[0].metrics()["kl"] < 0.05


def test_a_bad_cell_blocks_with_a_message_naming_it_and_the_cell_marked():
    lab = Lab(LabConfig(potential="double-well", sampler=dm.DESIGN, chains=100))
    good = sgnht_from_empty()
    lab.config.design = good
    for which, i, j, text, words in [("D", 1, 1, "-1", "D[r,r] = -1"), ("Q", 1, 2, "r +", "Q[r,xi]"),
                                     ("Q", 1, 2, "zeta", "Q[r,xi]")]:
        lab.config.design = dm.set_cell(good, which, i, j, text)
        block = lab.blocks["config"]
        assert block.kind is BlockKind.RECIPE and words in block.message and (which, i, j) in block.cells, block
        assert lab.runs, "the last good run stays on screen, blocked"
    lab.config.design = dm.set_kinetic(good, "r**")
    assert ("kinetic",) in lab.blocks["config"].cells
    lab.config.design = good
    assert not lab.blocks


def test_the_design_runs_as_side_b_beside_a_named_sampler():
    cfg = LabConfig(potential="double-well", sampler="sghmc", compare=True, sampler_b=dm.DESIGN,
                    design=dm.preset("relativistic-sghmc"), chains=200)
    lab = Lab(cfg)
    assert not lab.blocks and [s.sampler.spec.name for s in lab.sides] == ["sghmc", "relativistic-sghmc"]
    assert lab.frame(5)
    query = parse_search(query_string(lab.valid_config))
    assert query["sb"] == dm.DESIGN and json.loads(query["design"])["name"] == "relativistic-sghmc"


def test_the_whole_design_travels_in_the_link_and_bad_ones_are_dropped_with_a_message():
    data = sgnht_from_empty()
    cfg = LabConfig(potential="double-well", sampler=dm.DESIGN, design=data)
    upd, errors = from_query(parse_search(query_string(cfg)))
    assert upd["design"] == data and upd["sampler"] == dm.DESIGN and not errors
    assert "design" not in query_string(LabConfig(design=data))       # only while a side runs it
    seven = [["0"] * 7 for _ in range(7)]
    hostile = {
        "[1": "not JSON",
        '"a string"': "a mapping of keys",
        '{"aux":["__import__"],"D":[["1"]],"Q":[["0"]]}': "'__import__' is not a name",
        json.dumps({"aux": [], "D": seven, "Q": seven}): "at most 6 variables",
        '{"D":[["1"]],"Q":[[{"a":1}]]}': "Q[theta,theta]: expected an expression",
        '{"D":[["1"]],"Q":[["0"]],"evil":1}': "unknown key 'evil'",
        "x" * 7000: "too long",
    }
    for text, words in hostile.items():
        upd, errors = from_query({"s": dm.DESIGN, "design": text})
        assert "design" not in upd and len(errors) == 1 and words in errors[0], (text[:40], errors)


def test_a_design_too_slow_to_derive_is_refused_within_the_limit_and_says_so(monkeypatch):
    cfg = LabConfig(potential="double-well", sampler=dm.DESIGN, design=dm.preset("sgnht"), chains=100)
    assert "this design is too expensive to build: it took longer than 0.001 s" in trial_build(
        cfg, False, False, limit_s=0.001)
    monkeypatch.setitem(runner.LIMIT_S, "typed build", 0.001)
    lab = Lab(cfg, schedule=lambda fn: fn())     # built as on a server: through the guarded worker
    deadline = time.monotonic() + 60
    while "config" not in lab.blocks:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    block = lab.blocks["config"]
    assert block.kind is BlockKind.RECIPE and "too expensive" in block.message and not lab.runs


# -- the editor's widgets, in process --------------------------------------------------------------------
@pytest.fixture
def editor():
    from app.views.lab import LabView
    lab = Lab(LabConfig(potential="double-well", sampler=dm.DESIGN, chains=100))
    view = LabView(lab)
    assert not view.recipe_card.collapsed       # a design opens on its editor
    view._build_recipe_now()
    return lab, view.designer


def test_the_editor_builds_sgnht_from_empty_by_its_widgets(editor):
    lab, ed = editor
    ed.preset.value = dm.EMPTY
    for name in ("r", "xi"):
        ed.new_aux.value = name
        ed.add.clicks += 1
    ed.kinetic.value = SGNHT_K
    for which, i, j, text in SGNHT_CELLS:
        ed.cells[which][i][j].value = text
    assert lab.config.design == sgnht_from_empty() and not lab.blocks
    assert "stationary: a recipe" in ed.badge.object and "\\xi" in ed.math["sde"].object
    ed.cells["D"][1][1].value = "-1"
    assert "cell-bad" in ed.cells["D"][1][1].css_classes and "D[r,r]" in ed.error.object
    assert ed.math["sde"].object == "" and ed.badge.object == ""


def test_the_editor_escapes_what_users_typed_and_names_upload_errors_by_line(editor):
    lab, ed = editor
    ed.new_aux.value = "<b>"
    ed.add.clicks += 1
    assert "&lt;b&gt;" in ed.aux_error.object and "<b>" not in ed.aux_error.object
    ed.upload.filename = "x.yaml"
    ed.upload.value = b"aux: [r]\nkinetic: r**2/2\nD: [[0, 0], [0, 1]]\nQ: [[0, -1], [1]]\n"
    assert "line 4, column 14: Q is not square" in ed.upload_status.object
    text = dm.to_yaml(dm.preset("sgnht") | {"description": "<img src=x onerror=alert(1)>"})
    ed.upload.value = text.encode()
    assert lab.config.design["description"].startswith("<img") and "<img" not in ed.extra.object
    assert "&lt;img" in ed.extra.object
    assert np.isclose(lab.sides[0].residual, 0, atol=RESIDUAL_OK)


def test_on_a_target_of_many_dimensions_the_editor_says_so_instead_of_a_grid(editor):
    lab, ed = editor
    lab.config.param.update(potential="gaussian-100d", sampler="sgld")     # built: the lab's target is 100-D
    lab.config.param.update(compare=True, sampler_b=dm.DESIGN)            # the empty design there would be 100x100
    assert "at most 6 variables" in lab.blocks["config"].message
    assert not ed.cells["D"] and "at most 6 variables" in ed.note.object
    ed.preset.value = "sgnht"          # a preset brings a target it fits
    assert lab.config.potential == "double-well" and not lab.blocks and len(ed.cells["D"]) == 3


def test_an_upload_is_read_in_a_sandbox_held_to_its_limit(monkeypatch):
    """Read on the event loop, 4 kB of nested brackets took 0.6-11 s to refuse (issue 28); in a sandbox a read
    that runs past the limit is killed and refused in the same words as any bad file."""
    good = dm.to_yaml(dm.preset("sgnht"))
    assert dm.read_upload(good) == dm.from_yaml(good)
    with pytest.raises(DesignError, match="line 4, column 14: Q is not square"):
        dm.read_upload("aux: [r]\nkinetic: r**2/2\nD: [[0, 0], [0, 1]]\nQ: [[0, -1], [1]]\n")
    monkeypatch.setitem(runner.LIMIT_S, "typed build", 0.0)
    with pytest.raises(DesignError, match="took longer than 0 s"):
        dm.read_upload(good)


def test_an_upload_on_a_served_page_is_read_off_the_loop(editor):
    lab, ed = editor
    pending = []
    lab.runner.deliver = pending.append                 # a session loop: the read now goes to a worker
    ed.upload.filename = "x.yaml"
    ed.upload.value = dm.to_yaml(dm.preset("sgnht")).encode()
    assert ed.upload_status.object == "reading the file…"
    deadline = time.monotonic() + 60                     # a liveness bound only
    while not pending:
        assert time.monotonic() < deadline, "the upload was never read"
        time.sleep(0.01)
    lab.runner.deliver = None
    for fn in pending:
        fn()
    assert ed.upload_status.object == "" and lab.config.design == dm.preset("sgnht")
