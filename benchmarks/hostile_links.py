"""One careless or hostile session beside a probe session, on one `panel serve app` process (issue 16).

The probe plays banana/SGHMC at its defaults (1000 chains, 5 steps per frame, 25 frames/s at most).
For each link of the table below, a second session opens it (and plays, if the link says so) while the
probe's frames are timed: the probe's updates/s and its longest gap over the window, from the moment
the hostile page is requested (its page open included). Targets: >= 15 updates/s, no gap > 0.5 s.

    python -m benchmarks.hostile_links [--seconds 10] [--only SUBSTRING]

(from the repository root, as a module; protocol clients, so both cores are the server's)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time
from types import SimpleNamespace
from urllib.parse import quote

from benchmarks.app_sessions import ProtocolClient, cpu_seconds
from tests.app_browser_support import AppServer


def slow_d_cell() -> str:
    """sghmc's D on banana with one cell that no sympy can expand in a lifetime."""
    from app.model.config import LabConfig
    from app.model.lab import Lab
    from samplers.engine.edit import matrix_cells
    cells = matrix_cells(Lab(LabConfig(chains=10)).sides[0].recipe._raw[0])
    cells[2][2] = "(theta_1+theta_2+r_1+r_2+U+2)^64"
    return quote(json.dumps(cells, separators=(",", ":")))


def links() -> list[str]:
    # first, on the fresh server: the first Models build imports scikit-learn and pandas, which once raced every
    # session's frames and stopped them all (issue 28)
    return ["tab=models&model=logistic-digits&play=1",
            "n=1000",
            "n=100000&play=1",
            "n=1000&speed=1000&play=1",
            "n=100000&speed=1000&play=1",
            "cmp=1&sb=sghmc-naive&n=100000&speed=1000&play=1",
            "pot=logistic&s=sgld&batch=500&n=100000&play=1",
            "s=qnhmc&n=100000&play=1",
            "s=qnhmc&a.memory=5&play=1",
            "s=hmc&a.L=10000000&play=1",
            f"D={slow_d_cell()}&play=1"]


class TimedClient(ProtocolClient):
    """A protocol client that keeps the arrival time of every frame."""

    @property
    def frames(self) -> int:
        return len(self.times)

    @frames.setter
    def frames(self, value: int) -> None:
        if not hasattr(self, "times"):
            self.times = []
        while len(self.times) < value:
            self.times.append(time.monotonic())


class LinkClient(ProtocolClient):
    """A session opened from a raw link (it plays if the link says play=1)."""

    def __init__(self, server: AppServer, search: str):
        super().__init__(None, url=f"{server.url}?{search}")
        self.alert_s = None       # when the first message box (a refusal, a block) reached the page

    def on_patch(self, content: str) -> None:
        if self.alert_s is None and ("role='alert'" in content or "role=&#x27;alert&#x27;" in content):
            self.alert_s = time.monotonic() - self.opened


async def measure(server: AppServer, args) -> list[tuple]:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    probe = await loop.run_in_executor(None, TimedClient, server,
                                       SimpleNamespace(potential="banana", sampler="sghmc", chains=1000, speed=5))
    probe_task = asyncio.create_task(probe.run(stop))
    await asyncio.sleep(3.0)
    rows = []
    for link in links():
        if args.only and args.only not in link:
            continue
        t0, c0 = time.monotonic(), cpu_seconds(server.proc.pid)
        hostile_stop = asyncio.Event()

        clients = []

        async def hostile(link, stop, clients):
            clients.append(await loop.run_in_executor(None, LinkClient, server, link))
            await clients[0].run(stop)
        task = asyncio.create_task(hostile(link, hostile_stop, clients))
        await asyncio.sleep(args.seconds)
        t1 = time.monotonic()
        hostile_stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)     # its socket closed: the session sees the page go
        times = [t0] + [t for t in probe.times if t0 <= t <= t1] + [t1]
        gaps = [b - a for a, b in zip(times, times[1:])]
        worst = max(range(len(gaps)), key=gaps.__getitem__)
        gap_at = times[worst] - t0
        rate = (len(times) - 2) / (t1 - t0)
        cpu = (cpu_seconds(server.proc.pid) - c0) / (t1 - t0)
        alert_s = clients[0].alert_s if clients else None
        rows.append((link, rate, max(gaps), cpu, alert_s))
        verdict = "ok " if rate >= 15 and max(gaps) <= 0.5 else "BAD"
        shown = link if len(link) < 70 else link[:40] + "…" + link[-20:]
        said = f"{alert_s:5.1f} s" if alert_s is not None else "    -  "
        print(f"{rate:8.1f} {max(gaps):5.2f} s at {gap_at:4.1f} s {100 * cpu:5.0f} %  {said}  {verdict}  {shown}",
              flush=True)
        await asyncio.sleep(2.0)       # the hostile session's last frames drain
    stop.set()
    probe_task.cancel()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    print(f"probe: banana, sghmc, 1000 chains, 5 steps per frame; window {args.seconds:g} s per link")
    print(f"{'updates/s':>9} {'longest gap (from the open)':>20} {'server CPU':>9} {'message at':>9}      link")
    server = AppServer().wait()
    try:
        rows = asyncio.run(measure(server, args))
    finally:
        server.stop()
    errors = server.server_errors()
    bad = [r for r in rows if r[1] < 15 or r[2] > 0.5]
    print(f"{len(rows) - len(bad)} of {len(rows)} links keep the probe at >= 15 updates/s with no gap > 0.5 s; "
          f"server log: {len(errors)} tracebacks")
    for e in errors[:3]:
        print("  ", e.replace("\n", " | ")[:200])


if __name__ == "__main__":
    main()
