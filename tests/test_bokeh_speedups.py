"""app/views/bokeh_speedups.py: Bokeh's serialisation and message writes, cheaper and with the same results."""
import asyncio

import numpy as np
import panel as pn
import pytest
from bokeh.core.has_props import HasProps
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.document import Document
from bokeh.models import Slider
from panel.io.state import set_curdoc

from app.views import bokeh_speedups as bs
from app.views.page import AppView

original = bs.ORIGINAL["query_properties_with_values"]


def test_the_installed_bokeh_is_the_reviewed_one():
    """If this fails, Bokeh changed the functions: read the new ones, then update or drop the module."""
    assert bs.install() and bs.installed()
    assert HasProps._overridden_defaults() == bs.ORIGINAL["_overridden_defaults"](HasProps)


def same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("query", ["", "?cmp=1&sb=sghmc-naive&recipe=1", "?pot=banana&s=sgrld", "?tab=lessons",
                                   "?tab=figures"])
def test_every_model_of_a_page_serialises_as_bokeh_would(query):
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(AppView(query)).get_root(doc))
    models = list(doc.models)
    assert len(models) > 20
    serialized = lambda prop: prop.serialized      # noqa: E731 (Bokeh's own query)
    for m in models:
        for defaults in (False, True):
            # the replacement first: Bokeh's own computes every default, which must not be what makes them agree
            got = bs.query_properties_with_values(m, serialized, include_defaults=defaults)
            want = original(m, serialized, include_defaults=defaults)
            assert want.keys() == got.keys(), (m, defaults, want.keys() ^ got.keys())
            assert all(same(want[k], got[k]) for k in want), m


def test_an_unset_required_property_still_refuses_to_serialise():
    s = Slider(start=0, end=1, step=0.1, title="x")     # value is required and unset
    for fn in (original, bs.query_properties_with_values):
        with pytest.raises(UnsetValueError):
            fn(s, lambda prop: prop.serialized, include_defaults=False)


def test_every_default_of_a_page_is_what_bokeh_would_make():
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(AppView("?cmp=1&sb=sghmc-naive&recipe=1")).get_root(doc))
    classes = {type(m) for m in doc.models}
    kept = 0
    for cls in classes:
        for name in cls.properties():
            prop = cls.lookup(name).property
            for _ in range(2):         # the second read is the kept value, where one is kept
                got = bs.themed_default(prop, cls, name, None)
                want = bs.ORIGINAL["themed_default"](prop, cls, name, None)
                # plain values must be equal; others (new models, lists) are made afresh by both
                assert same(got, want) if type(want) in bs.IMMUTABLE else type(got) is type(want), (cls, name)
            kept += (id(prop), cls, name, False) in bs._defaults
    assert kept > 500          # the test's own power: most defaults are plain values, and were kept


class FakeStream:
    """Tornado's IOStream under a websocket: records each write (a send to the socket), answers it as tornado
    does with a future, and once `closed` raises StreamClosedError."""

    def __init__(self):
        self.writes, self.is_closed = [], False

    def closed(self):
        return self.is_closed

    def write(self, data):
        from tornado.iostream import StreamClosedError
        if self.is_closed:
            raise StreamClosedError()
        self.writes.append(bytes(data))
        done = asyncio.get_event_loop().create_future()
        done.set_result(None)
        return done


def fake_handler(compress: bool = False):
    """A server's websocket handler over a FakeStream: tornado's own framing (WebSocketProtocol13), no server."""
    from bokeh.server.views.ws import WSHandler
    from tornado import locks
    from tornado.websocket import WebSocketProtocol13, _WebSocketParams
    handler = object.__new__(WSHandler)          # only what the writes touch
    ws = WebSocketProtocol13(handler, mask_outgoing=False, params=_WebSocketParams())
    ws.stream = FakeStream()
    if compress:
        ws._create_compressors("server", {})
    handler.write_lock, handler.ws_connection = locks.Lock(), ws
    return handler


