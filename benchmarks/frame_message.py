"""Server CPU of a frame's PATCH-DOC message alone, of this tree against another, measured side by side.

Prints figures (not a test). The part of a frame that app/views/bokeh_speedups.py owns: the message Panel makes of
a frame's changes (`patch_doc.create`: the events encoded, the header, metadata and content as JSON) and its write
to the websocket (`panel.io.document.dispatch_tornado`: the parts framed as tornado frames them, one write to a
stream that only records). Each tree runs in a process of its own (its own code on PYTHONPATH, as
benchmarks/frame_cost.py --in-process): it plays class_load's presets (and the first screen) for a few seconds of
the lab's clock, keeps the change events of --frames frames of each (text refreshes and axis changes included, as
they come), then sends those frames' messages again and again, the trees taking turns (a load that comes and goes
weighs on both alike). The first tree is the reference: the others' cost is printed as a ratio of its.

    python -m benchmarks.frame_message [--trees /work/main,.] [--rounds 40] [--frames 20]

(from the repository root, as a module, like benchmarks/frame_cost.py)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def worker(presets: dict[str, str], frames: int) -> None:
    """One tree: record each preset's frames, then answer each line of stdin (a count of passes) with the CPU
    (ms) per message so far of each preset."""
    import asyncio

    from app.views.process import prepare_process
    prepare_process()
    import panel as pn
    from bokeh.document import Document
    from bokeh.document.events import DocumentPatchedEvent
    from bokeh.protocol import Protocol
    from bokeh.server.views.ws import WSHandler
    from panel.io import document as panel_document
    from panel.io.model import monkeypatch_events
    from tornado import locks
    from tornado.websocket import WebSocketProtocol13, _WebSocketParams

    from app.views.page import AppView

    clock = [time.monotonic()]
    time.monotonic = lambda: clock[0]           # what the lab reads to pace its numbers

    class Stream:
        def closed(self):
            return False

        def write(self, data):
            done = asyncio.get_event_loop().create_future()
            done.set_result(None)
            return done

    class Conn:
        def __init__(self):
            self._socket = handler = object.__new__(WSHandler)
            handler.write_lock = locks.Lock()
            handler.ws_connection = ws = WebSocketProtocol13(handler, mask_outgoing=False, params=_WebSocketParams())
            ws.stream = Stream()
            self.protocol = Protocol()

    def recorded(query: str) -> list[list]:
        """A loaded page's frames' change events, as the frame loop's `one_message` hands them to Panel."""
        app = AppView("?" + query)
        doc = Document()
        doc.add_root(pn.panel(app).get_root(doc))
        loop = app.lab_view.loop
        loop.attach(doc)
        loop._schedule = lambda *a: None
        app.lab.playing = True
        for _ in range(15):
            clock[0] += 0.1
            loop.tick()
        doc.to_json()                             # the page has the document: its models are no longer new
        out = []
        for _ in range(frames):
            clock[0] += 0.1
            doc.hold("combine")
            try:
                loop.tick()
            finally:
                events, doc.callbacks._held_events = doc.callbacks._held_events, []
                monkeypatch_events(events)
                doc.unhold()
            out.append([e for e in events if isinstance(e, DocumentPatchedEvent)])
        return out

    async def run():
        made = {name: recorded(q) for name, q in presets.items()}
        conn = Conn()
        cpu = dict.fromkeys(made, 0.0)
        sent = dict.fromkeys(made, 0)
        print("ready", flush=True)
        for line in sys.stdin:
            for _ in range(int(line)):
                for name, messages in made.items():
                    t0 = time.process_time()
                    for events in messages:
                        for future in panel_document.dispatch_tornado(conn, events):
                            future.cancel()
                    cpu[name] += time.process_time() - t0
                    sent[name] += len(messages)
                await asyncio.sleep(0)            # the cancelled writes' tasks end
            print(json.dumps({name: 1e3 * cpu[name] / sent[name] for name in made}), flush=True)
    asyncio.run(run())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="/work/main,.", help="comma-separated repository roots; the first is the "
                    "reference")
    ap.add_argument("--rounds", type=int, default=40, help="turns of each tree")
    ap.add_argument("--frames", type=int, default=20, help="frames recorded per preset")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(json.loads(args.worker), args.frames)
        return
    from benchmarks.frame_cost import PRESETS
    presets = {name: PRESETS[name] for name in PRESETS}
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    here = Path(__file__).resolve()
    workers = {t: subprocess.Popen([sys.executable, str(here), "--worker", json.dumps(presets), "--frames",
                                    str(args.frames)], cwd=t, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   env={**os.environ, "PYTHONPATH": str(t)}) for t in trees}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    got = {}
    try:
        for t, w in workers.items():
            if w.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the message benchmark did not start in {t}")
        for _ in range(args.rounds):
            for t, w in workers.items():
                w.stdin.write("1\n")
                w.stdin.flush()
                got[t] = json.loads(w.stdout.readline())
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait(60)
    print(f"server CPU per PATCH-DOC message of a frame (ms: made and written), {args.frames} frames a preset, "
          f"{args.rounds} turns of each tree")
    names = list(presets)
    print(f"{'tree':<24}" + "".join(f"{n[:22]:>24}" for n in names) + f"{'mean':>8}{'ratio':>7}")
    ref = None
    for t in trees:
        ms = [got[t][n] for n in names]
        mean = statistics.mean(ms)
        ref = ref or mean
        print(f"{str(t)[:23]:<24}" + "".join(f"{m:>24.3f}" for m in ms) + f"{mean:>8.3f}{mean / ref:>7.2f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
