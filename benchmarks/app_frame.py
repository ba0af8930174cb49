"""Server-side cost of one frame of the lab: advance the chains, aggregate, update the sources.

Prints figures (not a test). A frame is what the frame loop does: `FrameLoop.tick()`, i.e.
Lab.frame() (advance `speed` steps, accumulating histograms, paths and the ESS trace) plus
pushing the aggregates into the Bokeh ColumnDataSources of the whole app's Document (the page
a browser gets). The one PATCH-DOC message a loaded page receives per frame is built and
serialised separately (its cost and size, binary buffers included, are printed too). Bokeh's
serialiser indexes every model of the document for each message, so its cost depends on the
whole page, not only on what changed. CPU time of this process, median over frames.

    python benchmarks/app_frame.py [--frames 60] [--dtypes float64,float32]
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


def frames_of(potential, sampler, chains, speed, dtype="float64"):
    """A loaded page's frame loop; returns a function that runs one frame and gives (frame CPU s, patch CPU s,
    patch bytes), and the lab."""
    app = AppView(f"?pot={potential}&s={sampler}&n={chains}&speed={speed}&burn=10&dtype={dtype}")
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

    def frame():
        events.clear()
        t0 = time.process_time()
        loop.tick()
        cpu = time.process_time() - t0
        t1 = time.process_time()
        msg = protocol.create("PATCH-DOC", events)
        nbytes = len(msg.header_json) + len(msg.metadata_json) + len(msg.content_json) + \
            sum(len(b.to_bytes()) for b in msg.buffers)
        return cpu, time.process_time() - t1, nbytes
    return frame, lab


def measure(potential, sampler, chains, speed, frames, dtypes=("float64",)):
    """Median frame CPU (ms), patch CPU (ms), patch KiB and the lab's KL and TV after the frames, per dtype; the
    dtypes' frames interleaved, so that a busy machine slows all alike."""
    made = {dt: frames_of(potential, sampler, chains, speed, dt) for dt in dtypes}
    got = {dt: [] for dt in dtypes}
    for _ in range(frames):
        for dt, (frame, _) in made.items():
            got[dt].append(frame())
    out = {}
    for dt, rows in got.items():
        lab = made[dt][1]
        assert lab.playing, lab.notice
        m = lab.runs[0].metrics()
        cpu, ser, size = zip(*rows)
        out[dt] = (statistics.median(cpu) * 1e3, statistics.median(ser) * 1e3, statistics.median(size) / 1024,
                   m["kl"], m["tv"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--chains", default="100,1000,10000,100000", help="comma-separated chain counts")
    ap.add_argument("--cases", default="1-D,2-D")
    ap.add_argument("--dtypes", default="float64", help="the lab's Precision setting(s), e.g. float64,float32: "
                    "their frames interleaved, and float32's cost as a share of float64's")
    args = ap.parse_args()
    dtypes = tuple(args.dtypes.split(","))
    print("server CPU per frame (median), FrameLoop.tick() = advance + aggregate + update ColumnDataSources; "
          "KL and TV of the histogram after the frames")
    print(f"{'target':<18}{'chains':>8}{'speed':>7}{'dtype':>9}{'frame ms':>10}{'+ patch ms':>12}{'patch KiB':>11}"
          f"{'KL':>10}{'TV':>8}{'f32/f64':>9}")
    for label, pot, sampler in [c for c in CASES if c[0] in args.cases.split(",")]:
        for chains in map(int, args.chains.split(",")):
            for speed in (1, 5):
                got = measure(pot, sampler, chains, speed, args.frames, dtypes)
                for dt, (f, s, kb, kl, tv) in got.items():
                    ratio = f"{f / got['float64'][0]:9.2f}" if dt == "float32" and "float64" in got else ""
                    print(f"{label + ' ' + pot:<18}{chains:>8}{speed:>7}{dt:>9}{f:>10.2f}{s:>12.2f}{kb:>11.1f}"
                          f"{kl:>10.5f}{tv:>8.4f}{ratio}", flush=True)
    print("targets: <= 5 ms (1-D) and <= 10 ms (2-D) per frame at 10^4 chains; <= 10 ms per step at 10^5 (2-D)")


if __name__ == "__main__":
    main()
