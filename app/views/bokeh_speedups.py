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
them to the socket at once, in one call: the bytes on the wire are the same. On a server's websocket without
compression the frames' headers are written here, as tornado's `_write_frame` writes them; and a write the socket
took at once (the usual case: tornado writes what the socket takes before returning) is handed back as it is, where
tornado wraps each write in a task, a turn of the event loop per message.

A PATCH-DOC message (`patch_doc.create`) first makes a reference of every model the page already has, to send
those models as references: a few hundred dicts per message, whatever the message holds (a frame changes
three or four sources). The version here looks a model up when the serialiser meets one.

A frame's PATCH-DOC is three kinds of event (a source's columns set, a path's new points streamed, a property set:
the numbers under the plots, an axis's range) whose values are numpy arrays, lists of floats, strings and numbers.
Bokeh's Serializer takes each value through its reference lookup, circular-reference check and chain of type tests
and names each array's dtype through numpy's type hierarchy; the content is then a dict for the JSON encoder, and
the header and metadata are `json.dumps` of a dict: together most of a frame message's server CPU. `FrameEncoder`
writes those kinds of event and value as JSON itself, the representation Bokeh's `to_serializable` methods and
Serializer make (NaN and the infinities spelled out as Bokeh spells them; buffers and ids as Bokeh makes them, from
its own counter), and hands anything else (a new model, a patch, a value of another type, a type someone registered
an encoder for) to SyncedSerializer, the buffers of both in the order met; the header and metadata are written in
`json.dumps`'s format. A list of finite floats (the paths' new points: most of a frame's text) is written with 17
significant digits (`%.17g`) where Python's JSON writes the shortest that reads back the same (`repr`, the slower
by far): 17 significant digits read back as the same double too (IEEE 754's round trip), so the browser's
JSON.parse reads the same numbers; only their spelling differs ("106" for "106.0", a last digit).
`tests/test_bokeh_speedups_message.py` compares what the browser reads of each message (every number as a double,
bit for bit) with Bokeh's own message of the same events, frame by frame on the lab's presets and value by value on
every kind Bokeh encodes.

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
import struct
import sys
from functools import lru_cache
from itertools import chain

import numpy as np
from bokeh.core.has_props import HasProps
from bokeh.core.json_encoder import PayloadEncoder, serialize_json
from bokeh.core.property.bases import Property
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.core.property.singletons import Undefined
from bokeh.core.property.wrappers import (
    PropertyValueColumnData,
    PropertyValueContainer,
    PropertyValueDict,
    PropertyValueList,
)
from bokeh.core.serialization import Buffer, Serializer
from bokeh.document.events import ColumnDataChangedEvent, ColumnsStreamedEvent, ModelChangedEvent
from bokeh.document.json import PatchJson
from bokeh.document.models import DocumentModelManager
from bokeh.model import Model
from bokeh.protocol.message import Message
from bokeh.protocol.messages.patch_doc import patch_doc
from bokeh.server.views.ws import WSHandler
from bokeh.settings import settings
from bokeh.util import serialization as bokeh_ids
from bokeh.util.serialization import BINARY_ARRAY_TYPES, make_id, transform_array
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
            "Serializer._encode_list": "7cfa20b6ba441d04", "HTMLBasePane._update": "613bc39eb9e70c3b",
            "ColumnDataChangedEvent.to_serializable": "f628367c5f5a9e6e",
            "ColumnsStreamedEvent.to_serializable": "6ae31738c93fcfc5",
            "ModelChangedEvent.to_serializable": "77f9daaa79626f75", "Serializer.encode": "0c63028ef5992b33",
            "Serializer._encode": "50d5fe6d90c5829b", "Serializer._encode_dict": "a951d135637a3d03",
            "Serializer._encode_int": "fb35257bca78c769", "Serializer._encode_float": "190419630a3e4b28",
            "Serializer._encode_ndarray": "897a3b6cef436ae3", "transform_array": "a6b4c2d4d60a3269",
            "make_id": "6aad313a0079909d", "Message.create_header": "b352fd1f95f139c9",
            "Message.header_json": "4dfdffa1a2544b20", "Message.metadata_json": "cd974b0b160af061",
            "serialize_json": "40c84c5d9b80d9bf"}
