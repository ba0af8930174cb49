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

Each part is then its own websocket frame, written to the socket by its own `send` (and, through nginx, read and
sent again as such): a frame of the lab is seven parts, and Panel writes a frame's patch the same way
(`panel.io.document.dispatch_tornado`, a task per part). Both here frame the parts as tornado does and write
them to the socket at once, in one call: the bytes on the wire are the same.

A PATCH-DOC message (`patch_doc.create`) first makes a reference of every model the page already has, to send
those models as references: a few hundred dicts per message, whatever the message holds (a frame changes
three or four sources). The version here looks a model up when the serialiser meets one.

The serialiser meets a path's new points (a frame of the lab streams a hundred floats as JSON lists) one by one,
each through its reference lookup, circular-reference check and type dispatch: a list of finite floats is its own
encoding, and SyncedSerializer returns it as such (anything else in the list: Bokeh's way).

Panel updates an HTML pane whose text changed (the numbers under the plots, the A/B summary, the sentence read out
by screen readers) by computing every property of the pane again, its theme's and stylesheets' included, and handing
them all to the model, which keeps those that are equal: only the text changes, at a millisecond a pane. For a plain
`pn.pane.HTML` whose text (a re-rendering parameter: object, sanitize_html, sanitize_hook) changed, the version here
computes the text alone and sets it, the event Bokeh then sends being the same.

All replace exactly the Bokeh, Panel and tornado code they were written against: `install()` checks the source of the
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
from bokeh.core.serialization import Serializer
from bokeh.document.json import PatchJson
from bokeh.document.models import DocumentModelManager
from bokeh.model import Model
from bokeh.protocol.message import Message
from bokeh.protocol.messages.patch_doc import patch_doc
from bokeh.server.views.ws import WSHandler
from bokeh.settings import settings
from panel.io import document as panel_document
from panel.pane import HTML
from panel.pane.markup import HTMLBasePane
from tornado.escape import utf8
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError, WebSocketHandler, WebSocketProtocol13

# sha256 (first 16 hex digits) of the originals' source, as in Bokeh 3.9, Panel 1.9 and tornado 6.6
REVIEWED = {"query_properties_with_values": "e864a09d384658f4", "_overridden_defaults": "c3b1c82a295e3b8b",
            "themed_default": "6285cc20a7905875", "send": "48e6486395a88c00", "write_buffers": "35932fcd159dc97d",
            "dispatch_tornado": "5cdc979ac80d2c8c", "patch_doc.create": "935344e7cc170e99",
            "synced_references": "bb89fdd70092681a", "Serializer.__init__": "d676c85b3021e564",
            "Serializer.has_ref": "6b31df528992f912", "Serializer.get_ref": "82afd21da3fb869e",
            "ws.write_message": "e085015d2fafba0a", "ws._write_frame": "5972981bcbf6a255",
            "Serializer._encode_list": "7cfa20b6ba441d04", "HTMLBasePane._update": "613bc39eb9e70c3b"}
ORIGINAL = {"query_properties_with_values": HasProps.query_properties_with_values,
            "_overridden_defaults": HasProps._overridden_defaults.__func__,
            "themed_default": Property.themed_default, "send": Message.send, "write_buffers": Message.write_buffers,
            "dispatch_tornado": panel_document.dispatch_tornado, "patch_doc.create": patch_doc.create.__func__,
            "synced_references": DocumentModelManager.synced_references.fget,
            "Serializer.__init__": Serializer.__init__, "Serializer.has_ref": Serializer.has_ref,
            "Serializer.get_ref": Serializer.get_ref, "ws.write_message": WebSocketProtocol13.write_message,
            "ws._write_frame": WebSocketProtocol13._write_frame, "Serializer._encode_list": Serializer._encode_list,
            "HTMLBasePane._update": HTMLBasePane._update}
IMMUTABLE = (str, int, float, bool, type(None))
# read by Bokeh for every id it makes and every message it writes (seven times a frame), each read a search of the
# environment and the config files: their values at the server's start, kept as Bokeh's own user-set values
FROZEN_SETTINGS = (settings.simple_ids, settings.pretty)
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


class _Gather:
    """Stands in for a websocket's stream while tornado frames a message's parts: keeps the bytes."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.chunks.append(data)


def frames_of(ws: WebSocketProtocol13, frames: list[tuple[str | bytes, bool]]) -> bytes:
    """The websocket frames of a message's parts, each framed as tornado's `WebSocketProtocol13.write_message`
    frames it (its compression and byte counts included, by its own `_write_frame`), in one string of bytes."""
    gather = _Gather()
    stream, ws.stream = ws.stream, gather
    try:
        for payload, binary in frames:
            message = utf8(payload)
            ws._message_bytes_out += len(message)
            flags = 0
            if ws._compressor:
                message = ws._compressor.compress(message)
                flags |= ws.RSV1
            ws._write_frame(True, 0x2 if binary else 0x1, message, flags=flags)
    finally:
        ws.stream = stream
    return b"".join(gather.chunks)


def write_parts(handler: WebSocketHandler, frames: list[tuple[str | bytes, bool]]) -> asyncio.Future:
    """Every part of a message in one write to the socket; like tornado's `write_message` of each, raises
    WebSocketClosedError on a closed socket, and so does the future it returns (awaiting it is optional)."""
    ws = handler.ws_connection
    if ws is None or ws.is_closing():
        raise WebSocketClosedError()
    try:
        written = ws.stream.write(frames_of(ws, frames))
    except StreamClosedError:
        raise WebSocketClosedError() from None

    async def wrapper() -> None:
        try:
            await written
        except StreamClosedError:
            raise WebSocketClosedError() from None
    return asyncio.ensure_future(wrapper())


async def send(self, conn) -> int:
    """Bokeh's `Message.send`, every part in one write (see the module's docstring)."""
    if not isinstance(conn, WSHandler):
        return await ORIGINAL["send"](self, conn)
    with await conn.write_lock.acquire():
        frames = parts(self)
        await write_parts(conn, frames)
        return sum(len(payload) for payload, _ in frames)


def dispatch_tornado(conn, events=None, msg=None) -> list:
    """Panel's `dispatch_tornado`, the message's parts in one write (see the module's docstring)."""
    socket = conn._socket
    ws_conn = getattr(socket, "ws_connection", False)
    if not ws_conn or ws_conn.is_closing():
        return []
    if msg is None:
        if not events:
            return []
        msg = conn.protocol.create("PATCH-DOC", events)
    return [write_parts(socket, parts(msg))]


class SyncedSerializer(Serializer):
    """Bokeh's serialiser of a PATCH-DOC, which sends a model the page has (one of the document's models that is
    not new) as a reference: looked up when met, where Bokeh's makes a reference of every such model first."""

    def __init__(self, models: DocumentModelManager, **kw):
        super().__init__(**kw)
        self._models, self._new = models._models, models._new_models

    def _synced(self, obj) -> bool:
        return isinstance(obj, Model) and self._models.get(obj.id) is obj and obj not in self._new

    def has_ref(self, obj) -> bool:
        return id(obj) in self._references or self._synced(obj)

    def get_ref(self, obj):
        ref = self._references.get(id(obj))
        return obj.ref if ref is None and self._synced(obj) else ref

    def _encode_list(self, obj: list):
        for v in obj:
            if type(v) is not float or v - v != 0.0:     # not a float, or NaN or infinite (Bokeh spells those out)
                return super()._encode_list(obj)
        return obj[:]


def create_patch_doc(cls, events, **metadata):
    """Bokeh's `patch_doc.create`, with SyncedSerializer (see the module's docstring)."""
    header = cls.create_header()
    if not events:
        raise ValueError("PATCH-DOC message requires at least one event")
    docs = {event.document for event in events}
    if len(docs) != 1:
        raise ValueError("PATCH-DOC message configured with events for more than one document")
    [doc] = docs
    serializer = SyncedSerializer(doc.models)
    patch_json = PatchJson(events=serializer.encode(events))
    doc.models.flush_synced(lambda model: not serializer.has_ref(model))
    msg = cls(header, metadata, patch_json)
    msg.add_buffers(*serializer.buffers)
    return msg


def html_update(self, ref, model) -> None:
    """Panel's `HTMLBasePane._update` for a plain HTML pane: its text alone (see the module's docstring)."""
    if type(self) is not HTML or self.enable_streaming:
        return ORIGINAL["HTMLBasePane._update"](self, ref, model)
    model.update(**self._process_param_change({"object": self.object}))


def installed() -> bool:
    return HasProps.query_properties_with_values is query_properties_with_values


def install() -> bool:
    """Replace the functions if the originals are the reviewed ones; True if they are (now) replaced."""
    if installed():
        return True
    changed = [name for name, fn in ORIGINAL.items() if source_digest(fn) != REVIEWED[name]]
    if changed:
        log.warning("%s changed since bokeh_speedups was written: Bokeh left as it is", ", ".join(changed))
        return False
    HasProps.query_properties_with_values = query_properties_with_values
    Property.themed_default = themed_default
    Message.send = send
    HasProps._overridden_defaults = classmethod(lru_cache(None)(ORIGINAL["_overridden_defaults"]))
    panel_document.dispatch_tornado = dispatch_tornado
    patch_doc.create = classmethod(create_patch_doc)
    HTMLBasePane._update = html_update
    for setting in FROZEN_SETTINGS:
        setting.set_value(setting())
    return True
