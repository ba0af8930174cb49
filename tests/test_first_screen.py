"""Issue 30, the first screen's page-open cost and legends, without a browser (tests/test_lab_first_screen_browser.py
has the same in a real one): what a page open builds and what waits for the first step or a click, and legends that
hide no data."""
from __future__ import annotations

import panel as pn
from bokeh.document import Document
from panel.io.state import set_curdoc

from app.model.config import LabConfig
from app.model.lab import Lab
from app.model.presets import FIRST_SCREEN
from app.model.urlstate import apply_query, parse_search
from app.views.lab import LabView
from app.views.page import AppView


def first_screen(**changes) -> Lab:
    cfg = LabConfig()
    assert not apply_query(cfg, parse_search(FIRST_SCREEN))
    cfg.param.update(chains=100, **changes)
    return Lab(cfg)


def names(figures) -> list[str]:
    return [f.name for f in figures]


def test_a_pairs_phase_planes_wait_for_the_first_step_in_their_places():
    """Until the runs step, both phase planes would show the same start (same seed): a note holds each one's place,
    and the first step draws them, under the histograms and above the traces. A lone run's is drawn at once."""
    view = LabView(first_screen(), compact=True)
    a, b = view.plots
    assert names(a.figures) == ["marginal-A-0"] and names(b.figures) == ["marginal-B-0"]
    assert list(b.column.children) == [b.figures[0], b.phase_note] and "B's phase plane" in b.phase_note.text
    view.lab.step(1)
    assert names(a.figures) == ["marginal-A-0", "main-A", "trace-A"]
    assert names(b.figures) == ["marginal-B-0", "main-B", "trace-B"] and list(b.column.children) == b.figures
    assert b.main.title.text == "B: SGHMC — phase plane (θ, r)" and b.phase_note is None
    # the paths streamed before it was drawn were kept to its ranges, as they are after
    r = [v for k, col in b.paths.data.items() if k.startswith("r") for v in col]
    lo, hi = b.main.y_range.start, b.main.y_range.end
    assert r and all(lo <= v <= hi for v in r if v == v)
    view.lab.config.seed = 2                     # same shape of figures: kept, B's phase plane with them
    assert view.plots[1] is b and names(b.figures) == ["marginal-B-0", "main-B", "trace-B"]
    view.lab.config.compare = False
    assert names(view.plots[0].figures) == ["marginal-A-0", "main-A"]          # alone: drawn at once


def test_figures_made_while_the_lab_plays_draw_both_phase_planes_at_once():
    view = LabView(first_screen(), compact=True)
    view.lab.play()
    view.lab.config.compare = False
    view.lab.config.compare = True                # new figures while playing: nothing waits
    assert [p.phase_missing for p in view.plots] == [False, False]
    assert names(view.plots[1].figures) == ["marginal-B-0", "main-B", "trace-B"]
    view.stop()


def test_every_live_figures_legend_is_a_row_above_its_plot_area():
    """Inside, a histogram's legend (60 % opaque) covered the double well's right-hand peak."""
    for changes in ({}, dict(potential="banana")):
        view = LabView(first_screen(**changes), compact=True)
        view.lab.step(1)
        figures = [f for p in view.plots for f in p.figures] + [view.kl.fig]
        legends = [(f.name, place) for f in figures for place in ("above", "center", "below", "left", "right")
                   for r in getattr(f, place) if type(r).__name__ == "Legend"]
        assert legends and {place for _, place in legends} == {"above"}, legends
        assert all(r.orientation == "horizontal" for f in figures for r in f.legend)
        view.present(True)                       # the projector's one-line legends: above too
        assert {r.orientation for f in figures for r in f.legend} == {"horizontal"}
        assert all(r in f.above for f in figures for r in f.legend)


def page_models(query: str) -> tuple[AppView, set]:
    doc = Document()
    with set_curdoc(doc):
        view = AppView(query)
        doc.add_root(pn.panel(view).get_root(doc))
    return view, set(doc.models)


def test_sampler_b_is_a_button_until_pressed_and_its_picker_at_once_where_its_eps_is_auto():
    view, models = page_models("")
    compare = view.lab_view.compare_controls
    assert compare.picker_b is None and compare.body.objects == [compare.open_b]
    assert compare.open_b.name.startswith("Sampler B: SGHMC")
    view.config.sampler_b = "sgld"                # the pair picker or a link changes B: the button says so
    assert compare.open_b.name.startswith("Sampler B: SGLD") and compare.picker_b is None
    compare.open_b.clicks += 1
    assert compare.picker_b is not None and compare.picker_b.select.value == "sgld"
    assert "eps" in compare.picker_b.fields.widgets           # its fields at once, not behind a second button
    # b.eps=auto: the ladder that picks B's step size runs from B's fields, made at the page's open
    view, _ = page_models("?cmp=1&s=sghmc-naive&sb=sghmc&pot=double-well&b.eps=auto")
    assert view.lab_view.compare_controls.picker_b is not None
    view.stop()


def test_play_is_green_from_the_start_and_follows_the_run():
    """Panel 1.9 took a ref's first button_type and then reset it to its `color` alias's default: Play was grey until
    pressed, on the lab and on the Models page."""
    from app.views.controls import RunControls
    from app.views.models import ModelsView

    for play in (RunControls(first_screen()).play, ModelsView().play):
        assert (play.name, play.button_type) == ("Play", "success")
    controls = RunControls(first_screen())
    controls.lab.play()
    assert (controls.play.name, controls.play.button_type) == ("Pause", "warning")
    controls.lab.pause()
    assert (controls.play.name, controls.play.button_type) == ("Play", "success")
