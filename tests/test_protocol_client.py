"""benchmarks/app_sessions.py's protocol client (BokehSocket, ProtocolClient), which the serving benchmarks count
frames with: its websocket framing against RFC 6455's own examples (section 5.7), and its frame count against a
Bokeh server's own messages (bokeh.server.server.Server: Bokeh's serializer and tornado's websocket writer, buffers,
keep-alive pings), with and without read_every."""
from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from benchmarks import app_sessions
from benchmarks.app_sessions import BokehSocket, ProtocolClient

# RFC 6455 5.7, byte for byte
HELLO = bytes.fromhex("810548656c6c6f")                                    # a single-frame unmasked text message
HEL, LO = bytes.fromhex("010348656c"), bytes.fromhex("80026c6f")           # the same, fragmented
PING = bytes.fromhex("890548656c6c6f")                                     # an unmasked ping, "Hello"
PONG = bytes.fromhex("8a8537fa213d7f9f4d5158")                             # its masked pong (mask 37 fa 21 3d)
MASKED_HELLO = bytes.fromhex("818537fa213d7f9f4d5158")                     # a masked text message, "Hello"
BIN_256 = bytes.fromhex("827e0100") + bytes(range(256))                    # 256 bytes binary, one unmasked frame
BIN_64K = bytes.fromhex("827f0000000000010000") + bytes(65536)             # 64 KiB binary, one unmasked frame


def text(s: str) -> bytes:
    """An unmasked text frame (the RFC's layout, for parts of other lengths)."""
    b = s.encode()
    return bytes([0x81, len(b)]) + b if len(b) < 126 else bytes([0x81, 126]) + len(b).to_bytes(2, "big") + b


class Wire:
    """What a socket writes, in place of the connection."""

    def __init__(self):
        self.out = bytearray()

    def send(self, data):
        self.out += data
        return len(data)

    def close(self):
        pass


async def accepted_socket():
    got = []
    s = BokehSocket(lambda kind, content: got.append((kind, content)))
    s.headers, s.sock = {}, Wire()        # past the handshake
    return s, got


def message_with_rfc_frames() -> bytes:
    """A Bokeh message whose content is the RFC's fragmented "Hello", with its ping between the fragments, and whose
    two buffers are the RFC's binary frames; then one without buffers, whose content is the RFC's "Hello"."""
    header = json.dumps({"msgid": "7", "msgtype": "PATCH-DOC", "num_buffers": 2})
    return (text(header) + text("{}") + HEL + PING + LO + text('{"id":"b1"}') + BIN_256 + text('{"id":"b2"}')
            + BIN_64K + text(json.dumps({"msgid": "8", "msgtype": "PATCH-DOC"})) + text("{}") + HELLO)


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_a_message_is_whole_however_the_reads_cut_it(chunk, monkeypatch):
    monkeypatch.setattr(app_sessions.os, "urandom", lambda n: bytes.fromhex("37fa213d")[:n])

    async def main():
        s, got = await accepted_socket()
        data = message_with_rfc_frames()
        for i in range(0, len(data), chunk):
            s.feed(data[i:i + chunk])
        return s, got
    s, got = asyncio.run(main())
    assert got == [("PATCH-DOC", "Hello"), ("PATCH-DOC", "Hello")]
    assert bytes(s.sock.out) == PONG             # the ping answered, masked as the RFC's example
    assert not s._buf


def test_a_client_frame_is_masked_as_the_rfc_shows(monkeypatch):
    monkeypatch.setattr(app_sessions.os, "urandom", lambda n: bytes.fromhex("37fa213d")[:n])

    async def main():
        s, _ = await accepted_socket()
        s.send("Hello")
        return bytes(s.sock.out)
    assert asyncio.run(main()) == MASKED_HELLO


TICKS = 120      # each session's changes, one every 10 ms; every third changes only the other source


