"""app/views/bokeh_speedups.py's PATCH-DOC: a frame's message, encoded without Bokeh's Serializer, is Bokeh's own.

The reference is Bokeh's `patch_doc.create` (bokeh/protocol/messages/patch_doc.py, kept in bs.ORIGINAL) on the same
events: each message's header, metadata and content decoded as the browser decodes them (JSON, each number a double,
compared bit for bit; each buffer's id replaced by its place among the message's buffers, as the browser looks them
up), and each buffer's bytes.
"""
import copy
import json
import time

import numpy as np
import pytest
from bokeh.document import Document
from bokeh.document.events import DocumentPatchedEvent
from bokeh.models import ColumnDataSource, Div, Range1d
from bokeh.protocol.messages.patch_doc import patch_doc
from lab_frames import held_tick, playing_lab
from panel.io.model import monkeypatch_events
from panel.io.state import set_curdoc

from app.model.presets import FIRST_SCREEN
from app.views import bokeh_speedups as bs


def browser_json(text: str):
    """JSON as the browser's JSON.parse reads it: every number a double (here its exact hex form: -0.0 is not 0.0)."""
    return json.loads(text, parse_float=lambda t: float(t).hex(), parse_int=lambda t: float(t).hex())


def decoded(message) -> tuple:
    """What the browser reads of a message: its header (the message's own id aside), metadata, content with each
    buffer named by its place, and the buffers' bytes."""
    places = {buffer.id: f"buffer-{i}" for i, buffer in enumerate(message.buffers)}

    def named(rep):
        if isinstance(rep, dict):
            if rep.keys() == {"id"} and rep["id"] in places:
                return {"id": places[rep["id"]]}
            return {k: named(v) for k, v in rep.items()}
        if isinstance(rep, list):
            return [named(v) for v in rep]
        return rep
    header = browser_json(message.header_json)
    header.pop("msgid")
    parts = [(json.loads(json.dumps(b.ref))["id"], b.to_bytes()) for b in message.buffers]
    return (header, browser_json(message.metadata_json), named(browser_json(message.content_json)),
            [(places[i], data) for i, data in parts])


def both(events) -> tuple:
    """Ours and Bokeh's message of the same events, ours first (Bokeh's must not be what makes them agree), each
    from the same record of the page's new models, which each leaves as the other does."""
    models = events[0].document.models
    fresh = set(models._new_models)
    ours = bs.create_patch_doc(patch_doc, events)
    after = set(models._new_models)
    models._new_models = set(fresh)
    bokehs = bs.ORIGINAL["patch_doc.create"](patch_doc, events)
    assert after == models._new_models
    return ours, bokehs


def frames_of_a_lab(query: str, frames: int, monkeypatch) -> list[list]:
    """A loaded page's frames' change events, as the frame loop hands them to Panel (one_message), its clock moved
    on 0.1 s a frame so that the numbers under the plots and the axes change as they do in a class."""
    clock = [time.monotonic()]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    _, doc, loop = playing_lab(query)
    for _ in range(10):
        clock[0] += 0.1
        loop.tick()
    doc.models.flush_synced()               # the page has the document
    out = []
    for _ in range(frames):
        clock[0] += 0.1
        events = held_tick(doc, loop)
        monkeypatch_events(events)
        out.append([e for e in events if isinstance(e, DocumentPatchedEvent)])
    return out


# single runs and A/B pairs, 1-D and 2-D targets: benchmarks/class_load.py's presets and the first screen
LABS = {"2-D single": "?pot=banana&s=sghmc&n=300", "1-D pair": "?pot=double-well&s=sghmc&cmp=1&sb=sghmc-naive&n=300",
        "2-D single gaussian": "?pot=gaussian&s=sgld&n=300", "first screen (1-D pair)": "?" + FIRST_SCREEN}


@pytest.mark.parametrize("lab", list(LABS))
def test_a_lab_s_frame_message_is_bokeh_s_own(lab, monkeypatch):
    frames = frames_of_a_lab(LABS[lab], 12, monkeypatch)
    fallbacks, bokeh_way = [], bs.FrameEncoder.bokeh

    def spy(self, obj):
        fallbacks.append(type(obj).__name__)
        return bokeh_way(self, obj)
    monkeypatch.setattr(bs.FrameEncoder, "bokeh", spy)
    kinds = set()
    for events in frames:
        ours, bokehs = both(events)
        assert decoded(ours) == decoded(bokehs)
        kinds |= {type(e).__name__ for e in events}
    # the test's power: a frame's every kind of change was met, each encoded here (none handed to Bokeh's serialiser)
    assert kinds >= {"ColumnsStreamedEvent", "ColumnDataChangedEvent", "ModelChangedEvent"}, kinds
    assert fallbacks == []


