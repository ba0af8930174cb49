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


class FakeSocket:
    """Tornado's side of a websocket: records frames, and answers each write as tornado does, with a task
    (one turn of the loop) or, once `closed`, with WebSocketClosedError."""

    def __init__(self):
        self.frames, self.closed = [], False

    def is_closing(self):
        return False

    def write_message(self, message, binary=False):
        from tornado.websocket import WebSocketClosedError
        if self.closed:
            raise WebSocketClosedError()
        self.frames.append((message, binary))

        async def written():
            return None
        return asyncio.ensure_future(written())


def fake_handler():
    from bokeh.server.views.ws import WSHandler
    from tornado import locks
    handler = object.__new__(WSHandler)          # no server: only what Message.send touches
    handler.write_lock, handler.ws_connection = locks.Lock(), FakeSocket()
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


def test_a_message_is_sent_as_bokeh_sends_it_in_one_turn_of_the_loop():
    message = page_message()
    assert len(message.buffers) >= 5             # the page's arrays go as binary buffers
    ours, bokehs = fake_handler(), fake_handler()
    turns, sent = asyncio.run(turns_of(bs.send(message, ours)))
    turns_bokeh, sent_bokeh = asyncio.run(turns_of(bs.ORIGINAL["send"](message, bokehs)))
    assert ours.ws_connection.frames == bokehs.ws_connection.frames and sent == sent_bokeh
    assert len(ours.ws_connection.frames) == 3 + 2 * len(message.buffers)
    # the point of it, and the test's power: Bokeh's own takes a turn per frame
    assert turns <= 3 < len(ours.ws_connection.frames) <= turns_bokeh


def test_a_message_to_a_closed_socket_says_so_as_bokehs_does():
    from tornado.websocket import WebSocketClosedError
    message = page_message()
    for fn in (bs.send, bs.ORIGINAL["send"]):
        handler = fake_handler()
        handler.ws_connection.closed = True
        with pytest.raises(WebSocketClosedError):
            asyncio.run(fn(message, handler))
