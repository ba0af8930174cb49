"""The step-size ladder beside a live lab: how long the ladder takes, and the live view's update rate meanwhile.

Prints figures (not a test). The lab is the issue's case, naive SGRHMC against gSGRHMC on the double
well and naive SGHMC against SGHMC at V = 4; the ladder runs in its worker process (app/model/ladder.py,
6 step sizes x 2 samplers x 2000 chains) while this process plays the lab's frame loop as a server
session does: one frame every FRAME_MS (advance, aggregate, update the sources of the whole page's
document, build the PATCH-DOC message). Updates per second are counted over the ladder's run, and
over the same time without a ladder.

    python benchmarks/ladder.py
"""
from __future__ import annotations

import time

import panel as pn
from bokeh.document import Document
from bokeh.protocol import Protocol

from app.model.ladder import LadderJob
from app.views.frame_loop import FRAME_MS
from app.views.page import AppView

CASES = ["?pot=double-well&cmp=1&s=sgrhmc-naive&sb=sgrhmc&n=1000",
         "?pot=double-well&cmp=1&s=sghmc-naive&sb=sghmc&V=4&a.eps=0.1&b.eps=0.1&n=1000"]


def live(query):
    app = AppView(query)
    loop, lab = app.lab_view.loop, app.lab
    doc = Document()
    doc.add_root(pn.panel(app).get_root(doc))
    events = []
    doc.on_change(lambda event: events.append(event))
    loop.attach(doc)
    loop._schedule = lambda *a: None
    lab.playing = True
    protocol = Protocol()

    def frame():
        events.clear()
        loop.tick()
        if events:
            protocol.create("PATCH-DOC", events)
    for _ in range(10):
        frame()
    return lab, frame


def play(frame, until):
    """Frames every FRAME_MS (or as fast as they come, if slower) until until() is true; frames per second."""
    n, t0 = 0, time.monotonic()
    nxt = t0
    while not until():
        frame()
        n += 1
        nxt += FRAME_MS / 1000
        time.sleep(max(0.0, nxt - time.monotonic()))
    return n / (time.monotonic() - t0), time.monotonic() - t0


def main():
    print(f"{'case':<44}{'ladder s':>10}{'updates/s (ladder)':>20}{'updates/s (alone)':>19}  KL at smallest ε")
    for query in CASES:
        lab, frame = live(query)
        job = LadderJob(lab)
        job.start()

        def finished(job=job):
            job.poll()
            return job.status != "running"
        rate, took = play(frame, finished)
        assert job.status == "done", job.message
        stop = time.monotonic() + min(took, 10.0)
        alone, _ = play(frame, lambda stop=stop: time.monotonic() > stop)
        kl = "  ".join(f"{r.title.split(' (')[0]}: {r.kl[-1]:.2e}" for r in job.results)
        ratio = job.results[0].kl[-1] / job.results[1].kl[-1]
        print(f"{query[5:49]:<44}{took:>10.1f}{rate:>20.1f}{alone:>19.1f}  {kl}  (A/B = {ratio:.0f}x)")
    print("targets: ladder <= 20 s with the live view at >= 15 updates/s; A's KL >= 10x B's at the smallest ε")


if __name__ == "__main__":
    main()
