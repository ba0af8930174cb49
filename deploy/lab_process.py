"""One Panel process of the class deployment, forked from a parent that has already imported the app.

    python deploy/lab_process.py serve app --port 5006 ...      (the arguments of `panel serve`)

A Panel process starts in about 4 s of CPU, most of it imports (Panel, Bokeh, scipy, sympy, the app: see
docs/notes/deploy.md); a class's other process and its students share the same cores, and a restart under load
took 13-23 s (issue 28). Here the parent imports once (`app.views.process.warm`), then tornado's
`fork_processes(1)` forks the process that serves; when that one dies of a signal or an error (a crash, the OOM
killer, a `kill -9`), tornado forks it again from the same warm parent, which has only its first page to build.
The parent is what supervisord starts and restarts: should it die, the serving process ends with it (the kernel
kills it: `PR_SET_PDEATHSIG`; SIGTERM was not enough, a Panel process with sessions can stay after it, holding the
port) and supervisord starts both again, as before. A port already taken ends the parent at once, before it
forks, so that supervisord marks the process FATAL after its retries, as it did a `panel serve` that could not
start.

A restarted process's students reconnect together (their pages' Reconnect, which marks its request with the
`labreconnect` cookie). nginx lets them in at a fixed rate (nginx.conf.template); here their pages are built one at
a time, and never while a new visitor's page is being built (`ReconnectGate`), so that a visitor waits behind one
reconnect at most, whatever the process's pace (issue 28).
"""
from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_RESTARTS = 100         # tornado's fork_processes then ends the parent, and supervisord decides
PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int) -> None:
    """This process is killed when its parent ends (Linux; elsewhere it outlives it, as without this)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:         # the parent ended before the call
        os.kill(os.getpid(), signal.SIGKILL)


class ReconnectGate:
    """On the event loop: `visitor()` around a new visitor's page build, `reconnect()` around a reconnect's, which
    waits until no visitor's build is under way and no other reconnect's is. After a reconnect's build the next one
    waits `pause` s more: a visitor's request takes a few turns of the loop to reach its handler (accepted, read,
    parsed), and a build holds the loop for all of its half second of CPU; back to back, the reconnects' builds held a
    visitor's request a turn each (docs/notes/deploy.md, `class_load --stampede`)."""

    def __init__(self, pause: float = 0.1):
        self.pause = pause
        self.visitors = 0
        self._turn: asyncio.Lock | None = None       # made on the loop it serves
        self._clear: asyncio.Event | None = None

    def _ready(self):
        if self._turn is None:
            self._turn, self._clear = asyncio.Lock(), asyncio.Event()
            self._clear.set()

    @contextlib.asynccontextmanager
    async def visitor(self):
        self._ready()
        self.visitors += 1
        self._clear.clear()
        try:
            yield
        finally:
            self.visitors -= 1
            if not self.visitors:
                self._clear.set()

    @contextlib.asynccontextmanager
    async def reconnect(self):
        self._ready()
        async with self._turn:
            while self.visitors:
                await self._clear.wait()
            try:
                yield
            finally:
                await asyncio.sleep(self.pause)


GATE = ReconnectGate()


def pace_reconnects() -> None:
    """Serve the app's pages through GATE: Panel's page handler, replaced in the routes `panel serve` builds."""
    from panel.io import server

    from app.views.connection import RECONNECT_COOKIE
    name = RECONNECT_COOKIE.split("=", 1)[0]

    class PacedDocHandler(server.DocHandler):
        async def get(self, *args, **kwargs):
            gate = GATE.reconnect() if self.get_cookie(name) else GATE.visitor()
            async with gate:
                return await super().get(*args, **kwargs)

    routes = server.per_app_patterns
    for i, (pattern, handler) in enumerate(routes):
        if handler is server.DocHandler:
            routes[i] = (pattern, PacedDocHandler)


def port_taken(argv: list[str]) -> str | None:
    """`panel serve`'s --address:--port if something else listens there."""
    opts = dict(zip(argv, argv[1:]))
    address, port = opts.get("--address", "127.0.0.1"), int(opts.get("--port", 5006))
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)       # as tornado binds it
        try:
            s.bind((address, port))
        except OSError:
            return f"{address}:{port}"
    return None


def main(argv: list[str]) -> None:
    taken = port_taken(argv)
    if taken:
        sys.exit(f"Cannot start: {taken} is already in use")
    sys.path.insert(0, str(ROOT))
    import panel.command.serve  # noqa: F401  (what `panel serve` and a session import, here once)

    import app.views.connection  # noqa: F401
    import app.views.page  # noqa: F401
    from app.views.process import warm
    warm()
    pace_reconnects()
    import threading
    assert threading.active_count() == 1, threading.enumerate()     # a fork copies only the forking thread
    from tornado.process import fork_processes
    parent = os.getpid()
    fork_processes(1, max_restarts=MAX_RESTARTS)       # returns in the serving process, each time it is forked
    end_with_parent(parent)
    from panel.command import main as panel_main
    sys.argv = ["panel", *argv]
    panel_main()


if __name__ == "__main__":
    main(sys.argv[1:])
