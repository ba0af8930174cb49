"""The Paper figures section's model (app/model/figures.py): which files belong to which reproduction,
under which paper and title, with the verdicts the run recorded, and numbers rounded for reading."""
from __future__ import annotations

import re

import pytest

from app.model.figures import catalogue, display_number, display_table, preview
from samplers.reproduce import REPRODUCTIONS
from samplers.reproduce.base import Claim, Outcome, write


def significant_digits(shown: str) -> int:
    mantissa = shown.split("×")[0].lstrip("-")
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits if "." in mantissa else digits.rstrip("0"))


@pytest.mark.parametrize("text, shown", [
    ("0.8310643122827726", "0.8311"), ("0.0012079647740839273", "0.001208"), ("0.00014719262251", "0.0001472"),
    ("835.5", "835.5"), ("1923.0", "1923"), ("12345.678", "12350"), ("-0.021346", "-0.02135"), ("0.0", "0"),
    ("8.278142744450909e-07", "8.278×10⁻⁷"), ("3e-05", "3×10⁻⁵"), ("2.5e10", "2.5×10¹⁰"),
    ("40000", "40000"), ("1923", "1923"),                           # counts are exact: never rounded
    ("h=0.1", "h=0.1"), ("sgrhmc-naive", "sgrhmc-naive"), ("", ""), ("nan", "nan"),
])
def test_numbers_are_shown_to_four_significant_digits(text, shown):
    assert display_number(text) == shown
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?", text) and not text.isdigit():
        assert significant_digits(display_number(text)) <= 4


def _write(folder, name, holds=(True, False, None), figure=True):
    rep = REPRODUCTIONS[name]
    claims = [Claim(f"claim {i}", h, f"evidence {i}", decides="" if h is not None else f"interval {i}")
              for i, h in enumerate(holds)]
    rows = [dict(method="SCIR", ks=0.09605026393, samples=40000), dict(method="exact", ks=2.815e-07, samples=1000)]
    write(rep, Outcome(rows, claims, settings=dict(seed=0), paper="boxplots only"), folder)
    if figure:
        (folder / f"{name}.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        (folder / f"{name}.svg").write_text("<svg/>")


def test_files_are_grouped_under_their_reproduction_and_paper(tmp_path):
    out = tmp_path / "reproductions"
    _write(out, "scir-fig1")
    _write(out, "recipe-fig2-left", holds=(True,), figure=False)
    (tmp_path / "speed.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    (out / "old-experiment.json").write_text("{}")
    cat = catalogue(tmp_path)

    # every reproduction of the table, grouped by paper in the table's order
    assert [f.name for p in cat.papers for f in p.figures] == list(REPRODUCTIONS)
    assert [p.authors for p in cat.papers][0] == REPRODUCTIONS["recipe-fig2-left"].paper.authors
    scir = next(p for p in cat.papers if any(f.name == "scir-fig1" for f in p.figures))
    assert scir.title == "Large-scale stochastic sampling from the probability simplex"
    assert [f.name for f in scir.figures][:2] == ["scir-fig1", "scir-fig2"]

    fig = next(f for f in scir.figures if f.name == "scir-fig1")
    assert fig.title == REPRODUCTIONS["scir-fig1"].title and fig.source == REPRODUCTIONS["scir-fig1"].source
    assert [(v.claim, v.mark, v.evidence) for v in fig.verdicts] == [("claim 0", "✓", "evidence 0"),
                                                                    ("claim 1", "✗", "evidence 1"),
                                                                    ("claim 2", "?", "evidence 2")]
    assert [v.word for v in fig.verdicts] == ["holds", "does not hold", "not decidable here"]
    assert fig.verdicts[2].decides == "interval 2" and fig.verdicts[0].decides == ""
    assert fig.paper_numbers == "boxplots only" and fig.settings == (("seed", "0"),) and fig.recorded
    assert fig.image.name == "scir-fig1.png"                      # the PNG, not its SVG twin
    assert [p.name for p in fig.downloads] == ["scir-fig1.csv", "scir-fig1.png", "scir-fig1.svg"]

    left = cat.papers[0].figures[0]
    assert left.name == "recipe-fig2-left" and left.image is None and left.table.name == "recipe-fig2-left.csv"
    not_run = next(f for p in cat.papers for f in p.figures if f.name == "chen-fig1")
    assert not not_run.recorded and not not_run.verdicts and not not_run.downloads

    assert sorted(p.name for p in cat.others) == ["notes.csv", "old-experiment.json", "speed.png"]
    assert {p.name: preview(p, cat.others) for p in cat.others} == {
        "notes.csv": "table", "old-experiment.json": None, "speed.png": "image"}
    assert not cat.empty and catalogue(tmp_path / "nothing").empty


def test_the_table_is_rounded_for_display_and_the_file_keeps_every_digit(tmp_path):
    _write(tmp_path, "scir-fig1")
    path = tmp_path / "scir-fig1.csv"
    header, rows, left_out = display_table(path)
    assert header == ["method", "ks", "samples"] and left_out == 0
    assert rows == [["SCIR", "0.09605", "40000"], ["exact", "2.815×10⁻⁷", "1000"]]
    assert "0.09605026393" in path.read_text()
    assert display_table(path, max_rows=1)[2] == 1


def test_the_repositorys_assets_show_every_reproduction_with_its_verdicts():
    cat = catalogue()
    figures = [f for p in cat.papers for f in p.figures]
    assert {f.name for f in figures} == set(REPRODUCTIONS)
    for f in figures:
        assert f.recorded and f.verdicts and f.image is not None and f.table is not None, f.name
    assert any(v.holds is False for f in figures for v in f.verdicts)   # docs/reproductions.md: some do not hold
    assert all(v.holds in (True, False, None) and v.evidence for f in figures for v in f.verdicts)


def test_the_view_heads_each_figure_with_its_title_not_its_file_name(tmp_path):
    from app.views.figures import FiguresView
    _write(tmp_path, "scir-fig1")
    (tmp_path / "speed.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    view = FiguresView(catalogue(tmp_path))
    text = " ".join(str(getattr(o, "object", "")) for o in view.body.select(lambda o: hasattr(o, "object")))
    assert f"<h3 class='figure-title'>{REPRODUCTIONS['scir-fig1'].title}</h3>" in text
    assert "<h3 class='figure-title'>scir-fig1" not in text and "**scir-fig1.png**" not in text
    assert "does not hold:</span> claim 1" in text and "0.09605<" in text and "0.09605026393" not in text
    assert "not decidable here:</span> claim 2" in text and "Decided by: interval 2." in text
    assert "1 of the 3 claims tested hold</b> in our runs, 1 do not, and 1 cannot be decided" in text
    assert "Other files" in text and "speed.png" in text
