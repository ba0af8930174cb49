"""The lab's designed sampler under its budget (issue 15): prints figures, not a test.

1. A design with 6 state variables (mSGNHT on 2-D θ, typed from scratch) derives within 2 s: the lab's whole
   build as a session gets it (the guarded trial in a forked process, then the build itself: cells parsed, Γ by
   sympy, D and Q checked, the update compiled, the Fokker–Planck residual, the LaTeX the editor shows).
2. It runs at 15 updates/s or more at 1000 chains: the lab model's frames on the frame loop's clock
   (FRAME_MS apart, as app/views/frame_loop.py schedules them), steps per frame at the lab's default.
3. A design that would take longer to differentiate than the lab's limit is refused within 5 s, with its
   message, while another session's run goes on playing: that session's frames are counted meanwhile.

With --server the same through `panel serve app` and Bokeh-protocol sessions (as a browser's): the design's
own session opened from its link with play=1 (its updates/s at 1000 chains), and a probe session (banana,
SGHMC, 1000 chains) while another opens the slow design's link (the probe's updates/s, and when the refusal's
message reached that page).

    python -m benchmarks.design [--seconds 5] [--server]

(from the repository root, as a module)
"""
from __future__ import annotations

import argparse
import asyncio
import time
from types import SimpleNamespace
from urllib.parse import urlencode

from app.model import design as dm
from app.model import runner
from app.model.config import LabConfig
from app.model.lab import Lab, build, trial_build
from app.views.frame_loop import FRAME_MS


def msgnht_6() -> dict:
    """mSGNHT on 2-D θ as a user types it: z = (θ₁, θ₂, p₁, p₂, ξ₁, ξ₂), a thermostat per momentum."""
    d = dm.empty_design(2)
    for name in ("p_1", "p_2", "xi_1", "xi_2"):
        d = dm.add_aux(d, name)
    d = dm.set_kinetic(d, "p_1**2/2 + p_2**2/2 + (xi_1 - 1)**2/2 + (xi_2 - 1)**2/2")
    for k in range(2):
        for which, i, j, text in [("D", 2 + k, 2 + k, "1"), ("Q", k, 2 + k, "-1"), ("Q", 2 + k, k, "1"),
                                  ("Q", 2 + k, 4 + k, f"p_{k + 1}"), ("Q", 4 + k, 2 + k, f"-p_{k + 1}")]:
            d = dm.set_cell(d, which, i, j, text)
    return d


def slow_6(depth: int = 30) -> dict:
    """The same state with six Q pairs nested `depth` functions deep (within the parser's limits): sympy
    differentiates, simplifies and prints it for longer than the lab's limit."""
    inner = "theta_1+theta_2*p_1-U+xi_1*p_2"
    for k in range(depth):
        inner = f"{['sin', 'cos', 'tanh', 'exp'][k % 4]}({inner})"
    d = msgnht_6()
    for i, j in [(0, 4), (1, 5), (0, 5), (1, 4), (4, 5), (2, 3)]:
        d = dm.set_cell(dm.set_cell(d, "Q", i, j, inner), "Q", j, i, f"-({inner})")
    return d


def config(design: dict) -> LabConfig:
    return LabConfig(potential="banana", sampler=dm.DESIGN, design=design, chains=1000, V=1.0)


def derive() -> None:
    cfg = config(msgnht_6())
    t0 = time.perf_counter()
    why = trial_build(cfg, False, False)
    t1 = time.perf_counter()
    dm._CHECKED.clear()                  # a fresh design: nothing derived before in this process
    out = build(cfg, False, False)
    side = out.sides[0]
    side.recipe.matrices_latex(), side.recipe.latex_sde(), side.recipe.latex_update()
    t2 = time.perf_counter()
    print(f"6-variable design (mSGNHT on banana): trial build {t1 - t0:.2f} s ({why or 'ok'}), build in the "
          f"session {t2 - t1:.2f} s, together {t2 - t0:.2f} s (budget 2 s); residual {side.residual:.1e}")