def test_the_comparison_tells_a_changed_message():
    """decoded() sees a double's last bit, a zero's sign, a buffer's place and a buffer's bytes; not a number's
    spelling (the browser does not either)."""
    doc = Document()
    source = ColumnDataSource(dict(x=np.arange(3.0), y=np.ones(3, np.float32)), name="s")
    doc.add_root(source)
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    source.stream(dict(x=[0.1, 0.2, 0.3], y=[1.0, 2.0, 3.0]))
    source.data.update(x=np.arange(3.0), y=np.ones(3, np.float32))
    ours, bokehs = both(events)
    assert decoded(ours) == decoded(bokehs)
    text = bokehs.content_json
    assert "[0.1,0.2,0.3]" in text

    def tampered(content=text, buffers=bokehs.buffers):
        message = copy.copy(bokehs)
        message._content_json, message._buffers = content, buffers
        return message
    assert decoded(tampered(text.replace("[0.1,0.2,0.3]", "[1e-1,0.20000000000000001,3.0E-1]"))) == decoded(bokehs)
    digit = tampered(text.replace("0.1,", "0.10000000000000002,"))
    zero, zero_too = tampered(text.replace("0.1,", "-0,")), tampered(text.replace("0.1,", "0,"))
    assert decoded(zero) != decoded(zero_too)
    swapped = tampered(buffers=bokehs.buffers[::-1])
    changed = tampered(buffers=[bs.Buffer(bokehs.buffers[0].id, np.arange(3.0)[::-1].copy().data),
                                *bokehs.buffers[1:]])
    for wrong in (digit, zero, swapped, changed):
        assert decoded(wrong) != decoded(bokehs)


VALUES = [1.5, -0.0, 1e-320, float("nan"), float("inf"), -float("inf"), 0, 2**53 - 1, 2**53, -(2**60), True, None,
          "", "a \"quoted\" \\ <b>&amp;</b> ≤ θ₁ — 日本語 \U0001f600", [], [0.5, 2.0], [1, 2.5], [0.5, float("nan")],
          [1e308, 1e308], ["a", None], [[0.5], [1.5]], (0.5, 1), {"a": 1.0}, {}, {1: "x"}, np.float64(0.25),
          # maps of lists (a stream's new rows): of floats (written in one format), a name with a '%', an empty
          # list, a NaN or an int among them, names not strings
          {"x0%s": [0.5, 1 / 3], "y": [-0.0, 5e-324]}, {"t": [], "x": [0.1]}, {"x": [0.5, float("nan")], "y": [1.0]},
          {"t": [1, 2], "x": [0.5, 1.5]}, {1: [0.5], 2.5: [1.5]},
          np.int64(7), np.float32(0.5), np.array(3.5), np.arange(3.0),
          # lists of floats, written to 17 significant digits: zeros' signs, the extremes, and doubles of every scale
          [-0.0, 0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1 / 3],
          (_rng := np.random.default_rng(28)).standard_normal(2000).tolist(),
          (_rng.standard_normal(2000) * 10.0 ** _rng.integers(-320, 300, 2000)).tolist()]
ARRAYS = [np.arange(5.0), np.arange(5, dtype=np.float32), np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int64),
          np.arange(5, dtype=np.uint8), np.array([True, False]), np.arange(6.0).reshape(2, 3), np.arange(10.0)[::2],
          np.arange(4.0).astype(">f8"), np.array([], np.float64), np.array(["a", "b"]), np.array([1.0, np.nan]),
          np.ma.masked_invalid([1.0, np.nan]), np.array(["2026-01-01", "NaT"], "datetime64[ns]"),
          np.array([2**40, 1], np.int64), np.array([0.5, "a"], object)]


