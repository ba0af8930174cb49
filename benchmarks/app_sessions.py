"""How many updates per second one `panel serve app` process sustains for 1, 5 and 10 sessions.

Prints figures (not a test). Starts the server on a free port on 127.0.0.1, opens N sessions
that autoplay (`?play=1`), counts for each the frames that arrive (each frame replaces the
histogram's heights) over a fixed window, and reads the server's CPU time from /proc.

* clients = protocol: minimal Bokeh-protocol websocket clients in this process (they only count
  the frames pushed to them), so the machine's two cores are the server's: its throughput.
* clients = browser: N headless Chromium pages (Debian's chromium via Playwright, software
  rendering), counting at each animation frame whether the histogram has changed since the last:
  the updates the page shows (BokehJS repaints in animation frames too, so frames that arrive
  faster than the page can draw them merge and count once). With 10 pages the browsers compete
  with the server for the same two cores, and each page's drawing costs more than its frames
  cost the server.

    python -m benchmarks.app_sessions [--clients protocol|browser|both] [--seconds 8] [--chains 1000]

(from the repository root, as a module: it starts the server with the browser tests' helper,
tests/app_browser_support.py)
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import socket
import statistics
import time
import weakref
from pathlib import Path
from urllib.parse import urlsplit

from tornado.httputil import HTTPHeaders

from tests.app_browser_support import CHROMIUM, CHROMIUM_ARGS, AppServer


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def query(args) -> dict:
    return {"pot": args.potential, "s": args.sampler, "n": str(args.chains), "speed": str(args.speed), "play": "1"}


# what BokehJS sends once the page has rendered: Panel counts the session as loaded from then on
DOCUMENT_READY = json.dumps({"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
    "type": "event", "name": "document_ready", "values": {"type": "map"}}}]})
HANDSHAKE_TIMEOUT = 20.0
READ_EVERY = 0.05           # s: ProtocolClient's read_every for clients that count frames over seconds
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"       # RFC 6455 1.3: the server's proof it read our key


async def bokeh_messages(ws, stop):
    """(msgtype, content) of each whole Bokeh protocol message on a session's websocket (tornado's client) until
    `stop` is set or the socket closes; the document is asked for (PULL-DOC-REQ) once the server acknowledges the
    connection. (ProtocolClient reads its socket with BokehSocket instead.)"""
    parts, sent = [], False
    while not stop.is_set():
        frame = await ws.read_message()
        if frame is None:
            return
        parts.append(frame)
        header = json.loads(parts[0])
        if len(parts) < 3 + int(header.get("num_buffers", 0)) * 2:
            continue
        content, parts = parts[2], []
        kind = header["msgtype"]
        if kind == "ACK" and not sent:
            sent = True
            for part in (json.dumps({"msgid": "1", "msgtype": "PULL-DOC-REQ"}), "{}", "{}"):
                await ws.write_message(part)
        yield kind, content


class BokehSocket:
    """A websocket's client end (RFC 6455, no extensions) that hands each whole Bokeh protocol message to
    `on_message(kind, content)`: its header's msgtype and its content part as text; the binary buffers are skipped
    unread. Tornado's websocket client resolves a few futures and a queue per websocket frame, and a lab's frame is
    one Bokeh message of 15 websocket frames (3 text parts, then a header and the bytes of each buffer): with the
    clients on the cores of the server they measure, that was CPU taken from the server. Here a read from the
    socket, however many frames it brings, is parsed in one loop; read as data comes (`receive`) or, all of a
    loop's sockets at once, every so often (`poll_every`)."""

    def __init__(self, on_message):
        self.on_message = on_message
        self.headers = None                   # the handshake's answer (tornado's HTTPHeaders: case-insensitive)
        self.sock: socket.socket | None = None
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self._buf = bytearray()
        self._fragments: bytearray | None = None
        self._part, self._parts, self._kind, self._content = 0, 3, None, None
        self._key = base64.b64encode(os.urandom(16)).decode()

    async def connect(self, url: str, headers: dict[str, str]):
        """Open the socket to ws://host:port/path?query with these request headers; returns once the server
        has accepted it (raises ConnectionError if it answered anything but 101)."""
        loop = asyncio.get_running_loop()
        u = urlsplit(url)
        for family, kind, proto, _, address in await loop.getaddrinfo(u.hostname, u.port or 80,
                                                                         type=socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, address)
                break
            except OSError:
                sock.close()
        else:
            raise ConnectionError(f"cannot connect to {u.netloc}")
        self.sock = sock
        lines = [f"GET {u.path}{'?' + u.query if u.query else ''} HTTP/1.1", f"Host: {u.netloc}",
                 "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {self._key}",
                 "Sec-WebSocket-Version: 13", *(f"{k}: {v}" for k, v in headers.items())]
        await loop.sock_sendall(sock, ("\r\n".join(lines) + "\r\n\r\n").encode())
        while self.headers is None:
            await self.receive()
            if self.closed.done():
                raise ConnectionError("closed before the websocket was accepted")

    async def receive(self):
        """Wait for data, and take what has come."""
        try:
            data = await asyncio.get_running_loop().sock_recv(self.sock, 1 << 18)
        except OSError:
            data = b""
        self.feed(data)

    def read_available(self):
        """Take what has come, without waiting."""
        while not self.closed.done():
            try:
                data = self.sock.recv(1 << 18)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            self.feed(data)

    def poll_every(self, every: float):
        """From now on, have the socket read every `every` s with the loop's other sockets at that period (until it
        closes: `closed`)."""
        pollers = _POLLERS.setdefault(asyncio.get_running_loop(), {})
        pollers.setdefault(every, _Poller(every)).add(self)

    def feed(self, data: bytes):
        """Parse what was read (b"": the connection has ended)."""
        if not data:
            self._ended()
            return
        buf = self._buf
        buf += data
        if self.headers is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status, _, rest = bytes(buf[:end]).decode("latin-1").partition("\r\n")
            del buf[:end + 4]
            headers = HTTPHeaders.parse(rest + "\r\n")
            accept = base64.b64encode(hashlib.sha1(self._key.encode() + _WS_GUID).digest()).decode()
            if status.split()[1:2] != ["101"] or headers.get("Sec-WebSocket-Accept") != accept:
                raise ConnectionError(f"websocket refused: {status}")
            self.headers = headers
        pos, end = 0, len(buf)
        while end - pos >= 2:
            b0, n, at = buf[pos], buf[pos + 1] & 0x7F, pos + 2
            if buf[pos + 1] & 0x80:               # a server must not mask its frames (RFC 6455 5.1)
                self.close(1002)
                return
            if n == 126:
                if end - at < 2:
                    break
                n, at = int.from_bytes(buf[at:at + 2], "big"), at + 2
            elif n == 127:
                if end - at < 8:
                    break
                n, at = int.from_bytes(buf[at:at + 8], "big"), at + 8
            if end - at < n:
                break
            pos = at + n
            opcode = b0 & 0x0F
            if opcode >= 8:                       # control frames: never fragmented, may come between fragments
                if opcode == 8:
                    self.close(int.from_bytes(buf[at:at + 2], "big") if n >= 2 else None)
                    return
                if opcode == 9:
                    self._send(0xA, bytes(buf[at:pos]))
                continue
            if not b0 & 0x80 or self._fragments is not None:      # a fragmented message: one part once whole
                self._fragments = (self._fragments or bytearray()) + buf[at:pos]
                if not b0 & 0x80:
                    continue
                payload, self._fragments = self._fragments, None
            else:
                payload = None
            part = self._part
            if part == 0:
                header = json.loads(payload if payload is not None else buf[at:pos])
                self._kind, self._parts = header["msgtype"], 3 + 2 * int(header.get("num_buffers", 0))
            elif part == 2:
                self._content = (payload if payload is not None else buf[at:pos]).decode()
            self._part = part + 1
            if self._part == self._parts:
                self._part = 0
                self.on_message(self._kind, self._content)
        del buf[:pos]

    def send(self, text: str):
        self._send(0x1, text.encode())

    def _send(self, opcode: int, payload: bytes):
        if self.sock is None or self.closed.done():
            return
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0xFE]) + n.to_bytes(2, "big")
                                         if n < 1 << 16 else bytes([0xFF]) + n.to_bytes(8, "big"))
        mask = os.urandom(4)                      # a client masks every frame (RFC 6455 5.3)
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        frame = head + mask + masked
        # a client's frames are a few hundred bytes, into a socket's empty send buffer
        if self.sock.send(frame) != len(frame):
            raise ConnectionError("the socket's send buffer is full")

    def close(self, code: int | None = 1000):
        """Say goodbye (a close frame) and close the connection: the session sees its page go."""
        if self.sock is not None and not self.closed.done():
            try:
                self._send(0x8, code.to_bytes(2, "big") if code else b"")
            except OSError:
                pass
        self._ended()

    def fail(self, error: Exception):
        """End the connection with this error: what its reader raises."""
        if not self.closed.done():
            self.closed.set_exception(error)
        self._ended()

    def _ended(self):
        if not self.closed.done():
            self.closed.set_result(None)
        if self.sock is not None:
            self.sock.close()


