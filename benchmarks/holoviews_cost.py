"""Why the live plots stay on Bokeh streaming while the Paper figures use HoloViews (issue 30).

A live frame appends a point to each of a figure's lines and sends the change to the browser. Measured here, in
one process and one run, per frame, for the same line plot (two lines, one per side), its server-side cost: the
update and the PATCH-DOC message that carries it to the page.

- Bokeh: `ColumnDataSource.stream` of the new points (what app/views/plots.py and the lesson demo's histories do);
- HoloViews, as it streams: a `DynamicMap` over a `Buffer` stream, `Buffer.send` per frame (HoloViews patches
  the Bokeh source it drew);
- HoloViews, redrawn: the pane's element replaced by a new `Curve` overlay per frame (how a bound function
  redraws, as the Paper figures do when another column is picked).

Prints milliseconds per frame and the ratios to Bokeh's. Not a test: timings on a shared machine vary, the
ratios within one run are what to read.

    python benchmarks/holoviews_cost.py [--frames 200]
"""
from __future__ import annotations

import argparse
import time

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401
import numpy as np
import pandas as pd
import panel as pn
from bokeh.document import Document
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from bokeh.protocol import Protocol

PROTOCOL = Protocol()


def messages(doc: Document, events: list) -> None:
    """Serialise the document's pending changes as the server does for a frame, then forget them."""
    if events:
        PROTOCOL.create("PATCH-DOC", events).header_json   # noqa: B018  (building the message is the cost)
        events.clear()


def recorder(doc: Document) -> list:
    events = []
    doc.callbacks.on_change(lambda e: events.append(e))
    return events


def bokeh_stream(frames: int) -> float:
    doc = Document()
    sources = [ColumnDataSource(dict(t=[], y=[])) for _ in range(2)]
    fig = figure(height=200)
    for s in sources:
        fig.line("t", "y", source=s)
    doc.add_root(fig)
    events = recorder(doc)
    start = time.perf_counter()
    for t in range(frames):
        for k, s in enumerate(sources):
            s.stream(dict(t=[t], y=[np.sin(t / 10) + k]), 2000)
        messages(doc, events)
    return (time.perf_counter() - start) / frames


def holoviews_buffer(frames: int) -> float:
    doc = Document()
    buffers = [hv.streams.Buffer(pd.DataFrame(dict(t=[0.0], y=[0.0])), length=2000, index=False) for _ in range(2)]
    dmap = hv.Overlay([hv.DynamicMap(lambda data: hv.Curve(data, "t", "y"), streams=[b]) for b in buffers]).collate()
    pane = pn.pane.HoloViews(dmap, backend="bokeh")
    root = pane.get_root(doc)
    doc.add_root(root)
    events = recorder(doc)
    start = time.perf_counter()
    for t in range(frames):
        for k, b in enumerate(buffers):
            b.send(pd.DataFrame(dict(t=[float(t)], y=[np.sin(t / 10) + k])))
        messages(doc, events)
    return (time.perf_counter() - start) / frames


def holoviews_redraw(frames: int) -> float:
    doc = Document()
    data = [dict(t=[0.0], y=[0.0]) for _ in range(2)]
    pane = pn.pane.HoloViews(hv.Overlay([hv.Curve(d, "t", "y") for d in data]), backend="bokeh")
    doc.add_root(pane.get_root(doc))
    events = recorder(doc)
    start = time.perf_counter()
    for t in range(frames):
        for k, d in enumerate(data):
            d["t"].append(float(t))
            d["y"].append(np.sin(t / 10) + k)
        pane.object = hv.Overlay([hv.Curve(dict(d), "t", "y") for d in data])
        messages(doc, events)
    return (time.perf_counter() - start) / frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    args = parser.parse_args()
    bokeh_stream(10), holoviews_buffer(10), holoviews_redraw(5)      # imports and first renders out of the timing
    b = bokeh_stream(args.frames)
    buf = holoviews_buffer(args.frames)
    redraw = holoviews_redraw(max(10, args.frames // 10))
    print(f"per frame, two lines, server side (update + PATCH-DOC), {args.frames} frames")
    print(f"  Bokeh ColumnDataSource.stream : {b * 1e3:8.3f} ms")
    print(f"  HoloViews Buffer + DynamicMap : {buf * 1e3:8.3f} ms   ratio to Bokeh {buf / b:6.1f}x")
    print(f"  HoloViews element redrawn     : {redraw * 1e3:8.3f} ms   ratio to Bokeh {redraw / b:6.1f}x")


if __name__ == "__main__":
    main()
