"""The class deployment (deploy/class_server.py): nginx in front of two `panel serve app` processes.

Started as a lecturer would, on free ports: the page comes from a Panel process and its static files from
nginx, a websocket reaches the process its cookie names (the one that served the page), two browsers
with different cookies run their labs on different processes, and `stop` leaves no process behind.
"""
import asyncio
import re
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from app_browser_support import free_port, wait_for_step

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # deploy/ is a directory of scripts, not an installed package
from deploy.class_server import Deployment, nginx_binary, start  # noqa: E402

pytestmark = pytest.mark.skipif(nginx_binary() is None,
                                reason="nginx is not installed (.ci/run installs it: apt-get install -y nginx)")


def get(url: str, cookie: str | None = None):
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=60) as r:
        return r.status, r.headers, r.read().decode(errors="replace")


def websocket_backend(dep: Deployment, page_html: str, cookie: str | None) -> str:
    """The process nginx sent a websocket to (its X-Lab-Backend header on the 101 response)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect
    token = re.search(r'"token":"([^"]+)"', page_html).group(1)

    async def connect():
        url = dep.url.replace("http://", "ws://") + "/ws"
        ws = await websocket_connect(HTTPRequest(url, headers={"Cookie": cookie} if cookie else None),
                                     subprotocols=["bokeh", token])
        ws.close()
        return ws.headers.get("X-Lab-Backend")
    with ThreadPoolExecutor(1) as pool:      # this thread runs Playwright's event loop
        return pool.submit(asyncio.run, connect()).result()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def open_lab(browser, dep: Deployment, cookie: str | None):
    """A browser page on the lab with the given affinity cookie; returns the page, the process that
    served the page, the processes its websockets reached, and every response that nginx did not serve
    itself or that failed."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    if cookie:
        context.add_cookies([{"name": "labsrv", "value": cookie, "url": dep.url}])
    page = context.new_page()
    odd, sockets = [], []
    page.on("response", lambda r: odd.append((r.status, r.url)) if r.status >= 400 or (
        "/static/" in r.url and r.headers.get("x-served-by") != "nginx") else None)
    page.on("requestfailed", lambda r: odd.append((r.failure, r.url)))
    cdp = context.new_cdp_session(page)      # Playwright's websocket events do not carry the headers
    cdp.send("Network.enable")
    cdp.on("Network.webSocketHandshakeResponseReceived",
           lambda e: sockets.append({k.lower(): v for k, v in e["response"]["headers"].items()}.get("x-lab-backend")))
    response = page.goto(dep.url + "?pot=gaussian&s=sgld&n=300&play=1", timeout=60_000)
    page.locator("[data-metric='t-a']").first.wait_for(timeout=60_000)   # the lab's first frame
    return page, response.headers.get("x-lab-backend"), sockets, odd


def test_a_class_deployment_serves_static_files_from_nginx_keeps_each_session_on_its_process_and_stops(
        browser, tmp_path):
    dep = start(port=free_port(), procs=2, run_dir=tmp_path / "run", timeout=120, say=lambda *_: None)
    try:
        # the page is a Panel process's, and a new visitor gets the cookie naming it
        status, headers, html = get(dep.url)
        assert status == 200 and headers["Server"].startswith("TornadoServer")
        first = headers["X-Lab-Backend"]
        assert first in ("lab0", "lab1")
        assert headers["Set-Cookie"].startswith(f"labsrv={first};") and "HttpOnly" in headers["Set-Cookie"]
        # new visitors are spread over the processes (round robin)
        assert get(dep.url)[1]["X-Lab-Backend"] == {"lab0": "lab1", "lab1": "lab0"}[first]

        # every static file the page names comes from nginx, cacheable, without the affinity cookie
        urls = sorted(set(re.findall(r'(?:src|href)="\.?/?(static/[^"]+|favicon\.ico)"', html)))
        assert any(u.startswith("static/js/bokeh") for u in urls) and any("extensions/panel/" in u for u in urls)
        for u in urls:
            status, h, _ = get(dep.url.rsplit("/", 1)[0] + "/" + u)
            assert (status, h["Server"].split("/")[0], h["X-Served-By"]) == (200, "nginx", "nginx"), u
            assert "max-age" in h["Cache-Control"] and "Set-Cookie" not in h and "X-Lab-Backend" not in h, u

        # the websocket goes where the cookie says: the page's process, or, with the other cookie, the other
        other = {"lab0": "lab1", "lab1": "lab0"}[first]
        assert websocket_backend(dep, html, f"labsrv={first}") == first
        assert websocket_backend(dep, html, f"labsrv={other}") == other

        # a browser with no cookie gets one, and its websocket reaches the process that served its page
        page, served, sockets, odd = open_lab(browser, dep, None)
        assert sockets and set(sockets) == {served}, (served, sockets)
        page.context.close()
        # two students whose cookies name different processes each get a working lab from their own
        labs = [open_lab(browser, dep, name) for name in ("lab0", "lab1")]
        for name, (page, served, sockets, odd) in zip(("lab0", "lab1"), labs):
            assert served == name and set(sockets) == {name}, (name, served, sockets)
            assert wait_for_step(page, 20, "a", timeout=30) >= 20
            assert not odd, odd              # no 404, and no static file from a Panel process
        for page, *_ in labs:
            page.context.close()

        pids = dep.all_pids()
        assert len(pids) == 4                # two Panel processes, nginx's master and its worker
    finally:
        dep.stop()
    # named with their state and command line, so that a process left behind says what it is
    assert not [(pid, Path(f"/proc/{pid}/stat").read_text(errors="replace")[:120],
                 Path(f"/proc/{pid}/cmdline").read_bytes()[:200]) for pid in pids if alive(pid)]
    assert not (tmp_path / "run" / "state.json").exists()
    with pytest.raises(OSError):
        get(dep.url)