class _Poller:
    """Reads its sockets every `every` s, all in one turn of the event loop."""

    def __init__(self, every: float):
        self.every = every
        self.sockets: set[BokehSocket] = set()
        self.task: asyncio.Task | None = None

    def add(self, s: BokehSocket):
        self.sockets.add(s)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())

    async def _run(self):
        while self.sockets:
            await asyncio.sleep(self.every)
            for s in list(self.sockets):
                try:
                    s.read_available()
                except Exception as e:        # noqa: BLE001 (its client's error, not the other sockets')
                    s.fail(e)
                if s.closed.done():
                    self.sockets.discard(s)


_POLLERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()       # {event loop: {period: _Poller}}


class ProtocolClient:
    """A minimal Bokeh-protocol websocket client: enough to subscribe to a session, announce it
    loaded as a browser does, and count the frames the server pushes. (bokeh.client's own state
    machine recurses once per message and overflows the stack after about a thousand messages, so it
    cannot watch a live lab.)

    read_every (s; READ_EVERY): once the first frame has come, the socket is read every read_every s, with the
    loop's other such sockets, in one turn. A wake-up (the loop's turn, its system calls) costs about as much
    whether it brings part of a message (the server writes a message's websocket frames one by one, and a client
    that reads as data comes wakes between them) or a few messages. The server cannot tell: its writes land in the
    socket's buffer either way (a few messages fit), and every frame is counted, up to read_every late (a rate over
    seconds moves by that much at either end; the handshake, the document and the first frame are read as they
    come, so the page-open phases are as before). A connection's end is seen up to as late. Clients whose figures
    are the times between frames (benchmarks/hostile_links.py) leave it at None. docs/notes/deploy.md has what it
    saves."""

    def __init__(self, server: AppServer | None, args=None, url: str | None = None, cookie: str | None = None,
                 read_every: float | None = None):
        """The page at server.url with args' query, or at url (a full URL with its query); cookie: sent with
        the page's request, as a browser that has been there before sends it (a proxy's affinity cookie)."""
        from urllib.parse import urlencode
        from urllib.request import Request, urlopen
        url = url or server.url + "?" + urlencode(query(args))
        self.opened = time.monotonic()          # page-open latency: from here to first_frame
        self.first_frame = None
        with urlopen(Request(url, headers={"Cookie": cookie} if cookie else {}), timeout=60) as r:
            html = r.read().decode()
            self.page_headers = r.headers
        self.token = re.search(r'"token":"([^"]+)"', html).group(1)
        # with the page's query, as BokehJS connects (pull_session's args_string): a session the server
        # rebuilds from the token (its page's was dropped, or lives in another process) reads its link from it
        page, _, search = url.partition("?")
        self.ws_url = page.replace("http://", "ws://") + "/ws" + (f"?{search}" if search else "")
        # the page's cookies go back with the websocket, as a browser's would (a proxy's affinity cookie)
        self.cookie = "; ".join(c.split(";")[0] for c in self.page_headers.get_all("Set-Cookie") or []) or cookie
        self.ws_headers = None
        self.frames = 0
        self.hist_id = None
        self._socket: BokehSocket | None = None
        self._asked = False
        self._needle = None                     # the histogram's id as it appears in a patch that changes it
        self.read_every = read_every

    async def run(self, stop):
        self._socket = sock = BokehSocket(self._on_message)
        headers = {"Sec-WebSocket-Protocol": f"bokeh,{self.token}", **({"Cookie": self.cookie} if self.cookie else {})}
        try:     # a cancelled client closes its socket: its session must see the page go
            try:     # tornado's websocket_connect allowed 20 s (its request_timeout): later is an error, as before
                await asyncio.wait_for(sock.connect(self.ws_url, headers), HANDSHAKE_TIMEOUT)
            except TimeoutError:
                raise TimeoutError(f"websocket not accepted within {HANDSHAKE_TIMEOUT:g} s") from None
            self.ws_headers = sock.headers
            while not stop.is_set() and not sock.closed.done():
                if self.first_frame is not None and self.read_every:
                    sock.poll_every(self.read_every)
                    stopped = asyncio.ensure_future(stop.wait())
                    try:
                        await asyncio.wait([sock.closed, stopped], return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        stopped.cancel()
                    if sock.closed.done():
                        sock.closed.result()          # its reader's error, if any
                    break
                await sock.receive()
        finally:
            sock.close()

    def _on_message(self, kind: str, content: str):
        if kind == "ACK" and not self._asked:
            self._asked = True
            self._send("1", "PULL-DOC-REQ", "{}")
        elif kind == "PULL-DOC-REPLY":
            self.on_patch(content)
            self._found(_find_named(json.loads(content), "hist-A"))
            self._send("2", "PATCH-DOC", DOCUMENT_READY)
        elif kind == "PATCH-DOC":
            self.on_patch(content)
            if self.hist_id is None and '"hist-A"' in content:
                # the runs are built after the page opens: their figures arrive in a patch
                self._found(_find_named(json.loads(content), "hist-A"))
            elif self._needle and self._needle in content:
                self.frames += 1      # the histogram changes once per frame
                if self.first_frame is None:
                    self.first_frame = time.monotonic()

    def _found(self, hist_id):
        self.hist_id = hist_id
        self._needle = f'"id":"{hist_id}"' if hist_id else None

    def _send(self, msgid: str, msgtype: str, content: str):
        for part in (json.dumps({"msgid": msgid, "msgtype": msgtype}), "{}", content):
            self._socket.send(part)

    def on_patch(self, content: str) -> None:
        """The document, then each change the server pushes (JSON text), for clients that look for more than
        frames."""


def _find_named(obj, name):
    if isinstance(obj, dict):
        if obj.get("attributes", {}).get("name") == name:
            return obj.get("id")
        for v in obj.values():
            found = _find_named(v, name)
            if found:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find_named(v, name)
            if found:
                return found
    return None


def protocol_clients(server: AppServer, n: int, args):
    async def main():
        stop = asyncio.Event()
        clients, tasks = [], []
        loop = asyncio.get_running_loop()
        for _ in range(n):
            # connect each session right after creating it: the server drops sessions left unconnected
            # for --unused-session-lifetime (5 s), and creating ten takes longer than that
            c = await loop.run_in_executor(None, ProtocolClient, server, args, None, None, READ_EVERY)
            clients.append(c)
            tasks.append(asyncio.create_task(c.run(stop)))
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.5)                       # every session subscribed and in its steady state
        for t in tasks:
            if t.done() and t.exception():
                raise t.exception()
        start = [c.frames for c in clients]
        c0, t0, me0 = cpu_seconds(server.proc.pid), time.monotonic(), time.process_time()
        await asyncio.sleep(args.seconds)
        dt = time.monotonic() - t0
        cpu = (cpu_seconds(server.proc.pid) - c0) / dt
        print(f"  (the {n} clients used {100 * (time.process_time() - me0) / dt:.0f} % CPU)")
        rates = [(c.frames - s) / dt for c, s in zip(clients, start)]
        stop.set()
        for t in tasks:
            t.cancel()
        return rates, cpu
    return asyncio.run(main())


