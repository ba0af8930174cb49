"""Bokeh's property functions and its message writes, made cheaper for the server: same results, less work.

Serialising a model (a page open's document, each new model of a frame) asks
`HasProps.query_properties_with_values` for the properties that differ from their defaults. Bokeh's own
version computes the value of *every* property first, defaults included (each a fresh, validated copy),
and only then drops those not set: its comment says so ("this should happen before get_value()"). Most
properties of most models are defaults, so that was a fifth of a lab page open's server CPU. The version
here skips them before computing them; a required property left unset still raises, as Bokeh's does.

`HasProps._overridden_defaults` walks the class's MRO on every default it looks up; classes and their
overrides are fixed once defined, so it is cached per class.

`Property.themed_default` makes a property's default afresh at each read of an unset property: a copy,
then validated. Panel reads hundreds per widget it links. Where the default is a plain immutable value
(a string, number, bool or None; not a theme's, not made by a function) the validated value is kept per
property and class and handed out again: it cannot be changed in place, and equal to what Bokeh would make.

`Message.send` writes a message's parts (header, metadata, content, then two per binary buffer) one by one,
awaiting each: tornado wraps each websocket write in a task, so each part costs a turn of the event loop, and
under load a turn is every playing session's frame. A page's document (a dozen buffers) then reached its
browser 10-25 s after it asked, and each frame held its session's document lock for as many turns. The
version here hands tornado every part at once, in order, under the same write lock, and awaits them together
(tornado: awaiting each write is optional; errors still come back). Only for the server's websockets.

All replace exactly the Bokeh code they were written against: `install()` checks the source of the
originals and leaves Bokeh as it is if that changed (`tests/test_bokeh_speedups.py` then fails, so that
someone reads the new code). The same test checks, model by model on the lab's page, that the
replacement returns what Bokeh's own function does.
"""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from functools import lru_cache

from bokeh.core.has_props import HasProps
from bokeh.core.property.bases import Property
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.core.property.singletons import Undefined
from bokeh.core.property.wrappers import PropertyValueContainer
from bokeh.protocol.message import Message
from bokeh.server.views.ws import WSHandler
from tornado.websocket import WebSocketHandler

# sha256 (first 16 hex digits) of the originals' source, as in Bokeh 3.9
REVIEWED = {"query_properties_with_values": "e864a09d384658f4", "_overridden_defaults": "c3b1c82a295e3b8b",
            "themed_default": "6285cc20a7905875", "send": "48e6486395a88c00", "write_buffers": "35932fcd159dc97d"}
ORIGINAL = {"query_properties_with_values": HasProps.query_properties_with_values,
            "_overridden_defaults": HasProps._overridden_defaults.__func__,
            "themed_default": Property.themed_default, "send": Message.send, "write_buffers": Message.write_buffers}
IMMUTABLE = (str, int, float, bool, type(None))
_defaults: dict = {}
log = logging.getLogger(__name__)


def source_digest(fn) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def query_properties_with_values(self, query, *, include_defaults=True, include_undefined=False):
    """Bokeh's `HasProps.query_properties_with_values`, with properties that will not be returned skipped
    before their value is computed."""
    themed_keys: set[str] = set()
    result = {}
    selected = None
    if not include_defaults:
        # as Bokeh's: set values, plus unstable defaults (Instances are always sent) and themed values
        selected = set(self._property_values) | set(self._unstable_default_values)
        themed = self.themed_values()
        if themed is not None:
            themed_keys = set(themed)
            selected |= themed_keys
    for key in self.properties(_with_props=True):
        descriptor = self.lookup(key)
        if not query(descriptor):
            continue
        if selected is not None and key not in selected:
            if descriptor.property._default is Undefined and not include_undefined:
                descriptor.get_value(self)      # raises UnsetValueError, as Bokeh's does
            continue
        try:
            value = descriptor.get_value(self)
        except UnsetValueError:
            if not include_undefined:
                raise
            value = Undefined
        else:
            if (selected is not None and key not in themed_keys and isinstance(value, PropertyValueContainer)
                    and key in self._unstable_default_values):
                continue
        result[key] = value
    return result


def themed_default(self, cls, name, theme_overrides, *, no_eval=False):
    """Bokeh's `Property.themed_default`, its plain immutable results kept (see the module's docstring)."""
    if theme_overrides is not None and name in theme_overrides:
        return ORIGINAL["themed_default"](self, cls, name, theme_overrides, no_eval=no_eval)
    key = (id(self), cls, name, no_eval)       # properties live as long as their classes: ids stay theirs
    try:
        return _defaults[key]
    except KeyError:
        pass
    value = ORIGINAL["themed_default"](self, cls, name, None, no_eval=no_eval)
    if type(value) in IMMUTABLE:
        _defaults[key] = value
    return value


def parts(message: Message) -> list[tuple[str | bytes, bool]]:
    """A message's websocket frames in Bokeh's order: (payload, binary)."""
    out = [(message.header_json, False), (message.metadata_json, False), (message.content_json, False)]
    for buffer in message._buffers:
        out += [(json.dumps(buffer.ref), False), (buffer.to_bytes(), True)]
    return out


async def send(self, conn) -> int:
    """Bokeh's `Message.send`, every part handed to tornado before any is awaited (see the module's docstring)."""
    if not isinstance(conn, WSHandler):
        return await ORIGINAL["send"](self, conn)
    with await conn.write_lock.acquire():
        frames = parts(self)
        writes = []
        try:
            for payload, binary in frames:
                writes.append(WebSocketHandler.write_message(conn, payload, binary=binary))
        finally:       # a socket closed part-way: the writes already made are awaited all the same
            results = await asyncio.gather(*writes, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return sum(len(payload) for payload, _ in frames)


def installed() -> bool:
    return HasProps.query_properties_with_values is query_properties_with_values


def install() -> bool:
    """Replace the two functions if Bokeh's are the reviewed ones; True if they are (now) replaced."""
    if installed():
        return True
    changed = [name for name, fn in ORIGINAL.items() if source_digest(fn) != REVIEWED[name]]
    if changed:
        log.warning("Bokeh's %s changed since bokeh_speedups was written: left as it is", ", ".join(changed))
        return False
    HasProps.query_properties_with_values = query_properties_with_values
    Property.themed_default = themed_default
    Message.send = send
    HasProps._overridden_defaults = classmethod(lru_cache(None)(ORIGINAL["_overridden_defaults"]))
    return True
