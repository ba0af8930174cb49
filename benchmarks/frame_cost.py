"""Server CPU per frame and session, of this tree's app against another tree's, measured side by side.

Prints figures (not a test). Starts one `panel serve app` per tree (as deploy/class_server.py runs a Panel
process: --admin, --liveness, one BLAS thread), each with the same --sessions protocol clients
(benchmarks/app_sessions.py's ProtocolClient: frames counted, nothing drawn) on class_load's presets in turn,
all playing. The servers run at the same time, so a busy machine slows both alike; for each it prints its CPU
(from /proc) over the frames its clients received: the CPU a frame of one session costs, the figure that decides
how many sessions a core serves (issue 28: 80 sessions at 10 updates/s on 2 cores leave at most 2.5 ms of a core
per frame, nginx included). The first tree is the reference: the others' cost is printed as a ratio of its.
Rates under load mean little; the CPU per frame and its ratios are the figures.

    python -m benchmarks.frame_cost [--trees /work/main,.] [--sessions 8] [--seconds 20] [--rounds 3]
    python -m benchmarks.frame_cost --in-process [--frames 300] [--period-ms 100] [--presets first-screen]

--in-process: on a machine too busy for the servers to reach a realistic rate (at 1-2 updates/s the numbers under
the plots, refreshed by time, weigh on every frame), each tree's frame measured without a server instead
(benchmarks/frame_cost_inprocess.py: the tick, its PATCH-DOC, its write to a recording stream; the lab's clock
moved on by --period-ms a frame), the presets' frames interleaved, the trees side by side in lockstep (a few frames of
each in turn: the load of a shared machine comes and goes, and measured one after the other the trees' ratio
moved by ±20 % from run to run).

(from the repository root, as a module, like benchmarks/app_sessions.py)
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from app.model.presets import FIRST_SCREEN
from benchmarks.app_sessions import ProtocolClient, cpu_seconds
from benchmarks.class_load import PRESETS as CLASS_PRESETS
from deploy.class_server import UNUSED_SESSION_MS, free_port, panel_args
from tests.app_browser_support import end_process

# class_load's presets, and the page a bare link opens (the naive-vs-corrected pair): --presets first-screen
PRESETS = {**CLASS_PRESETS, "first-screen": FIRST_SCREEN + "&play=1"}


class Server:
    def __init__(self, tree: Path, log_dir: Path):
        self.tree = tree.resolve()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/app"
        # `panel serve` itself, not forked by deploy/lab_process.py: the process measured is the one started
        args = [sys.executable, "-m", "panel",
                *panel_args("127.0.0.1", self.port, [f"127.0.0.1:{self.port}"], UNUSED_SESSION_MS)[2:]]
        self.log = open(log_dir / f"frame-cost-{self.port}.log", "w")
        env = {**os.environ, "PYTHONPATH": str(self.tree), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(args, cwd=self.tree, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def wait(self, timeout: float = 120.0) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"panel serve in {self.tree} exited: see {self.log.name}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/liveness?endpoint=/app", timeout=30):
                    return self
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"panel serve in {self.tree} did not start")

    def stop(self):
        end_process(self.proc)
        self.log.close()


async def measure(servers: list[Server], sessions: int, seconds: float, rounds: int, presets: list[str]):
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    clients: dict[int, list[ProtocolClient]] = {i: [] for i in range(len(servers))}
    tasks = []
    for k in range(sessions):          # the servers' sessions opened in turn, each connected at once
        for i, s in enumerate(servers):
            url = f"{s.url}?{PRESETS[presets[k % len(presets)]]}"
            c = await loop.run_in_executor(None, lambda url=url: ProtocolClient(None, url=url))
            clients[i].append(c)
            tasks.append(asyncio.create_task(c.run(stop)))
    await asyncio.sleep(5.0)          # every lab built and playing
    for t in tasks:
        if t.done() and t.exception():
            raise t.exception()
    per_round = {i: [] for i in clients}
    rates = {i: [] for i in clients}
    for _ in range(rounds):
        f0 = {i: sum(c.frames for c in cs) for i, cs in clients.items()}
        c0 = {i: cpu_seconds(s.proc.pid) for i, s in enumerate(servers)}
        t0 = time.monotonic()
        await asyncio.sleep(seconds)
        dt = time.monotonic() - t0
        for i, s in enumerate(servers):
            frames = sum(c.frames for c in clients[i]) - f0[i]
            cpu = cpu_seconds(s.proc.pid) - c0[i]
            per_round[i].append(1e3 * cpu / max(frames, 1))
            rates[i].append(frames / dt / sessions)
    stop.set()
    for t in tasks:
        t.cancel()
    missing = {i: sum(c.first_frame is None for c in cs) for i, cs in clients.items()}
    return per_round, rates, missing


def in_process(trees: list[Path], presets: list[str], frames: int, period_ms: float, batch: int = 5):
    """Each tree's frames in a process of its own (benchmarks/frame_cost_inprocess.py, its own code on PYTHONPATH),
    the trees taking `batch` frames each in turn: a load that comes and goes weighs on every tree alike."""
    import json
    chosen = json.dumps({name: PRESETS[name] for name in presets})
    here = Path(__file__).resolve().with_name("frame_cost_inprocess.py")
    workers = {t: subprocess.Popen([sys.executable, str(here), chosen, "0", str(period_ms)], cwd=t, text=True,
                                   env={**os.environ, "PYTHONPATH": str(t.resolve())}, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE) for t in trees}
    got = {}
    try:
        for t, w in workers.items():
            if w.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the frame benchmark did not start in {t}")
        for _ in range(0, frames, batch):
            for t, w in workers.items():
                w.stdin.write(f"{batch}\n")
                w.stdin.flush()
                got[t] = json.loads(w.stdout.readline())
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait(60)
    print(f"server CPU per frame (ms; writes to the socket per frame), a frame every {period_ms:g} ms, "
          f"{frames} frames a preset, the trees {batch} frames each in turn")
    print(f"{'tree':<24}" + "".join(f"{n[:22]:>24}" for n in presets) + f"{'mean':>8}{'ratio':>7}")
    ref = None
    for t in trees:
        ms = [got[t][n][0] for n in presets]
        writes = [got[t][n][1] for n in presets]
        mean = statistics.mean(ms)
        ref = ref or mean
        print(f"{str(t):<24}" + "".join(f"{m:>16.2f} ({w:>3.0f} w)" for m, w in zip(ms, writes))
              + f"{mean:>8.2f}{mean / ref:>7.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--in-process", action="store_true", help="each tree's frame without a server (see above)")
    ap.add_argument("--frames", type=int, default=300, help="--in-process: frames per preset")
    ap.add_argument("--period-ms", type=float, default=100.0, help="--in-process: the lab's clock per frame")
    ap.add_argument("--trees", default="/work/main,.",
                    help="comma-separated repository roots; the first is the reference")
    ap.add_argument("--sessions", type=int, default=8, help="playing sessions per server")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of one measuring window")
    ap.add_argument("--rounds", type=int, default=3, help="windows (the median is printed)")
    ap.add_argument("--presets", default=",".join(CLASS_PRESETS),
                    help=f"presets taken in turn, of {', '.join(PRESETS)}")
    args = ap.parse_args()
    trees = [Path(t) for t in args.trees.split(",")]
    if args.in_process:
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        in_process(trees, args.presets.split(","), args.frames, args.period_ms)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        return
    log_dir = Path("test-artifacts")
    log_dir.mkdir(exist_ok=True)
    print(f"load average before: {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores; {args.sessions} sessions per "
          f"server, presets {args.presets}")
    servers = [Server(t, log_dir) for t in trees]
    try:
        for s in servers:
            s.wait()
        per_round, rates, missing = asyncio.run(
            measure(servers, args.sessions, args.seconds, args.rounds, args.presets.split(",")))
    finally:
        for s in servers:
            s.stop()
    ref = statistics.median(per_round[0])
    print(f"{'tree':<32}{'ms CPU / frame / session':>26}{'ratio':>8}{'updates/s per session':>24}  rounds (ms)")
    for i, t in enumerate(trees):
        m = statistics.median(per_round[i])
        print(f"{str(t):<32}{m:>26.2f}{m / ref:>8.2f}{statistics.median(rates[i]):>24.1f}  "
              + " ".join(f"{v:.2f}" for v in per_round[i])
              + (f"  ({missing[i]} sessions without a frame)" if missing[i] else ""))
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