def page_message():
    from bokeh.protocol import Protocol
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(AppView("?cmp=1&sb=sghmc-naive")).get_root(doc))
    return Protocol().create("PULL-DOC-REPLY", "1", doc)


async def turns_of(coro) -> tuple[int, object]:
    """How many turns of the event loop `coro` takes."""
    turns, done = 0, False

    async def ticker():
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)
    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    start = turns
    result = await coro
    done = True
    await tick
    return turns - start, result


@pytest.mark.parametrize("compress", [False, True])
def test_a_message_goes_out_as_bokeh_sends_it_in_one_write_and_one_turn_of_the_loop(compress):
    message = page_message()
    assert len(message.buffers) >= 5             # the page's arrays go as binary buffers
    ours, bokehs = fake_handler(compress), fake_handler(compress)
    turns, sent = asyncio.run(turns_of(bs.send(message, ours)))
    turns_bokeh, sent_bokeh = asyncio.run(turns_of(bs.ORIGINAL["send"](message, bokehs)))
    # the same bytes on the wire (tornado's framing, compressed alike), and the same count Bokeh returns
    assert ours.ws_connection.stream.writes == [b"".join(bokehs.ws_connection.stream.writes)] and sent == sent_bokeh
    assert ours.ws_connection._wire_bytes_out == bokehs.ws_connection._wire_bytes_out
    # the point of it, and the test's power: Bokeh's own writes, and awaits, each part on its own
    assert len(bokehs.ws_connection.stream.writes) == 3 + 2 * len(message.buffers) <= turns_bokeh
    assert turns <= 3


def test_a_message_to_a_closed_socket_says_so_as_bokehs_does():
    from tornado.websocket import WebSocketClosedError
    message = page_message()
    for fn in (bs.send, bs.ORIGINAL["send"]):
        handler = fake_handler()
        handler.ws_connection.stream.is_closed = True
        with pytest.raises(WebSocketClosedError):
            asyncio.run(fn(message, handler))


def frame_events(query="?pot=banana&s=sghmc&n=300"):
    """A loaded page's document and the change events of one frame of its lab."""
    app = AppView(query)
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.panel(app).get_root(doc))
    events = []
    doc.on_change(lambda event: events.append(event))
    loop = app.lab_view.loop
    loop.attach(doc)
    loop._schedule = lambda *a: None
    app.lab.playing = True
    for _ in range(12):
        events.clear()
        loop.tick()
    doc.models.flush_synced()
    return doc, loop, events


def content(message) -> str:
    """A message's content with its buffers named by their place (their ids are a counter's)."""
    text = message.content_json
    for i, buffer in enumerate(message.buffers):
        text = text.replace(f'"{buffer.id}"', f'"buffer-{i}"')
    return text


# a frame's PATCH-DOC against Bokeh's own: tests/test_bokeh_speedups_message.py


def test_new_models_go_whole_and_the_page_s_as_references_as_bokehs_do():
    """A model new to the page goes whole in the first patch that reaches it, one the page has as a reference; the
    document's record of new models after the message is Bokeh's."""
    from bokeh.models import ColumnDataSource, Div
    from bokeh.protocol.messages.patch_doc import patch_doc
    doc, _, _ = frame_events()
    known = doc.get_model_by_name("hist-A")
    events = []
    doc.on_change(lambda event: events.append(event))
    new = ColumnDataSource(dict(x=[1.0, 2.0]), name="new-source")
    with set_curdoc(doc):
        doc.add_root(Div(text="new", name="extra", tags=[new, known]))
    fresh = set(doc.models._new_models)
    assert events and new in fresh and known not in fresh
    got = bs.create_patch_doc(patch_doc, list(events))
    after_ours = set(doc.models._new_models)
    doc.models._new_models = set(fresh)
    want = bs.ORIGINAL["patch_doc.create"](patch_doc, list(events))
    assert content(got) == content(want) and after_ours == set(doc.models._new_models)
    # the test's power: the new source went whole, the histogram's source (the page has it) as a reference
    assert '"name":"new-source"' in got.content_json and '"name":"hist-A"' not in got.content_json
    assert f'{{"id":"{known.id}"}}' in got.content_json and new not in after_ours


