"""One tree's server CPU per frame of a loaded page, in this process (no server, no event loop): run by
benchmarks/frame_cost.py --in-process with each tree on PYTHONPATH, so that each tree's own code is measured.

A frame here is what the server does for one session's frame: the frame loop's tick (advance, aggregate, update the
sources, the numbers under the plots when due), the PATCH-DOC message made of its changes, and the message written
to a websocket as the installed Panel writes it (tornado's framing, into a stream that only records). The clock the
lab reads is moved on by --period-ms per frame, so that the numbers refresh as they would at that rate.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time


def main(presets: dict[str, str], frames: int, period_ms: float):
    from app.views.process import prepare_process
    prepare_process()
    import panel as pn
    from bokeh.document import Document
    from bokeh.protocol import Protocol
    from panel.io import document as panel_document
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
        events = []
        doc.on_change(lambda event: events.append(event))
        loop = app.lab_view.loop
        loop.attach(doc)
        loop._schedule = lambda *a: None
        app.lab.playing = True
        for _ in range(15):
            loop.tick()
        doc.to_json()                             # the page has the document: its models are no longer new
        conn = Conn()

        def frame():
            events.clear()
            loop.tick()
            if events:
                for fut in panel_document.dispatch_tornado(conn, list(events)):
                    fut.cancel() if not fut.done() else None
        return frame

    async def run():
        made = {name: session(q) for name, q in presets.items()}
        cpu = {name: 0.0 for name in made}
        writes = {name: 0 for name in made}
        for _ in range(frames):
            clock[0] += period_ms / 1e3
            for name, frame in made.items():      # interleaved: a busy machine slows all alike
                w0, t0 = Stream.writes, time.process_time()
                frame()
                cpu[name] += time.process_time() - t0
                writes[name] += Stream.writes - w0
        return {name: (1e3 * cpu[name] / frames, writes[name] / frames) for name in made}
    print(json.dumps(asyncio.run(run())))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