ORIGINAL = {"query_properties_with_values": HasProps.query_properties_with_values,
            "_overridden_defaults": HasProps._overridden_defaults.__func__,
            "themed_default": Property.themed_default, "send": Message.send, "write_buffers": Message.write_buffers,
            "dispatch_tornado": panel_document.dispatch_tornado, "patch_doc.create": patch_doc.create.__func__,
            "synced_references": DocumentModelManager.synced_references.fget,
            "Serializer.__init__": Serializer.__init__, "Serializer.has_ref": Serializer.has_ref,
            "Serializer.get_ref": Serializer.get_ref, "ws.write_message": WebSocketProtocol13.write_message,
            "ws._write_frame": WebSocketProtocol13._write_frame, "Serializer._encode_list": Serializer._encode_list,
            "HTMLBasePane._update": HTMLBasePane._update,
            "ColumnDataChangedEvent.to_serializable": ColumnDataChangedEvent.to_serializable,
            "ColumnsStreamedEvent.to_serializable": ColumnsStreamedEvent.to_serializable,
            "ModelChangedEvent.to_serializable": ModelChangedEvent.to_serializable,
            "Serializer.encode": Serializer.encode, "Serializer._encode": Serializer._encode,
            "Serializer._encode_dict": Serializer._encode_dict, "Serializer._encode_int": Serializer._encode_int,
            "Serializer._encode_float": Serializer._encode_float,
            "Serializer._encode_ndarray": Serializer._encode_ndarray, "transform_array": transform_array,
            "make_id": make_id, "Message.create_header": Message.create_header.__func__,
            "Message.header_json": Message.header_json.fget, "Message.metadata_json": Message.metadata_json.fget,
            "serialize_json": serialize_json}
IMMUTABLE = (str, int, float, bool, type(None))
# read by Bokeh for every id it makes and every message it writes (seven times a frame), each read a search of the
# environment and the config files: their values at the server's start, kept as Bokeh's own user-set values
FROZEN_SETTINGS = (settings.simple_ids, settings.pretty)
_defaults: dict = {}
SIMPLE_IDS, PRETTY = settings.simple_ids(), settings.pretty()     # as FROZEN_SETTINGS keeps them (install())
MAX_SAFE_INT = 2**53 - 1           # Bokeh's _MAX_SAFE_INT: integers JavaScript holds exactly
FLOAT, STR = {float}, {str}
BYTE_ORDER = sys.byteorder
# the types FrameEncoder encodes itself, unless Bokeh has been given an encoder of one of them (Serializer.register)
OWN_TYPES = {str, bool, float, int, list, dict, PropertyValueList, PropertyValueDict, PropertyValueColumnData,
             np.ndarray, type(None)}
BINARY_NAMES = {dtype: dtype.name for dtype in BINARY_ARRAY_TYPES}    # native byte order: others go Bokeh's way
CONTENT_JSON = PayloadEncoder(separators=(",", ":")).encode          # serialize_json's, not pretty
ESCAPE = json.encoder.encode_basestring_ascii                          # ... and its strings' (ensure_ascii)
FLOAT_LISTS: dict[int, str] = {}   # n -> the %-format of a JSON list of n floats to 17 significant digits
# (names..., lengths...) -> the %-format of a map of lists of floats (a stream's new rows): the lists' floats in one go
FLOAT_MAPS: dict[tuple, str] = {}
FLOAT_MAP_MAX = 4096               # floats of a map written so: a larger one list by list (its format not kept)
LIST = {list}
COLUMN_DATA_CHANGED = '{"kind":"ColumnDataChanged","model":{"id":%s},"attr":%s,"data":%s,"cols":%s}'
COLUMNS_STREAMED = '{"kind":"ColumnsStreamed","model":{"id":%s},"attr":%s,"data":%s,"rollover":%s}'
MODEL_CHANGED = '{"kind":"ModelChanged","model":{"id":%s},"attr":%s,"new":%s}'
NDARRAY = '{"type":"ndarray","array":{"type":"bytes","data":{"id":%s}},"shape":[%s],"dtype":"%s","order":"%s"}'
FRAME_HEADER = (struct.Struct("BB").pack, struct.Struct("!BBH").pack, struct.Struct("!BBQ").pack)
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
        out += [('{"id": ' + ESCAPE(buffer.id) + "}", False), (buffer.to_bytes(), True)]    # json.dumps(buffer.ref)
    return out