@pytest.mark.filterwarnings("ignore:ColumnDataSource's columns must be of the same length")
@pytest.mark.filterwarnings("ignore:out of range integer")
def test_values_of_every_kind_are_encoded_as_bokeh_encodes_them():
    """Beyond a frame's own kinds: property values, columns of every dtype Bokeh sends in binary or as lists, a
    patch, a new model; each message as Bokeh's, in the buffers' order too."""
    doc = Document()
    div, rng = Div(text="x", name="div"), Range1d(0, 1, name="range")
    source = ColumnDataSource(dict(a=np.zeros(5), b=np.zeros(5)), name="source")
    for model in (div, rng, source):
        doc.add_root(model)
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    messages = []
    floats = ColumnDataSource(dict(v=[]), name="floats")
    doc.add_root(floats)
    doc.models.flush_synced()
    for value in VALUES:
        div.tags = [value]                                    # any value: a property of a list of anything
        div.tags = value if isinstance(value, list) else [value, [value]]
        if isinstance(value, list) and all(type(v) is float for v in value):
            floats.stream(dict(v=value))                      # as the paths' new points go
        if isinstance(value, str):
            div.text = value
            div.styles = {"content": value, "color": None}         # a dict property
        elif type(value) in (int, float) and type(value) is not bool:
            rng.start = value
    for array in ARRAYS:
        source.data.update(a=array, b=ARRAYS[0] * 2)          # a column changed (and one besides, in order)
        if array.ndim == 1:
            new = array[:2]
            source.stream(dict(a=new, b=[1.0, 2.0][:len(new)]), rollover=7)
    source.data = dict(a=[1.0, 2.0], b=np.arange(2.0))        # the whole data replaced
    source.patch(dict(a=[(0, 9.0)]))
    with set_curdoc(doc):
        div.tags = [ColumnDataSource(dict(z=np.arange(3.0)), name="new")]     # a model new to the page: whole
    assert len(events) > 50
    messages.append(both(events))                             # all in one message, then each alone
    for k in range(len(events)):
        messages.append(both(events[k:k + 1]))
    for ours, bokehs in messages:
        assert decoded(ours) == decoded(bokehs)
    # the test's power: binary buffers, lists and values spelled out by Bokeh were all met
    content = messages[0][1].content_json
    assert '"type":"ndarray"' in content and '"value":"nan"' in content and '"name":"new"' in content


def test_a_message_s_header_and_metadata_are_bokeh_s_text():
    doc = Document()
    source = ColumnDataSource(dict(a=np.zeros(5)), name="source")
    doc.add_root(source)
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    source.data.update(a=np.ones(5))
    ours, bokehs = both(events)
    ours_id, bokehs_id = ours.header["msgid"], bokehs.header["msgid"]
    assert ours.header_json.replace(ours_id, "id") == bokehs.header_json.replace(bokehs_id, "id")
    assert ours.metadata_json == bokehs.metadata_json == "{}" and ours.header == {**bokehs.header, "msgid": ours_id}
    # ids from Bokeh's own counter: never one given to a model or a buffer before
    assert int(ours_id[1:]) < int(bokehs_id[1:])
    with_metadata = bs.create_patch_doc(patch_doc, events, use_buffers=True)
    assert with_metadata.metadata_json == json.dumps({"use_buffers": True})


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 200_000])
def test_a_part_is_framed_as_tornado_frames_it(size):
    """frames_of writes an uncompressed server frame's header itself: the bytes and byte counts of tornado's
    `write_message`, at each of the three lengths' encodings and their edges."""
    import asyncio

    from test_bokeh_speedups import fake_handler
    parts = [("é" * (size // 2) + "x" * (size % 2), False), (bytes(range(256)) * (size // 256) + b"\0" * (size % 256),
                                                             True)]
    ours, tornados = fake_handler(), fake_handler()

    async def write():
        for payload, binary in parts:
            await tornados.ws_connection.write_message(payload, binary=binary)
        await bs.write_parts(ours, parts)
    asyncio.run(write())
    assert ours.ws_connection.stream.writes == [b"".join(tornados.ws_connection.stream.writes)]
    for count in ("_message_bytes_out", "_wire_bytes_out"):
        assert getattr(ours.ws_connection, count) == getattr(tornados.ws_connection, count) >= size


def test_a_write_the_socket_has_not_taken_yet_tells_its_end_as_tornado_s_does():
    """A write tornado has not finished: its future ends as the stream's does, a closed stream told as a closed
    websocket (tornado's WebSocketClosedError)."""
    import asyncio

    from test_bokeh_speedups import fake_handler
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    async def ending(outcome):
        handler = fake_handler()
        pending = asyncio.get_running_loop().create_future()
        handler.ws_connection.stream.write = lambda data: pending
        written = bs.write_parts(handler, [("x", False)])
        assert not written.done()
        outcome(pending)
        return await written
    assert asyncio.run(ending(lambda f: f.set_result(None))) is None
    with pytest.raises(WebSocketClosedError):
        asyncio.run(ending(lambda f: f.set_exception(StreamClosedError())))
    with pytest.raises(ValueError):
        asyncio.run(ending(lambda f: f.set_exception(ValueError())))


def test_a_type_with_an_encoder_registered_with_bokeh_goes_bokeh_s_way(monkeypatch):
    from bokeh.core.serialization import Serializer
    doc = Document()
    div = Div(text="x", name="div")
    doc.add_root(div)
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    div.text = "plain"
    monkeypatch.setitem(Serializer._encoders, str, lambda obj, serializer: {"type": "text", "value": obj})
    ours, bokehs = both(events)
    assert decoded(ours) == decoded(bokehs) and '"type":"text"' in ours.content_json