def test_panel_writes_a_frame_in_one_go_with_the_bytes_it_writes_part_by_part():
    from bokeh.protocol import Protocol
    from panel.io import document as panel_document
    doc, loop, events = frame_events()
    events.clear()
    loop.tick()
    message = Protocol().create("PATCH-DOC", events)
    assert message.buffers                             # the histograms and the ensemble go as binary buffers
    writes = []
    for dispatch in (bs.dispatch_tornado, bs.ORIGINAL["dispatch_tornado"]):
        handler = fake_handler()

        class Conn:
            _socket = handler

        async def write(dispatch=dispatch, conn=Conn):
            await asyncio.gather(*dispatch(conn, msg=message))
        asyncio.run(write())
        writes.append(handler.ws_connection.stream.writes)
    assert panel_document.dispatch_tornado is bs.dispatch_tornado      # installed
    ours, panels = writes
    assert len(ours) == 1 and len(panels) == 3 + 2 * len(message.buffers) and ours[0] == b"".join(panels)


def test_a_frame_s_source_changes_are_bokehs_own():
    """plots.set_columns and stream_columns (a frame's changes without Bokeh's copy and validation of the whole
    source): the same data kept, and the same message, as Bokeh's `data.update` and `stream`, rollover included."""
    from bokeh.models import ColumnDataSource
    from bokeh.protocol.messages.patch_doc import patch_doc

    from app.views.plots import set_columns, stream_columns
    results = []
    for fast in (True, False):
        doc = Document()
        hist = ColumnDataSource(dict(left=np.arange(4.0), top=np.zeros(4, np.float32)), name="hist")
        path = ColumnDataSource(dict(t=[], x0=[]), name="path")
        for source in (hist, path):
            doc.add_root(source)
        doc.models.flush_synced()
        messages = []
        for step in range(5):
            events = []
            doc.on_change(lambda event, events=events: events.append(event))
            top = np.full(4, step, np.float32)
            new = dict(t=[2.0 * step, 2.0 * step + 1], x0=[0.5 * step, -0.5 * step])
            if fast:
                set_columns(hist, {"top": top})
                stream_columns(path, new, 6)
            else:
                hist.data.update({"top": top})
                path.stream(new, rollover=6)
            doc.callbacks._change_callbacks.clear()
            messages.append(content(bs.ORIGINAL["patch_doc.create"](patch_doc, events)).replace(hist.id, "hist")
                            .replace(path.id, "path"))
        results.append((messages, {k: list(v) for k, v in hist.data.items()}, dict(path.data)))
    assert results[0] == results[1]
    assert results[0][2]["t"] == [4.0, 5.0, 6.0, 7.0, 8.0, 9.0]        # the rollover kept the last 6


def test_a_list_of_floats_serialises_as_bokeh_s_serializer_makes_it():
    """SyncedSerializer returns a list of finite floats as it is; anything else in a list goes Bokeh's way."""
    from bokeh.core.json_encoder import serialize_json
    from bokeh.core.serialization import Serializer
    doc = Document()
    lists = [[], [0.5, -1.25, 3e300, 1e-320], [1.0, float("nan"), 2.0], [float("inf"), -float("inf")], [1, 2.0],
             [True, 0.5], [np.float64(0.5), 0.25], [[0.5, 1.5], [float("nan")]], [2.0**60, "a"], [0.1] * 1000]
    for obj in lists:
        ours, bokehs = bs.SyncedSerializer(doc.models).encode(obj), Serializer().encode(obj)
        assert serialize_json(ours) == serialize_json(bokehs), obj
    # the test's power: NaN is spelled out, not passed on as a float JSON cannot hold
    assert "nan" in serialize_json(bs.SyncedSerializer(doc.models).encode([1.0, float("nan")]))


