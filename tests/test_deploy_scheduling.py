"""What a class server puts first (issue 28): the light sessions' frames before the compute pool's heavy work, and a
new visitor's page before a restarted process's reconnecting class.

- The compute pool's workers run in the kernel's idle class (app/model/pool.py, `demote`): a frame that wakes takes
  a core from them at once. Checked on the worker itself (its scheduling policy, as the kernel reports it).
- A Reconnect marks its request with a cookie (app/views/connection.py), and the deploy recipe's nginx lets such
  requests through to a process at a steady rate, queued, while a request without it passes at once
  (deploy/nginx.conf.template). Checked through a running deployment on requests to the processes' liveness
  endpoint, which costs them nothing: the order in which the answers come, not their times.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from app.model import pool
from app.model.runner import SessionRunner
from app.views import connection
from tests.test_models_model import Loop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # deploy/ is a directory of scripts, not an installed package
from deploy.class_server import free_port, nginx_binary, nginx_conf, start, supervisor_installed  # noqa: E402

linux_idle = pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="no SCHED_IDLE on this system")


def _policy(send=None):
    return os.getpid(), os.sched_getscheduler(0)


@linux_idle
def test_the_compute_pools_work_runs_in_the_idle_scheduling_class():
    loop, got = Loop(), []
    runner = SessionRunner(loop.schedule)
    runner.run(_policy, got.append, pool="compute")
    loop.run(lambda: got)
    pid, policy = got[0]
    assert pid != os.getpid() and policy == os.SCHED_IDLE
    assert os.sched_getscheduler(0) != os.SCHED_IDLE        # the server itself is not demoted


@linux_idle
def test_demote_is_quiet_about_a_process_that_has_ended_and_can_be_turned_off(monkeypatch):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert pool.demote(proc.pid) is False
    assert pool.demote(None) is False
    monkeypatch.setattr(pool, "IDLE", False)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pool.demote(child.pid) is False
        assert os.sched_getscheduler(child.pid) != os.SCHED_IDLE
        monkeypatch.setattr(pool, "IDLE", True)
        assert pool.demote(child.pid) is True
        assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE
    finally:
        child.kill()
        child.wait()


def test_the_reconnect_button_marks_its_request_and_is_pressed_once():
    js = connection.SHOW_BANNER
    assert "document.cookie = cookie" in js and "button.disabled = true" in js
    name, _, value = connection.RECONNECT_COOKIE.split(";")[0].partition("=")
    assert (name, value) == ("labreconnect", "1") and "Max-Age=" in connection.RECONNECT_COOKIE
    assert all(w["reconnecting"] and w["reconnecting"] != w["reconnect"] for w in connection.WORDS.values())


needs_nginx = pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed (apt-get install -y nginx)")


@needs_nginx
@pytest.mark.parametrize("rate", [2.0, 0.25, 0])
def test_nginx_takes_the_reconnect_queue_at_any_rate_and_none(rate, tmp_path):
    (tmp_path / "tmp").mkdir()
    conf = nginx_conf(tmp_path, 18080, ["127.0.0.1:5001", "127.0.0.1:5002"], reconnects_per_s=rate)
    (tmp_path / "nginx.conf").write_text(conf)
    check = subprocess.run([nginx_binary(), "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"),
                            "-e", str(tmp_path / "error.log")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert ("limit_req zone=reconnects" in conf) == (rate > 0)
    assert f"rate={max(1, round(60 * rate))}r/m" in conf


def _get(url: str, cookie: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=120) as r:
        return r.status, r.headers.get("X-Lab-Backend")


@needs_nginx
@pytest.mark.skipif(not supervisor_installed(), reason="supervisord is not installed (the class extra)")
def test_a_class_reconnecting_at_once_is_queued_and_a_new_visitor_is_not(tmp_path):
    """Ten reconnects to lab0 sent at once, then, once the first is answered, a new visitor's request to lab0: nginx
    lets the reconnects through one a second here, the visitor at once, so its answer comes before the last
    reconnects' (the last waits 9 s). Without the queue all ten are answered at once, before the visitor is sent."""
    dep = start(port=free_port(), procs=1, run_dir=tmp_path / "run", timeout=120, reconnects_per_s=1.0,
                say=lambda *_: None)
    try:
        url = dep.url.rsplit("/", 1)[0] + "/liveness"
        done = []

        def ask(name, cookie):
            status, backend = _get(url, cookie)
            done.append(name)
            return status, backend
        with ThreadPoolExecutor(12) as ex:
            reconnects = [ex.submit(ask, f"reconnect {i}", f"labsrv=lab0; {connection.RECONNECT_COOKIE.split(';')[0]}")
                          for i in range(10)]
            wait(reconnects, return_when=FIRST_COMPLETED)     # the others are in nginx's queue
            visitor = ex.submit(ask, "visitor", "labsrv=lab0")
            results = [f.result() for f in reconnects] + [visitor.result()]
        assert all(r == (200, "lab0") for r in results), results            # queued, none refused
        assert done.index("visitor") < len(done) - 3, done
    finally:
        dep.stop()


def test_a_reconnects_page_waits_for_a_visitors_and_for_the_reconnect_before_it():
    """deploy/lab_process.py's ReconnectGate, on one event loop: a reconnect's build does not start while a visitor's
    is under way, two reconnects' builds never overlap, and a visitor never waits."""
    from deploy.lab_process import ReconnectGate

    async def scenario():
        gate, log = ReconnectGate(pause=0), []
        visitor_in, visitor_out = asyncio.Event(), asyncio.Event()

        async def visitor():
            async with gate.visitor():
                log.append("visitor in")
                visitor_in.set()
                await visitor_out.wait()
                log.append("visitor out")

        async def reconnect(name):
            async with gate.reconnect():
                log.append(f"{name} in")
                for _ in range(3):
                    await asyncio.sleep(0)
                log.append(f"{name} out")

        v = asyncio.create_task(visitor())
        await visitor_in.wait()
        r = [asyncio.create_task(reconnect(f"r{i}")) for i in range(2)]
        for _ in range(10):
            await asyncio.sleep(0)
        waiting = list(log)
        late = asyncio.create_task(visitor())       # a second visitor while the reconnects wait: in at once
        for _ in range(3):
            await asyncio.sleep(0)
        visitor_out.set()
        await asyncio.gather(v, late, *r)
        return waiting, log

    waiting, log = asyncio.run(scenario())
    assert waiting == ["visitor in"]
    assert log[:4] == ["visitor in", "visitor in", "visitor out", "visitor out"]
    assert log[4:] == ["r0 in", "r0 out", "r1 in", "r1 out"]


def test_the_deployments_processes_build_pages_through_the_gate():
    from panel.io import server

    from deploy.lab_process import pace_reconnects
    saved = list(server.per_app_patterns)
    try:
        pace_reconnects()
        handlers = [h for _, h in server.per_app_patterns]
        paced = [h for h in handlers if h.__name__ == "PacedDocHandler"]
        assert len(paced) == 1 and issubclass(paced[0], server.DocHandler) and server.DocHandler not in handlers
    finally:
        server.per_app_patterns[:] = saved
