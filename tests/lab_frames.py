"""A lab page played frame by frame without a server, as the frame loop plays it in a loaded page's session: the
harness of the tests that compare a frame's events or messages (tests/test_plots_events.py,
tests/test_bokeh_speedups_message.py)."""
from __future__ import annotations

import panel as pn
from bokeh.document import Document
from panel.io.state import set_curdoc

from app.views.page import AppView


def playing_lab(query: str):
    """(app, document, frame loop) of a page at `query`, playing, its frames run by hand (`held_tick`)."""
    app = AppView(query)
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(app).get_root(doc))
    loop = app.lab_view.loop
    loop.attach(doc)
    loop._schedule = lambda *a: None
    app.lab.playing = True
    return app, doc, loop


def held_tick(doc, loop) -> list:
    """One frame under the document's hold, as Panel's `unlocked` holds it in a loaded page's session: the change
    events it leaves, taken from the hold before its release."""
    doc.hold("combine")
    try:
        loop.tick()
    finally:
        events, doc.callbacks._held_events = doc.callbacks._held_events, []
        doc.unhold()
    return events
