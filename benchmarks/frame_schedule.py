"""The server CPU of the frame loop's own work per frame (its timer, the session's document lock, the pacing), of this
tree's app against another tree's, measured side by side.

Prints figures (not a test). Each tree runs in a process of its own (its code on PYTHONPATH): --sessions documents,
each served by a Bokeh ServerSession on one tornado loop as `panel serve` serves a page (no websocket), each with a
FrameLoop playing whose frame changes one model of its document. The frame itself costs next to nothing, so the CPU
per frame is what the loop costs around a frame (issue 28: one Bokeh timeout callback a frame was a tenth of a lab
process's CPU at 80 sessions on 2 processes). The trees take --seconds each in turn for --rounds rounds, so that a
load that comes and goes weighs on both alike; the first tree is the reference.

    python -m benchmarks.frame_schedule [--trees /work/main,.] [--sessions 40] [--seconds 4] [--rounds 3]

(from the repository root, as a module, like benchmarks/frame_cost.py)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = """
import asyncio, sys, time
from bokeh.document import Document
from bokeh.models import Div
from bokeh.server.contexts import BokehSessionContext
from bokeh.server.session import ServerSession
from tornado.ioloop import IOLoop
from app.views.frame_loop import FrameLoop

async def main(sessions):
    frames = [0]
    for i in range(sessions):
        doc = Document()
        doc.add_root(Div(text="0"))
        context = BokehSessionContext(f"s{i}", None, doc)
        doc._session_context = lambda context=context: context
        context._set_session(ServerSession(f"s{i}", doc, io_loop=IOLoop.current()))

        def frame(div=doc.roots[0]):
            frames[0] += 1
            div.text = str(frames[0])
        FrameLoop(frame, active=lambda: True, ready=lambda: True, on_error=print).attach(doc)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        f0, c0, t0 = frames[0], time.thread_time(), time.perf_counter()
        await asyncio.sleep(float(line))
        f1, c1, t1 = frames[0], time.thread_time(), time.perf_counter()
        print(1e6 * (c1 - c0) / max(f1 - f0, 1), (f1 - f0) / (t1 - t0) / sessions, flush=True)

asyncio.run(main(int(sys.argv[1])))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="/work/main,.",
                    help="comma-separated repository roots; the first is the reference")
    ap.add_argument("--sessions", type=int, default=40, help="playing sessions per process")
    ap.add_argument("--seconds", type=float, default=4.0, help="one tree's measuring window")
    ap.add_argument("--rounds", type=int, default=3, help="windows per tree (the median is printed)")
    args = ap.parse_args()
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    workers = {t: subprocess.Popen([sys.executable, "-c", WORKER, str(args.sessions)], cwd=t, text=True,
                                   env={**os.environ, "PYTHONPATH": str(t)}, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE) for t in trees}
    got = {t: [] for t in trees}
    try:
        for t, w in workers.items():
            if w.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the frame loop benchmark did not start in {t}")
        for _ in range(args.rounds):
            for t, w in workers.items():
                w.stdin.write(f"{args.seconds}\n")
                w.stdin.flush()
                got[t].append([float(v) for v in w.stdout.readline().split()])
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait(60)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.sessions} sessions per process, the trees {args.seconds:g} s "
          f"each in turn, {args.rounds} rounds")
    print(f"{'tree':<32}{'us CPU / frame':>16}{'ratio':>8}{'frames/s per session':>22}  rounds (us)")
    ref = None
    for t in trees:
        us = statistics.median(r[0] for r in got[t])
        ref = ref or us
        print(f"{str(t):<32}{us:>16.0f}{us / ref:>8.2f}{statistics.median(r[1] for r in got[t]):>22.1f}  "
              + " ".join(f"{r[0]:.0f}" for r in got[t]))


if __name__ == "__main__":
    sys.exit(main())