def frames(lab: Lab, seconds: float) -> tuple[float, float, float]:
    """Frames on the frame loop's clock for `seconds`: (frames/s, steps/s, median frame cost in ms)."""
    costs, start, n = [], time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        lab.frame()
        cost = time.perf_counter() - t
        costs.append(cost)
        n += 1
        time.sleep(max(0.0, FRAME_MS / 1e3 - cost))
    elapsed = time.perf_counter() - start
    costs.sort()
    return n / elapsed, n * lab.steps_per_frame / elapsed, 1e3 * costs[len(costs) // 2]


def run_rate(seconds: float) -> Lab:
    lab = Lab(config(msgnht_6()))
    assert not lab.blocks, lab.blocks
    lab.play()
    fps, steps, cost = frames(lab, seconds)
    print(f"6-variable design at 1000 chains: {fps:.1f} updates/s (target >= 15), {steps:.0f} steps/s at "
          f"{lab.steps_per_frame} steps per frame, median frame {cost:.1f} ms of a core")
    return lab


def refusal(player: Lab, seconds: float) -> None:
    """A second session asks for the slow design while `player` plays; its builds go through the lab's worker,
    as on a server (the schedule runs the result at once: this process has no event loop)."""
    finished: list[float] = []

    def schedule(fn):
        fn()
        finished.append(time.perf_counter())
    slow = Lab(LabConfig(potential="banana", sampler="sghmc", chains=100), schedule=schedule)
    runner.POOLS["build"].submit(lambda: None).result()
    finished.clear()
    t0 = time.perf_counter()
    slow.config.param.update(sampler=dm.DESIGN, design=slow_6())
    fps, _, cost = frames(player, seconds)
    deadline = time.perf_counter() + 30
    while not finished and time.perf_counter() < deadline:
        time.sleep(0.05)
    message = slow.notice.message if slow.notice is not None else str(slow.blocks)
    print(f"slow design (six Q pairs nested 30 deep): answered after {finished[0] - t0:.2f} s (target <= 5 s; the "
          f"lab's limit {runner.LIMIT_S['typed build']:g} s): {message}")
    print(f"the other session meanwhile: {fps:.1f} updates/s, median frame {cost:.1f} ms")


def link(design: dict, **extra) -> str:
    return urlencode({"pot": "banana", "s": dm.DESIGN, "n": 1000, "design": dm.to_json(design), **extra})


async def sessions(server, seconds: float) -> None:
    from benchmarks.hostile_links import LinkClient, TimedClient

    class TimedLink(LinkClient, TimedClient):
        """A session from a link, its frames timed."""

    loop = asyncio.get_running_loop()

    def rate(times, t0, t1):
        return len([t for t in times if t0 <= t <= t1]) / (t1 - t0)

    stop = asyncio.Event()
    own = await loop.run_in_executor(None, TimedLink, server, link(msgnht_6(), play=1))
    task = asyncio.create_task(own.run(stop))
    await asyncio.sleep(3.0)            # built and playing
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    print(f"served: the 6-variable design's own session at 1000 chains: {rate(own.times, t0, time.monotonic()):.1f} "
          "updates/s (target >= 15)")
    stop.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(7.0)            # its session is discarded (AppServer's unused-session lifetime: 5 s)

    stop = asyncio.Event()
    probe = await loop.run_in_executor(None, TimedClient, server,
                                       SimpleNamespace(potential="banana", sampler="sghmc", chains=1000, speed=5))
    probe_task = asyncio.create_task(probe.run(stop))
    await asyncio.sleep(3.0)
    t0 = time.monotonic()
    slow = await loop.run_in_executor(None, LinkClient, server, link(slow_6()))
    slow_task = asyncio.create_task(slow.run(stop))
    await asyncio.sleep(max(seconds, 6.0))
    t1 = time.monotonic()
    times = [t0] + [t for t in probe.times if t0 <= t <= t1] + [t1]
    gaps = [b - a for a, b in zip(times, times[1:])]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    said = f"{slow.alert_s:.2f} s after its page was requested" if slow.alert_s is not None else "never"
    print(f"served: slow design's link: its refusal reached the page {said} (target <= 5 s); the probe meanwhile "
          f"{rate(probe.times, t0, t1):.1f} updates/s, longest gap {gaps[worst]:.2f} s, {times[worst] - t0:.2f} s "
          "after the link was requested (a page open is built in one piece on the loop: docs/notes/serving.md)")
    stop.set()
    for t in (probe_task, slow_task):
        t.cancel()
    await asyncio.gather(probe_task, slow_task, return_exceptions=True)


def served(seconds: float) -> None:
    from tests.app_browser_support import AppServer
    server = AppServer().wait()
    try:
        asyncio.run(sessions(server, seconds))
    finally:
        server.stop()
    print(f"server log: {len(server.server_errors())} tracebacks")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--server", action="store_true", help="also through panel serve and protocol sessions")
    args = ap.parse_args()
    derive()
    player = run_rate(args.seconds)
    refusal(player, args.seconds)
    if args.server:
        served(args.seconds)


if __name__ == "__main__":
    main()