@pytest.fixture(scope="module")
def bokeh_server():
    """A Bokeh server on its own thread and event loop, whose documents each change, every 10 ms and TICKS times,
    either `hist-A` (numpy columns, sent as binary buffers, and its tick number in a list, sent as text) or another
    source; keep-alive pings every 50 ms. Yields the app's URL and {session id: ticks so far}."""
    import threading

    from bokeh.application import Application
    from bokeh.application.handlers.function import FunctionHandler
    from bokeh.models import ColumnDataSource
    from bokeh.server.server import Server
    from tornado.ioloop import IOLoop

    from tests.app_browser_support import free_port

    ticks = {}

    def make_doc(doc):
        hist = ColumnDataSource({"top0": np.zeros(100), "tick": [0] * 100}, name="hist-A")
        other = ColumnDataSource({"x": np.zeros(500)}, name="trace")
        doc.add_root(hist)
        doc.add_root(other)
        key = doc.session_context.id
        ticks[key] = 0
        rng = np.random.default_rng(0)

        def tick():
            if ticks[key] == TICKS:
                return
            ticks[key] += 1
            if ticks[key] % 3 == 0:
                other.data = {"x": rng.random(500)}
            else:
                hist.data = {"top0": rng.random(100), "tick": [ticks[key]] * 100}
        doc.add_periodic_callback(tick, 10)

    port = free_port()
    ready = threading.Event()
    box = {}

    def serve():
        asyncio.set_event_loop(asyncio.new_event_loop())
        loop = IOLoop.current()
        box["server"] = Server({"/lab": Application(FunctionHandler(make_doc))}, io_loop=loop, port=port,
                               address="127.0.0.1", allow_websocket_origin=[f"127.0.0.1:{port}"],
                               keep_alive_milliseconds=50)
        box["server"].start()
        box["loop"] = loop
        ready.set()
        loop.start()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    assert ready.wait(30)
    yield f"http://127.0.0.1:{port}/lab", ticks
    box["loop"].add_callback(box["server"].stop)
    box["loop"].add_callback(box["loop"].stop)
    t.join(10)


class Recording(ProtocolClient):
    def on_patch(self, content: str) -> None:
        self.__dict__.setdefault("patches", []).append(json.loads(content))


def hist_ticks(patches: list, hist_id: str) -> list[int]:
    """The tick numbers of the changes to hist-A in the patches, in order."""
    out = []
    for patch in patches:
        for e in patch.get("events", []):
            if e.get("model", {}).get("id") == hist_id:
                out.append(dict(e["data"]["entries"])["tick"][0])      # ColumnDataChanged
    return out


@pytest.mark.parametrize("read_every", [None, 0.05])
def test_each_change_of_the_histogram_is_one_frame(bokeh_server, read_every):
    url, ticks = bokeh_server

    async def main():
        c = await asyncio.get_running_loop().run_in_executor(None, lambda: Recording(None, url=url,
                                                                                     read_every=read_every))
        stop = asyncio.Event()
        task = asyncio.create_task(c.run(stop))
        for _ in range(600):
            await asyncio.sleep(0.05)
            if c.ws_headers is not None and max(ticks.values(), default=0) == TICKS and all(
                    v == TICKS for v in ticks.values()):
                break
        await asyncio.sleep(0.3)          # the last changes read (read_every)
        stop.set()
        await task
        return c
    c = asyncio.run(main())
    seen = hist_ticks(c.patches[1:], c.hist_id)        # after the document (the PULL-DOC-REPLY)
    assert c.hist_id and seen, "no change of hist-A reached the client"
    # every change from the first the client saw to the last the server made, once each, in order
    assert seen == [t for t in range(seen[0], TICKS + 1) if t % 3], seen
    assert c.frames == len(seen)
    assert c.first_frame is not None


def test_a_polled_socket_reads_what_came_and_sees_its_end():
    """What --kill counts: a polled client's connection ended by the server ends its socket (`closed`)."""
    import socket

    async def main():
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        s, got = await accepted_socket()
        s.sock = ours
        s.poll_every(0.02)
        theirs.sendall(text(json.dumps({"msgid": "1", "msgtype": "PATCH-DOC"})) + text("{}") + HELLO)
        await asyncio.sleep(0.2)
        before = list(got)
        theirs.close()
        await asyncio.wait_for(s.closed, 5)
        return before
    assert asyncio.run(main()) == [("PATCH-DOC", "Hello")]