def html_pane_events(texts, pane_type=pn.pane.HTML, show=None):
    """The PATCH-DOC content of each change of a loaded page's pane to each text, with the installed `_update`
    (or `show(pane, text)` in place of `pane.object = text`)."""
    from bokeh.document.events import DocumentPatchedEvent
    from bokeh.protocol.messages.patch_doc import patch_doc
    pane = pane_type("", sizing_mode="stretch_width", margin=(5, 10), styles={"font-size": "13px"})
    doc = Document()
    with set_curdoc(doc):
        doc.add_root(pn.Column(pane).get_root(doc))
    doc.models.flush_synced()
    out = []
    for text in texts:
        events = []
        doc.on_change(lambda event, events=events: events.append(event))
        with set_curdoc(doc):
            if show is None:
                pane.object = text
            else:
                show(pane, text)
        assert pane.object == text
        doc.callbacks._change_callbacks.clear()
        events = [e for e in events if isinstance(e, DocumentPatchedEvent)]
        model = next(iter(pane._models.values()))[0]
        out.append((model.text, events and content(bs.ORIGINAL["patch_doc.create"](patch_doc, events))
                    .replace(model.id, "pane")))
    return out


@pytest.mark.parametrize("pane_type", [pn.pane.HTML, pn.pane.Markdown])
def test_an_html_pane_s_new_text_is_the_change_panel_makes(pane_type, monkeypatch):
    """A plain HTML pane's new text (the numbers under the plots): the same text on the model and the same message
    as Panel's own update, which computes every property again; other panes go Panel's way."""
    from panel.pane.markup import HTMLBasePane
    texts = ["<b>step</b> 1,000", "<table><tr><td data-metric='kl-a'>0.012</td></tr></table>", "",
             "a & b < c \"quoted\" 'single' ≤ θ₁ — 日本語", "$$x^2$$ and <script>alert(1)</script>", "same", "same"]
    assert HTMLBasePane._update is bs.html_update
    ours = html_pane_events(texts, pane_type)
    monkeypatch.setattr(HTMLBasePane, "_update", bs.ORIGINAL["HTMLBasePane._update"])
    panels = html_pane_events(texts, pane_type)
    assert ours == panels
    # the test's power: each new text was sent, escaped as Panel sends it, and the repeated one not again
    assert [bool(message) for _, message in ours] == [True] * 6 + [False]
    assert "&lt;script&gt;" in ours[4][0] or pane_type is not pn.pane.HTML


@pytest.mark.parametrize("pane_type", [pn.pane.HTML, pn.pane.Markdown])
def test_show_html_changes_a_pane_as_panel_does(pane_type, monkeypatch):
    """plots.show_html (the numbers under the plots without param's watchers): the pane's value, its model's text and
    the message are those of Panel's own `pane.object = text`; a pane of another kind goes Panel's way."""
    from panel.pane.markup import HTMLBasePane

    from app.views.plots import show_html
    texts = ["<b>step</b> 1,000", "", "a & b < c \"quoted\" 'single' ≤ θ₁ — 日本語", "<script>alert(1)</script>",
             "same", "same"]
    ours = html_pane_events(texts, pane_type, show_html)
    monkeypatch.setattr(HTMLBasePane, "_update", bs.ORIGINAL["HTMLBasePane._update"])
    assert ours == html_pane_events(texts, pane_type)
    assert [bool(message) for _, message in ours] == [True] * 5 + [False]     # the test's power: each change sent


def test_the_settings_read_once_are_bokeh_s_own_values():
    assert bs.install()
    for setting in bs.FROZEN_SETTINGS:
        kept = setting()
        setting.unset_value()
        try:
            assert setting() == kept
        finally:
            setting.set_value(kept)
