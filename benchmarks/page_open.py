"""Server CPU per page open: the lab against a bare Panel app of its size, measured in one run.

Prints figures (not a test). Starts two servers, `panel serve app` and `panel serve benchmarks/bare_app`
(a BootstrapTemplate with 4 Bokeh figures and 9 widgets), and opens each page N times in a headless
Chromium, interleaved (lab, bare, lab, bare, ...) so that both see the same machine load. An open is a
real page load: from `goto` until the lab shows its first frame (its metrics panel, or with --query
another page's element given by --wait) or the bare app its four figures, then until the server has
been idle for a moment (the page's first messages handled). CPU is the server process's utime + stime
(/proc/PID/stat), printed two ways:
* load: over that span of each open (the page is then closed, outside the span);
* with teardown: over the whole run, from before the first open until every session has been
  destroyed and Panel's garbage collection after it has run (5 s after the last destroy), divided by
  the opens: what an open costs the server in all, its session's end included.

    python -m benchmarks.page_open [--opens 10] [--query '?tab=lessons&lesson=05-sghmc' --wait '.lesson-body']
    python -m benchmarks.page_open --profile [--opens 10]     # cProfile of the lab's server only
    python -m benchmarks.page_open --baseline ../checkout-of-an-older-commit   # that lab too, interleaved

(from the repository root, as a module: it starts the servers with the browser tests' helper,
tests/app_browser_support.py). --profile writes test-artifacts/page-open.prof and prints the functions
with the most cumulative and own time; the server's start-up (imports) is in it too, before the opens.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from pathlib import Path

from tests.app_browser_support import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, AppServer

LAB_READY = "[data-metric='t-a']"
BARE_READY = ".bk-Figure"      # the bare app's figures


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(pid: int, quiet: float = 0.5, timeout: float = 10.0) -> None:
    """Until the server's CPU time stands still for `quiet` seconds: its part of the open is done."""
    deadline = time.monotonic() + timeout
    last, since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = cpu_seconds(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def destroyed(server: AppServer) -> tuple[int, int]:
    """(sessions created, destroyed), from Panel's log lines (PANEL_LOG_LEVEL=INFO)."""
    log = server.log.read_text(errors="replace")
    return len(re.findall(r"Session \d+ created", log)), len(re.findall(r"Session \d+ destroyed", log))


def settle(server: AppServer, timeout: float = 60.0) -> None:
    """Until every session so far is destroyed, Panel's gc.collect after the last one (5 s later) has
    run, and the server is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        created, gone = destroyed(server)
        if created == gone:
            break
        time.sleep(0.2)
    time.sleep(6.0)
    wait_idle(server.proc.pid)


def open_once(browser, server: AppServer, query: str, ready: str, count: int = 1) -> tuple[float, float]:
    """(server CPU seconds, wall seconds) of one page open."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        wait_idle(server.proc.pid)
        t0, c0 = time.monotonic(), cpu_seconds(server.proc.pid)
        page.goto(server.url + query, timeout=120000)
        page.locator(ready).nth(count - 1).wait_for(timeout=120000)
        wall = time.monotonic() - t0
        wait_idle(server.proc.pid)
        return cpu_seconds(server.proc.pid) - c0, wall
    finally:
        page.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opens", type=int, default=10)
    ap.add_argument("--query", default="", help="the lab page's query, e.g. '?tab=lessons&lesson=05-sghmc'")
    ap.add_argument("--wait", default=LAB_READY, help="the element that says the lab page is ready")
    ap.add_argument("--profile", action="store_true", help="cProfile the lab's server (no bare app)")
    ap.add_argument("--baseline", type=Path, help="another checkout (e.g. a git worktree of an older commit): "
                    "its lab is opened too, interleaved, and compared in the same run")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    prof = ARTIFACTS / "page-open.prof"
    # the lab as a server runs it (the browser tests turn Bokeh's document validation and error diagnostics on,
    # app/views/process.py leaves them off); the bare app as Panel's defaults have them (on)
    log = {"PANEL_LOG_LEVEL": "INFO"}
    lab_env = {**log, "BOKEH_VALIDATE_DOC": "false", "BOKEH_PERFORM_ERROR_DIAGNOSTICS": "false"}
    servers = {"lab": AppServer(python_args=("-m", "cProfile", "-o", str(prof)) if args.profile else (),
                                env=lab_env)}
    if args.baseline is not None and not args.profile:
        base = args.baseline.resolve()
        servers["base"] = AppServer(env={**lab_env, "PYTHONPATH": str(base)}, root=base)
    if not args.profile:
        servers["bare"] = AppServer(app="benchmarks/bare_app", env=log)
    ready = {"lab": (args.query, args.wait, 1), "base": (args.query, args.wait, 1), "bare": ("", BARE_READY, 4)}
    try:
        for s in servers.values():
            s.wait()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # one open each first: the first session imports what the app imports lazily
            for name, s in servers.items():
                open_once(browser, s, *ready[name])
            for s in servers.values():
                settle(s)
            start = {name: cpu_seconds(s.proc.pid) for name, s in servers.items()}
            cost = {name: [] for name in servers}
            for _ in range(args.opens):
                for name, s in servers.items():
                    cost[name].append(open_once(browser, s, *ready[name]))
            browser.close()
        for s in servers.values():
            settle(s)
        total = {name: (cpu_seconds(s.proc.pid) - start[name]) / args.opens for name, s in servers.items()}
    finally:
        for s in servers.values():
            s.stop()        # SIGTERM: Bokeh stops its loop and returns, so cProfile writes its file
    print(f"server CPU s per page open, {args.opens} opens each, interleaved{' ' + args.query if args.query else ''}")
    if "base" in servers:
        print(f"  base: the lab of {args.baseline}")
    print(f"  {'':<5}{'load: mean':>11}{'median':>8}{'min':>7}{'max':>7}{'with teardown':>15}{'wall s':>8}")
    for name, runs in cost.items():
        cpu = [c for c, _ in runs]
        print(f"  {name:<5}{statistics.mean(cpu):11.3f}{statistics.median(cpu):8.3f}{min(cpu):7.3f}{max(cpu):7.3f}"
              f"{total[name]:15.3f}{statistics.mean(w for _, w in runs):8.2f}")

    def mean(name):
        return statistics.mean(c for c, _ in cost[name])
    for name in ("lab", "base"):
        if name in cost and "bare" in cost:
            print(f"  {name} / bare: load {mean(name) / mean('bare'):.2f}, "
                  f"with teardown {total[name] / total['bare']:.2f} (goal: <= 1)")
    if "base" in cost:
        print(f"  lab / base: load {mean('lab') / mean('base'):.2f}, with teardown {total['lab'] / total['base']:.2f}")
    if args.profile:
        import pstats
        stats = pstats.Stats(str(prof))
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(25)
        print(f"profile: {prof} (e.g. python -m snakeviz {prof})")


if __name__ == "__main__":
    main()
