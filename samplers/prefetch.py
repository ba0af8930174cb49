"""A generator's standard normals, drawn ahead on another core and handed out in the generator's own order.

Below the chain-block threshold an ensemble is one block on one stream, and drawing its normal variates is
about half of a step (docs/notes/throughput.md). One stream cannot be split between cores, but it can be
drawn ahead: a thread of its own fills the next chunks of normals while the stepping thread does the
arithmetic with the current one. The numbers a step receives are the ones the generator would have given it,
in the same order (numpy fills `standard_normal(a + b)` as `standard_normal(a)` then `standard_normal(b)`),
and `close` leaves the generator exactly where the handed-out normals end, so a run is the same bits with or
without drawing ahead.

A float32 ensemble's normals (`Float32Normals`) are made from the generator's raw words in chunks of their
own, handed out in order; drawn ahead, the chunks are the same ones, made on the other core.
"""
from __future__ import annotations

import math
import queue
import threading

import numpy as np

CHUNK = 1 << 16   # normals per chunk (0.6 ms of drawing, 512 kB): the hand-over is a small share of it
                  # (docs/notes/throughput.md)
DEPTH = 2         # chunks drawn and waiting at most


class _Chunks:
    """Hands out `standard_normal` from consecutive chunks of normals, in order (views of a chunk where
    one holds the request)."""
    dtype = np.dtype(np.float64)
    _live = True   # whether requests in its own dtype are served from chunks (False once closed)

    def standard_normal(self, size=None, dtype=None, out=None):
        # a step's request (a shape, its own dtype) that the current chunk holds: a view, in few Python
        # operations (at 10^3 chains a step makes two of them, and its Python is most of it)
        if dtype is None and out is None and type(size) is tuple and self._live:
            end = self._pos + math.prod(size)
            if end <= self._buf.size:
                got = self._buf[self._pos: end]
                self._pos = end
                return got.reshape(size)
        dtype = self.dtype if dtype is None else dtype
        if not self._serves(dtype):
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
        got, k = np.empty(n, self.dtype), 0
        while k < n:
            if self._pos == self._buf.size:
                self._buf, self._pos = self._next_chunk(), 0
            m = min(n - k, self._buf.size - self._pos)
            got[k: k + m] = self._buf[self._pos: self._pos + m]
            k, self._pos = k + m, self._pos + m
        return got

    def __getattr__(self, name):
        return self._passed(name)


