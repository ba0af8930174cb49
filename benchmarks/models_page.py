"""The Models page's rate in a real browser (issue 14: LDA with 10^4 documents and K = 50 at >= 5 updates/s).

For each model: `panel serve app` (one server for all), Chromium opens `?tab=models&model=NAME&play=1`, waits
for the first points, then reads the page's step counter twice, `--seconds` apart. An update is one step of
both samplers; the rate printed is the counter's rise over the wall time between the two reads, so it holds
everything between the model and the page (workers, metric, frame loop, websocket, drawing).

    python -m benchmarks.models_page [--seconds 20] [--models lda-synthetic,lda-reuters,pmf,logistic-digits]

(from the repository root, as a module; prints figures, not a test)
"""
from __future__ import annotations

import argparse
import time

from playwright.sync_api import sync_playwright

from tests.app_browser_support import AppServer

CHROMIUM = "/usr/bin/chromium"


def read_step(page) -> int:
    text = page.locator("[data-models='step']").first.inner_text()
    return int(text.replace(",", "") or 0)


def measure(browser, server: AppServer, model: str, seconds: float) -> tuple[float, int, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        opened = time.monotonic()
        page.goto(f"{server.url}?tab=models&model={model}&play=1", timeout=180_000)
        page.locator("[data-models='step']").first.wait_for(timeout=180_000)
        while read_step(page) < 5:
            if time.monotonic() - opened > 300:
                raise TimeoutError(f"{model}: no steps within 300 s of opening")
            page.wait_for_timeout(200)
        first_s = time.monotonic() - opened
        s0, t0 = read_step(page), time.monotonic()
        page.wait_for_timeout(seconds * 1000)
        s1, t1 = read_step(page), time.monotonic()
        return (s1 - s0) / (t1 - t0), s1, first_s
    finally:
        page.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--models", default="lda-synthetic,lda-reuters,pmf,logistic-digits")
    args = ap.parse_args()
    server = AppServer().wait()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            print(f"{'model':<18} {'updates/s':>10} {'steps':>8} {'first steps after (s)':>22}")
            for model in args.models.split(","):
                rate, steps, first = measure(browser, server, model.strip(), args.seconds)
                print(f"{model:<18} {rate:>10.2f} {steps:>8,} {first:>22.1f}")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
