"""One tree's server CPU per frame of a loaded page, in this process (no server, no event loop): run by
benchmarks/frame_cost.py --in-process with each tree on PYTHONPATH, so that each tree's own code is measured.

With a frame count of 0 it takes counts of frames on stdin and answers each with the figures so far: frame_cost.py
runs the trees side by side that way, a few frames of each in turn, so that the machine's load weighs on all alike.

A frame here is what the server does for one session's frame: the frame loop's tick (advance, aggregate, update the
sources, the numbers under the plots when due), the PATCH-DOC message made of its changes, and the message written
to a websocket as the installed Panel writes it (tornado's framing, into a stream that only records). The document is
held around the tick and its held events taken and written as Panel's `unlocked` does in a loaded page's session
(the frame loop's `one_message`): none goes through the document's change callbacks, one by one, as they would on
Bokeh's own release of a hold (a cost the server does not have; this benchmark counted it until issue 28's third
round). The clock the
lab reads is moved on by --period-ms per frame, so that the numbers refresh as they would at that rate.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time


def main(presets: dict[str, str], frames: int, period_ms: float, profile: str | None = None):
    from app.views.process import prepare_process
    prepare_process()
    import panel as pn
    from bokeh.document import Document
    from bokeh.document.events import DocumentPatchedEvent
    from bokeh.protocol import Protocol
    from panel.io import document as panel_document
    from panel.io.model import monkeypatch_events
    from tornado import locks
    from tornado.websocket import WebSocketProtocol13, _WebSocketParams

    from app.views.page import AppView

    clock = [time.monotonic()]
    time.monotonic = lambda: clock[0]           # what the lab reads to pace its numbers

    class Stream:
        writes = 0

        def closed(self):
            return False

        def write(self, data):
            Stream.writes += 1
            done = asyncio.get_event_loop().create_future()
            done.set_result(None)
            return done

    class Conn:
        def __init__(self):
            from bokeh.server.views.ws import WSHandler
            self._socket = handler = object.__new__(WSHandler)
            handler.write_lock = locks.Lock()
            handler.ws_connection = ws = WebSocketProtocol13(handler, mask_outgoing=False, params=_WebSocketParams())
            ws.stream = Stream()
            self.protocol = Protocol()

    def session(query):
        app = AppView("?" + query)
        doc = Document()
        doc.add_root(pn.panel(app).get_root(doc))
        loop = app.lab_view.loop
        loop.attach(doc)
        loop._schedule = lambda *a: None
        app.lab.playing = True
        for _ in range(15):
            loop.tick()
        doc.to_json()                             # the page has the document: its models are no longer new
        conn = Conn()

        def frame():
            doc.hold("combine")                   # as panel.io.document.unlocked, in a session of a loaded page
            try:
                loop.tick()
            finally:
                events, doc.callbacks._held_events = doc.callbacks._held_events, []
                monkeypatch_events(events)
                events = [e for e in events if isinstance(e, DocumentPatchedEvent)]
                if events:
                    for fut in panel_document.dispatch_tornado(conn, events):
                        fut.cancel() if not fut.done() else None
                doc.unhold()
        return frame

    async def run():
        made = {name: session(q) for name, q in presets.items()}
        cpu = {name: 0.0 for name in made}
        writes = {name: 0 for name in made}
        done = 0

        def frames_of_each(count):
            for _ in range(count):
                clock[0] += period_ms / 1e3
                for name, frame in made.items():      # interleaved: a busy machine slows all alike
                    w0, t0 = Stream.writes, time.process_time()
                    frame()
                    cpu[name] += time.process_time() - t0
                    writes[name] += Stream.writes - w0
            return {name: (1e3 * cpu[name] / max(done, 1), writes[name] / max(done, 1)) for name in made}

        if frames <= 0:      # lockstep (frame_cost.py): counts of frames on stdin, the figures so far back
            print("ready", flush=True)
            for line in sys.stdin:
                done += int(line)
                print(json.dumps(frames_of_each(int(line))), flush=True)
            return None
        if profile:
            import cProfile
            profiler = cProfile.Profile()
            profiler.enable()
        done = frames
        out = frames_of_each(frames)
        if profile:
            profiler.disable()
            profiler.dump_stats(profile)
        return out
    out = asyncio.run(run())
    if out is not None:
        print(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:5])
