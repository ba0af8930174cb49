"""Server-side cost of one frame of the lab: advance the chains, aggregate, update the sources.

Prints figures (not a test). A frame is what the frame loop does: `FrameLoop.tick()`, i.e.
Lab.frame() (advance `speed` steps, accumulating histograms, paths and the ESS trace) plus
pushing the aggregates into the Bokeh ColumnDataSources of the whole app's Document (the page
a browser gets). The one PATCH-DOC message a loaded page receives per frame is built and
serialised separately (its cost and size, binary buffers included, are printed too). Bokeh's
serialiser indexes every model of the document for each message, so its cost depends on the
whole page, not only on what changed. CPU time of this process, median over frames.

    python benchmarks/app_frame.py [--frames 60]
"""
from __future__ import annotations

import argparse
import statistics
import time

import panel as pn
from bokeh.document import Document
from bokeh.protocol import Protocol

from app.views.page import AppView

CASES = [("1-D", "double-well", "sghmc"), ("2-D", "banana", "sghmc")]


def measure(potential, sampler, chains, speed, frames):
    app = AppView(f"?pot={potential}&s={sampler}&n={chains}&speed={speed}&burn=10")
    loop, lab = app.lab_view.loop, app.lab
    doc = Document()
    doc.add_root(pn.panel(app).get_root(doc))
    events = []
    doc.on_change(lambda event: events.append(event))
    loop.attach(doc)                     # the frame loop's document, without a server to schedule frames
    loop._schedule = lambda *a: None
    lab.playing = True
    protocol = Protocol()
    for _ in range(15):                  # warm up, and get past burn-in so the histogram accumulates
        loop.tick()
    cpu, ser, size = [], [], []
    for _ in range(frames):
        events.clear()
        t0 = time.process_time()
        loop.tick()
        cpu.append(time.process_time() - t0)
        t1 = time.process_time()
        msg = protocol.create("PATCH-DOC", events)
        nbytes = len(msg.header_json) + len(msg.metadata_json) + len(msg.content_json) + \
            sum(len(b.to_bytes()) for b in msg.buffers)
        ser.append(time.process_time() - t1)
        size.append(nbytes)
    assert lab.playing, lab.notice
    return statistics.median(cpu) * 1e3, statistics.median(ser) * 1e3, statistics.median(size) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--chains", default="100,1000,10000,100000", help="comma-separated chain counts")
    ap.add_argument("--cases", default="1-D,2-D")
    args = ap.parse_args()
    print("server CPU per frame (median), FrameLoop.tick() = advance + aggregate + update ColumnDataSources")
    print(f"{'target':<18}{'chains':>8}{'speed':>7}{'frame ms':>10}{'+ patch ms':>12}{'patch KiB':>11}")
    for label, pot, sampler in [c for c in CASES if c[0] in args.cases.split(",")]:
        for chains in map(int, args.chains.split(",")):
            for speed in (1, 5):
                f, s, kb = measure(pot, sampler, chains, speed, args.frames)
                print(f"{label + ' ' + pot:<18}{chains:>8}{speed:>7}{f:>10.2f}{s:>12.2f}{kb:>11.1f}")
    print("targets: <= 5 ms (1-D) and <= 10 ms (2-D) per frame at 10^4 chains; <= 10 ms per step at 10^5 (2-D)")


if __name__ == "__main__":
    main()
