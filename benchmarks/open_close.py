"""Pages opened and closed in cycles: does the server give back what each session took, and stay quiet?

Prints figures (not a test). Starts `panel serve app` (as the README runs it: --unused-session-lifetime
5000 --check-unused-sessions 1000), then in each cycle opens a page in a headless Chromium, lets it run
and closes it mid-frame: odd cycles the lab playing (`?play=1`), even ones a lesson with its demo started.
After a few warm-up cycles (the first sessions import and cache what every later one shares) it reads
the server's resident memory (VmRSS, /proc/PID/status) once the sessions so far have been destroyed,
again every 10 cycles, and at the end; it counts the sessions created and destroyed (Panel logs both
at PANEL_LOG_LEVEL=INFO) and the tracebacks in the server's log.

    python -m benchmarks.open_close [--cycles 100] [--warmup 6] [--lesson 05-sghmc]

(from the repository root, as a module: it starts the server with the browser tests' helper,
tests/app_browser_support.py)
"""
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from tests.app_browser_support import CHROMIUM, CHROMIUM_ARGS, AppServer, wait_for_step

SETTLE_S = 12.0     # an unused session lives 5 s, is found within 1 s, and Panel collects 5 s after a destroy


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024


def sessions(server: AppServer) -> tuple[int, int]:
    """(created, destroyed), from Panel's log lines."""
    log = server.log.read_text(errors="replace")
    return len(re.findall(r"Session \d+ created", log)), len(re.findall(r"Session \d+ destroyed", log))


def tracebacks(server: AppServer) -> list[str]:
    """Every traceback or error in the server's log, the ones the browser tests let pass included."""
    text = server.log.read_text(errors="replace")
    blocks = re.split(r"\n(?=\d{4}-\d\d-\d\d )", text)
    return [b[:400] for b in blocks if re.search(r"Traceback|ERROR|Exception", b)]


def settle(server: AppServer, timeout: float = 60.0) -> tuple[int, int]:
    """Wait until every session so far is destroyed and Panel's collection after it has run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        created, destroyed = sessions(server)
        if created == destroyed:
            break
        time.sleep(0.5)
    time.sleep(SETTLE_S / 2)      # Panel's gc.collect runs 5 s after the last destroy
    return sessions(server)


def cycle(browser, server: AppServer, i: int, lesson: str, steps: int) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        if i % 2:
            page.goto(server.url + "?play=1", timeout=120000)
            page.locator("[data-metric='t-a']").first.wait_for(timeout=120000)
        else:
            page.goto(server.url + f"?tab=lessons&lesson={lesson}", timeout=120000)
            page.locator(".lesson-demo-start button").first.click(timeout=120000)
            page.locator("[data-metric='t-a']").first.wait_for(timeout=120000)
        wait_for_step(page, steps, timeout=120)
    finally:
        page.close()      # mid-frame: both runs are playing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--lesson", default="05-sghmc")
    ap.add_argument("--steps", type=int, default=30, help="steps the run makes before its page closes")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    server = AppServer(env={"PANEL_LOG_LEVEL": "INFO"}).wait()
    pid = server.proc.pid
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for i in range(args.warmup):
                cycle(browser, server, i, args.lesson, args.steps)
            settle(server)
            start = rss_mb(pid)
            print(f"after {args.warmup} warm-up cycles: RSS {start:.1f} MB")
            t0 = time.monotonic()
            for i in range(args.cycles):
                cycle(browser, server, i, args.lesson, args.steps)
                if (i + 1) % 10 == 0:
                    created, destroyed = sessions(server)
                    print(f"  cycle {i + 1:4d}: RSS {rss_mb(pid):7.1f} MB, sessions created {created}, "
                          f"destroyed {destroyed}, {time.monotonic() - t0:.0f} s", flush=True)
            browser.close()
        created, destroyed = settle(server)
        end = rss_mb(pid)
    finally:
        server.stop()
    errors = tracebacks(server)
    print(f"{args.cycles} cycles (lab playing / lesson {args.lesson} with its demo running, closed mid-frame)")
    print(f"  RSS after warm-up {start:.1f} MB, after the cycles and session cleanup {end:.1f} MB: "
          f"{end - start:+.1f} MB (goal: within ±20 MB)")
    print(f"  sessions created {created}, destroyed {destroyed}")
    print(f"  tracebacks or errors in the server log: {len(errors)}")
    for e in errors[:5]:
        print("    " + e.replace("\n", "\n    "))
    print(f"  log: {server.log}")


if __name__ == "__main__":
    main()