class _Gather:
    """Stands in for a websocket's stream while tornado frames a message's parts: keeps the bytes."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.chunks.append(data)


def frames_of(ws: WebSocketProtocol13, frames: list[tuple[str | bytes, bool]]) -> bytes:
    """The websocket frames of a message's parts, each framed as tornado's `WebSocketProtocol13.write_message`
    frames it (its compression and byte counts included), in one string of bytes. Uncompressed and unmasked (a
    server's websocket without permessage-deflate) each frame's header is `_write_frame`'s, written here."""
    if ws._compressor is None and not ws.mask_outgoing:
        out, size = [], 0
        for payload, binary in frames:
            message = payload.encode() if type(payload) is str else payload
            n = len(message)
            opcode = 0x82 if binary else 0x81          # FIN and the opcode; RSV bits unset without compression
            out += [FRAME_HEADER[0](opcode, n) if n < 126 else FRAME_HEADER[1](opcode, 126, n) if n <= 0xFFFF
                    else FRAME_HEADER[2](opcode, 127, n), message]
            size += n
            ws._wire_bytes_out += len(out[-2]) + n
        ws._message_bytes_out += size
        return b"".join(out)
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

    if written.done() and not written.cancelled() and written.exception() is None:
        return written       # on the socket already (tornado writes at once what the socket takes): nothing to wait on
    # else tornado's wrapper of each write (a task) as a callback, the stream's closing told as the websocket's
    out = written.get_loop().create_future()

    def done(future: asyncio.Future) -> None:
        if out.cancelled():
            return
        if future.cancelled():
            out.cancel()
        elif (err := future.exception()) is None:
            out.set_result(None)
        else:
            out.set_exception(WebSocketClosedError() if isinstance(err, StreamClosedError) else err)
    written.add_done_callback(done)
    return out


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


class FrameEncoder:
    """A PATCH-DOC's events as the JSON of Bokeh's Serializer's encoding (see the module's docstring): a frame's own
    kinds of event and value written here, anything else encoded by a SyncedSerializer made when first needed, the
    buffers of both kept in the order they were met (the order Bokeh's would meet them in)."""

    __slots__ = ("models", "buffers", "serializer")

    def __init__(self, models: DocumentModelManager):
        self.models, self.buffers, self.serializer = models, [], None

    def bokeh(self, obj):
        """obj's encoding by SyncedSerializer (Bokeh's, models the page has as references)."""
        serializer = self.serializer
        if serializer is None:
            serializer = self.serializer = SyncedSerializer(self.models)
        rep = serializer.encode(obj)
        if serializer._buffers:
            self.buffers += serializer._buffers
            serializer._buffers.clear()
        return rep

    def event(self, event) -> str:
        kind = type(event)
        if kind is ColumnDataChangedEvent:
            data, cols = event.data, event.cols
            if data is None:       # the model's value, read without the property's descriptor where it is set
                data = event.model._property_values.get(event.attr)
                if data is None:
                    data = getattr(event.model, event.attr)
            if cols is not None:
                data = {col: value for col in cols if (value := data.get(col)) is not None}
            return COLUMN_DATA_CHANGED % (ESCAPE(event.model.id), ESCAPE(event.attr), self.json(data), self.json(cols))
        if kind is ColumnsStreamedEvent and (event.rollover is None or type(event.rollover) is int):
            return COLUMNS_STREAMED % (ESCAPE(event.model.id), ESCAPE(event.attr), self.json(event.data),
                                       "null" if event.rollover is None else int.__repr__(event.rollover))
        if kind is ModelChangedEvent:
            return MODEL_CHANGED % (ESCAPE(event.model.id), ESCAPE(event.attr), self.json(event.new))
        return CONTENT_JSON(self.bokeh(event))

    def json(self, obj) -> str:
        kind = type(obj)
        if kind is str:
            return ESCAPE(obj)
        if kind is float:
            if obj - obj == 0.0:
                return float.__repr__(obj)
            # NaN and the infinities, spelled out as Bokeh's `_encode_float` does (JSON has no word for them)
            return '{"type":"number","value":"%s"}' % ("nan" if obj != obj else "-inf" if obj < 0 else "+inf")
        if obj is None:
            return "null"
        if kind is bool:
            return "true" if obj else "false"
        if kind is int and -MAX_SAFE_INT < obj <= MAX_SAFE_INT:
            return int.__repr__(obj)
        if kind is list or kind is PropertyValueList:
            # finite floats to 17 significant digits (the module's docstring says why that reads back the same);
            # the sum of finite floats is finite unless it overflows, which then goes the slower way all the same
            if {*map(type, obj)} <= FLOAT and (total := sum(obj)) - total == 0.0:
                n = len(obj)
                form = FLOAT_LISTS.get(n)
                if form is None:
                    form = FLOAT_LISTS[n] = "[" + ",".join(["%.17g"] * n) + "]"
                return form % tuple(obj)
            if {*map(type, obj)} == STR:      # column names
                return "[" + ",".join(map(ESCAPE, obj)) + "]"
            return "[" + ",".join([self.json(v) for v in obj]) + "]"
        if kind is dict or kind is PropertyValueColumnData or kind is PropertyValueDict:
            if not obj:
                return '{"type":"map"}'
            values = obj.values()
            if {*map(type, values)} == LIST:
                # lists only (a stream's new rows): if of finite floats, all in one format (see FLOAT_MAPS)
                flat = [*chain.from_iterable(values)]
                if (len(flat) <= FLOAT_MAP_MAX and {*map(type, flat)} <= FLOAT
                        and (total := sum(flat)) - total == 0.0):
                    form = FLOAT_MAPS.get(shape := (*obj, *map(len, values)))
                    if form is None and {*map(type, obj)} == STR:
                        if len(FLOAT_MAPS) >= 256:      # a few shapes a session (its sources, its steps a frame)
                            FLOAT_MAPS.clear()
                        form = FLOAT_MAPS[shape] = ('{"type":"map","entries":[' + ",".join(
                            ["[" + ESCAPE(k).replace("%", "%%") + ",[" + ",".join(["%.17g"] * len(v)) + "]]"
                             for k, v in obj.items()]) + "]}")
                    if form is not None:
                        return form % tuple(flat)
            json = self.json
            return ('{"type":"map","entries":['
                    + ",".join(["[" + (ESCAPE(k) if type(k) is str else json(k)) + "," + json(v) + "]"
                                for k, v in obj.items()]) + "]}")
        if kind is np.ndarray and obj.ndim and obj.flags.c_contiguous:
            dtype = BINARY_NAMES.get(obj.dtype)
            if dtype is not None:
                buffer = Buffer(fast_id(), obj.data)
                self.buffers.append(buffer)
                shape = obj.shape
                return NDARRAY % (ESCAPE(buffer.id), int.__repr__(shape[0]) if len(shape) == 1
                                  else ",".join(map(int.__repr__, shape)), dtype, BYTE_ORDER)
        return CONTENT_JSON(self.bokeh(obj))


class FramePatchDoc(patch_doc):
    """A PATCH-DOC made by create_patch_doc, its content written as JSON: decoded from it if asked for (nothing on
    the server asks: a message is sent as its JSON)."""

    @property
    def content(self):
        if self._content is None and self._content_json:
            self._content = json.loads(self._content_json)
        return self._content

    @content.setter
    def content(self, value) -> None:
        self._content, self._content_json = value, None


def fast_id() -> str:
    """Bokeh's `make_id` with its settings read once (FROZEN_SETTINGS) and without its import at each call."""
    if not SIMPLE_IDS:
        return make_id()
    with bokeh_ids._simple_id_lock:
        bokeh_ids._simple_id += 1
        return f"p{bokeh_ids._simple_id}"


def create_patch_doc(cls, events, **metadata):
    """Bokeh's `patch_doc.create`, its events written as JSON by FrameEncoder and its header and metadata as Bokeh
    writes them (see the module's docstring)."""
    msgid = fast_id()
    if not events:
        raise ValueError("PATCH-DOC message requires at least one event")
    docs = {event.document for event in events}
    if len(docs) != 1:
        raise ValueError("PATCH-DOC message configured with events for more than one document")
    [doc] = docs
    encoder = FrameEncoder(doc.models)
    header = {"msgid": msgid, "msgtype": cls.msgtype}
    if PRETTY or not OWN_TYPES.isdisjoint(Serializer._encoders):
        # pretty JSON asked for, or an encoder of its own registered with Bokeh for a type written here: Bokeh's way
        msg = cls(header, metadata, PatchJson(events=encoder.bokeh(events)))
        content = None
    else:
        msg = FramePatchDoc(header, metadata, None)
        content = '{"events":[' + ",".join([encoder.event(event) for event in events]) + "]}"
    if encoder.serializer is not None:       # without one no model went whole: Bokeh's flush would keep them all
        doc.models.flush_synced(lambda model: not encoder.serializer.has_ref(model))
    msg.add_buffers(*encoder.buffers)
    if content is not None:
        msg._content_json = content
        if not metadata:
            msg._metadata_json = "{}"
        if SIMPLE_IDS:      # json.dumps(header): an id of Bokeh's counter is "p" and digits, nothing to escape
            msg._header_json = (f'{{"msgid": "{msgid}", "msgtype": "{cls.msgtype}", '
                                f'"num_buffers": {len(encoder.buffers)}}}')
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
    global SIMPLE_IDS, PRETTY
    SIMPLE_IDS, PRETTY = settings.simple_ids(), settings.pretty()
    return True
