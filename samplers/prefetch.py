"""A generator's standard normals, drawn ahead on another core and handed out in the generator's own order.

Below the chain-block threshold an ensemble is one block on one stream, and drawing its normal variates is
about half of a step (docs/notes/throughput.md). One stream cannot be split between cores, but it can be
drawn ahead: a thread of its own fills the next chunks of normals while the stepping thread does the
arithmetic with the current one. The numbers a step receives are the ones the generator would have given it,
in the same order (numpy fills `standard_normal(a + b)` as `standard_normal(a)` then `standard_normal(b)`),
and `close` leaves the generator exactly where the handed-out normals end, so a run is the same bits with or
without drawing ahead.
"""
from __future__ import annotations

import math
import queue
import threading

import numpy as np

CHUNK = 1 << 16   # normals per chunk (0.6 ms of drawing, 512 kB): the hand-over is a small share of it
                  # (docs/notes/throughput.md)
DEPTH = 2         # chunks drawn and waiting at most


class NormalsAhead:
    """Stands in for `rng` in steps: `standard_normal` comes from chunks that a thread of its own draws ahead
    (the drawing releases the GIL); any other use of the generator first puts it where the handed-out
    normals end, and ends the drawing ahead (a step that draws anything else would make it rewind every
    step)."""

    def __init__(self, rng: np.random.Generator, chunk: int | None = None):
        self._rng, self._chunk, self._done = rng, int(chunk or CHUNK), False
        self._buf, self._pos = np.empty(0), 0
        state = rng.bit_generator.state
        self._span = (state, state)   # the generator's state at the start and the end of the current chunk
        self._ready: queue.Queue = queue.Queue(DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="normals-ahead", daemon=True)
        self._thread.start()

    def _draw(self):
        bits = self._rng.bit_generator
        try:
            while not self._stop.is_set():
                start = bits.state
                buf = self._rng.standard_normal(self._chunk)
                self._ready.put((buf, (start, bits.state)))
        except BaseException as e:   # handed to the stepping thread, which raises it
            self._ready.put((e, None))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if self._done or (dtype is not np.float64 and np.dtype(dtype) != np.float64):
            return self._passed("standard_normal")(size, dtype=dtype, out=out)
        shape = () if size is None else (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        n = math.prod(shape)
        if out is not None:
            if out.shape != shape and size is not None:
                raise ValueError("size must match out.shape when used together")
            shape, n = out.shape, out.size
        got = self._take(n)
        if out is not None:
            out[...] = got.reshape(shape)   # numpy fills out in C order too
            return out
        return float(got[0]) if size is None else got.reshape(shape)

    def _take(self, n: int) -> np.ndarray:
        if self._pos + n <= self._buf.size:   # the common case: a view of the current chunk
            self._pos += n
            return self._buf[self._pos - n: self._pos]
        got, k = np.empty(n), 0
        while k < n:
            if self._pos == self._buf.size:
                buf, span = self._ready.get()
                if span is None:
                    raise buf
                self._buf, self._pos, self._span = buf, 0, span
            m = min(n - k, self._buf.size - self._pos)
            got[k: k + m] = self._buf[self._pos: self._pos + m]
            k, self._pos = k + m, self._pos + m
        return got

    def __getattr__(self, name):
        return self._passed(name)

    def _passed(self, name):
        self.close()
        return getattr(self._rng, name)

    def close(self):
        """Stop drawing ahead and put the generator where the handed-out normals end."""
        if self._done:
            return
        self._done = True
        self._stop.set()
        while self._thread.is_alive():   # empty the queue so that a waiting put returns and the thread ends
            while not self._ready.empty():
                self._ready.get_nowait()
            self._thread.join(0.001)
        start, end = self._span
        if self._pos == self._buf.size:   # the current chunk used up (or none begun)
            self._rng.bit_generator.state = end
        else:
            self._rng.bit_generator.state = start
            self._rng.standard_normal(self._pos)   # draws the handed-out part again: the stream's position
        self._buf = np.empty(0)