COUNT_JS = """([seconds]) => new Promise(resolve => {
    // count the frames the page shows: at each animation frame, has the histogram changed since the last?
    const find = () => { let f = null; for (const d of window.Bokeh.documents) for (const m of d.all_models)
        if (m.name === "hist-A") f = m; return f; };
    const col = (m) => m.data.get ? m.data.get("top0") : m.data["top0"];
    let n = 0, last = null;
    const start = performance.now();
    const tick = () => {
        const m = find();
        const c = m ? col(m) : null;
        if (c && c !== last) { n++; last = c; }
        if (performance.now() - start < seconds * 1000) requestAnimationFrame(tick);
        else resolve(n / seconds);
    };
    requestAnimationFrame(tick);
})"""


def browser_clients(server: AppServer, n: int, args):
    from urllib.parse import urlencode

    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = []
        for _ in range(n):
            page = b.new_page(viewport={"width": 1280, "height": 800})
            page.goto(server.url + "?" + urlencode(query(args)))
            page.locator("[data-metric='t-a']").first.wait_for(timeout=60_000)
            pages.append(page)
        time.sleep(2.0)
        c0, t0 = cpu_seconds(server.proc.pid), time.monotonic()
        handles = [page.evaluate_handle("() => 0") for page in pages]   # noqa: F841 (pages stay alive)
        # the pages count concurrently: start them all, then collect
        rates = []
        for page in pages:
            page.evaluate(f"(js) => {{ window.__rate = (eval(js))([{args.seconds}]); }}", COUNT_JS)
        for page in pages:
            rates.append(page.evaluate("() => window.__rate"))
        dt = time.monotonic() - t0
        cpu = (cpu_seconds(server.proc.pid) - c0) / dt
        b.close()
    return rates, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", choices=["protocol", "browser", "both"], default="both")
    ap.add_argument("--sessions", type=int, nargs="*", default=[1, 5, 10])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--chains", type=int, default=1000)
    ap.add_argument("--speed", type=int, default=5)
    ap.add_argument("--potential", default="banana")
    ap.add_argument("--sampler", default="sghmc")
    args = ap.parse_args()
    kinds = ["protocol", "browser"] if args.clients == "both" else [args.clients]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print(f"{args.potential}, {args.sampler}, {args.chains} chains, {args.speed} steps per frame; frame period 40 ms "
          f"(25 updates/s at most); {os.cpu_count()} cores")
    print(f"{'clients':<9}{'sessions':>9}{'updates/s per session (min / median)':>40}{'server CPU':>12}")
    for kind in kinds:
        for n in args.sessions:
            server = AppServer().wait()
            try:
                rates, cpu = (protocol_clients if kind == "protocol" else browser_clients)(server, n, args)
            finally:
                server.stop()
            print(f"{kind:<9}{n:>9}{min(rates):>26.1f} / {statistics.median(rates):<11.1f}{cpu * 100:>10.0f} %")
    print("targets: >= 20 updates/s in the browser for one session; >= 10 updates/s each for 10 sessions")


if __name__ == "__main__":
    main()