class Float32Normals(_Chunks):
    """A generator for a float32 ensemble: `standard_normal` gives float32 normals made by `normals_from_words`
    from the generator's raw 64-bit words, a chunk at a time (a small draw costs no more numpy calls than a
    view); any other draw is the generator's own, made after the words of the chunk in use."""
    dtype = np.dtype(np.float32)

    def __init__(self, rng: np.random.Generator, chunk: int | None = None):
        self._rng, self.chunk = rng, 2 * -(-int(chunk or CHUNK) // 2)   # even: two normals a word
        self._raw = rng.bit_generator.random_raw
        self._buf, self._pos = np.empty(0, np.float32), 0

    def make_chunk(self) -> np.ndarray:
        return normals_from_words(self._raw(self.chunk // 2), np.empty(self.chunk, np.float32))

    _next_chunk = make_chunk

    def _serves(self, dtype) -> bool:
        return np.dtype(dtype) == np.float32

    def _passed(self, name):
        return getattr(self._rng, name)


def normals_from_words(words: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Two float32 N(0, 1) per 64-bit word, Box and Muller's (1958) pair: the words read as 2n 32-bit ones, k
    for the k-th pair and n + k, with u = (k-th + 1/2) / 2^32 in (0, 1), phi = 2 pi ((n + k)-th, signed) / 2^32
    in [-pi, pi) and rho = sqrt(-2 ln u), out = (rho cos phi for each pair, then rho sin phi for each pair),
    independent standard normals. (Not u from each word's low half and phi from its high half: that makes
    both conversions strided, and slower.)

    Vectorised passes over half as many entries cost a fraction of numpy's float32 ziggurat
    (`Generator.standard_normal(dtype=np.float32)`), whose branching per variate is most of a float32 step
    (docs/notes/throughput.md). The 32-bit u cuts the law at |z| = sqrt(2 ln 2^33) = 6.77, a mass of 1.3e-11
    (tests/test_prefetch.py checks the law)."""
    n = words.size
    rho, second = out[:n], out[n:]
    np.multiply(words.view(np.uint32)[:n], np.float32(TWO32), out=rho, dtype=np.float32)
    rho += np.float32(TWO32 / 2)
    np.log(rho, out=rho)
    rho *= np.float32(-2.0)
    np.sqrt(rho, out=rho)
    phi = np.multiply(words.view(np.int32)[n:], np.float32(2 * np.pi * TWO32), dtype=np.float32)
    np.sin(phi, out=second)
    second *= rho
    np.cos(phi, out=phi)
    rho *= phi
    return out


TWO32 = 2.0 ** -32


class NormalsAhead(_Chunks):
    """Stands in for `rng` in steps: `standard_normal` comes from chunks that a thread of its own draws ahead
    (the drawing releases the GIL); any other use of the generator first puts it where the handed-out
    normals end, and ends the drawing ahead (a step that draws anything else would make it rewind every
    step). Given a `Float32Normals`, it continues that one's chunks, and at the end hands the chunk in use
    back with the generator after it, where it would have been without drawing ahead."""

    def __init__(self, rng, chunk: int | None = None):
        self._words = rng if isinstance(rng, Float32Normals) else None
        if self._words is not None:
            self._rng, self._chunk, self.dtype = rng._rng, rng.chunk, rng.dtype
            self._make = rng.make_chunk
            self._buf, self._pos = rng._buf, rng._pos
        else:
            self._rng, self._chunk = rng, int(chunk or CHUNK)
            self._make = lambda: self._rng.standard_normal(self._chunk)
            self._buf, self._pos = np.empty(0), 0
        self._done = False
        state = self._rng.bit_generator.state
        self._span = (state, state)   # the generator's state at the start and the end of the current chunk
        self._ready: queue.Queue = queue.Queue(DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="normals-ahead", daemon=True)
        self._thread.start()

    def _draw(self):
        bits = self._rng.bit_generator
        try:
            end = bits.state   # read once a chunk (it holds the GIL, which the stepping thread may then wait for)
            while not self._stop.is_set():
                start = end   # a chunk starts where the last one ended
                buf = self._make()
                end = bits.state
                self._ready.put((buf, (start, end)))
        except BaseException as e:   # handed to the stepping thread, which raises it
            self._ready.put((e, None))

    def _serves(self, dtype) -> bool:
        return not self._done and np.dtype(dtype) == self.dtype

    def _next_chunk(self) -> np.ndarray:
        buf, span = self._ready.get()
        if span is None:
            raise buf
        self._span = span
        return buf

    def _passed(self, name):
        self.close()
        return getattr(self._rng if self._words is None else self._words, name)

    def close(self):
        """Stop drawing ahead and put the generator where the handed-out normals end (float32: after the
        chunk in use, which goes back to the `Float32Normals`)."""
        if self._done:
            return
        self._done, self._live = True, False
        self._stop.set()
        while self._thread.is_alive():   # empty the queue so that a waiting put returns and the thread ends
            while not self._ready.empty():
                self._ready.get_nowait()
            self._thread.join(0.001)
        start, end = self._span
        if self._words is not None:
            self._rng.bit_generator.state = end
            self._words._buf, self._words._pos = self._buf, self._pos
        elif self._pos == self._buf.size:   # the current chunk used up (or none begun)
            self._rng.bit_generator.state = end
        else:
            self._rng.bit_generator.state = start
            self._rng.standard_normal(self._pos)   # draws the handed-out part again: the stream's position
        self._buf = np.empty(0, self.dtype)
