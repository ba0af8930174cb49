"""Serve the lab to a class: nginx in front of N `panel serve app` processes, one command.

    python3 deploy/class_server.py start [--port 8080] [--procs N] [--listen 0.0.0.0 --origin HOST]
    python3 deploy/class_server.py status
    python3 deploy/class_server.py stop

`start` writes deploy/run/nginx.conf from deploy/nginx.conf.template, starts N Panel processes on free
loopback ports (N = the cores this process may use) and nginx on --port, waits until every process
answers its liveness endpoint and nginx serves the page, prints the URL and returns; the processes keep
running (`--foreground` stays and stops them all on SIGTERM or when one of them ends: a container's
entry point). Pid files and each process's log are in the run directory. nginx serves Bokeh's and
Panel's static files itself and keeps each student on one process by a cookie (docs/notes/deploy.md).

The same from Python: `start(port=..., procs=..., run_dir=...)` returns a `Deployment`; `stop(run_dir)`.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_DIR = ROOT / "deploy" / "run"
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
# Bokeh extensions whose static files nginx serves (the app's models are Bokeh's and Panel's)
EXTENSIONS = ("panel",)
# as the README's app command: a session no page connects to (a closed tab) is dropped after 5 s. It
# counts from the page's GET, and in a class's opening burst a process can be busy building other
# students' sessions for longer than that before it accepts the websocket (benchmarks/class_load.py)
UNUSED_SESSION_MS = 5000


def nginx_binary() -> str | None:
    # /usr/sbin is not on a non-root user's PATH on Debian
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def default_procs() -> int:
    return len(os.sched_getaffinity(0))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def extension_dir(name: str) -> Path:
    """Where Bokeh serves /static/extensions/<name>/ from: the directory of package.json's "module" or
    "main" file, else the package's dist/ (bokeh/embed/bundle.py, _bundle_extensions)."""
    module = __import__(name)
    base = Path(module.__file__).absolute().parent
    package = base / "package.json"
    if package.exists():
        pkg = json.loads(package.read_text())
        main = pkg.get("module", pkg.get("main"))
        if main is not None:
            return (base / os.path.normpath(main)).parent
    return base / "dist"


def static_dirs() -> dict[str, Path]:
    from bokeh.settings import settings
    return {"bokeh": Path(settings.bokehjs_path()),
            **{name: extension_dir(name) for name in EXTENSIONS},
            # panel serve answers /favicon.ico with this file (panel/command/serve.py)
            "favicon": extension_dir("panel") / "images" / "favicon.ico"}


def nginx_conf(run_dir: Path, port: int, backends: list[int], listen: str = "127.0.0.1") -> str:
    names = [f"lab{i}" for i in range(len(backends))]
    upstreams = [f"    upstream {n} {{ server 127.0.0.1:{p}; }}" for n, p in zip(names, backends)]
    servers = "".join(f"        server 127.0.0.1:{p};\n" for p in backends)
    upstreams.append(f"    upstream lab_any {{\n{servers}    }}")
    dirs = static_dirs()
    extensions = "\n".join(
        f"        location /static/extensions/{name}/ {{\n            alias {dirs[name]}/;\n"
        f"            expires $static_expires;\n            add_header X-Served-By nginx;\n        }}"
        for name in EXTENSIONS)
    # as root, nginx's workers would drop to nobody, who cannot read a site-packages under /root
    user = f"user {pwd.getpwuid(0).pw_name};" if os.geteuid() == 0 else ""
    fills = {
        "@USER@": user,
        "@RUN@": str(run_dir),
        "@LISTEN@": listen,
        "@PORT@": str(port),
        "@UPSTREAMS@": "\n".join(upstreams),
        "@COOKIE_TO_BACKEND@": "\n".join(f"        {n} {n};" for n in names),
        "@ADDR_TO_NAME@": "\n".join(f"        ~127\\.0\\.0\\.1:{p}$ {n};" for n, p in zip(names, backends)),
        "@COOKIE_IS_VALID@": "\n".join(f'        {n} "";' for n in names),
        "@BOKEH_STATIC@": str(dirs["bokeh"]),
        "@EXTENSIONS@": extensions,
        "@FAVICON@": str(dirs["favicon"]),
    }
    text = TEMPLATE.read_text()
    for key, value in fills.items():
        text = text.replace(key, value)
    return text


@dataclass
class Deployment:
    run_dir: Path
    port: int
    backends: list[int]                      # the Panel processes' ports, lab0, lab1, ...
    pids: dict[str, int] = field(default_factory=dict)   # "nginx", "lab0", ... -> pid
    listen: str = "127.0.0.1"
    unused_session_ms: int = UNUSED_SESSION_MS

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/app"

    def save(self):
        state = {**asdict(self), "run_dir": str(self.run_dir)}
        (self.run_dir / "state.json").write_text(json.dumps(state, indent=1))

    @classmethod
    def load(cls, run_dir: Path) -> Deployment | None:
        path = Path(run_dir) / "state.json"
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        return cls(**{**state, "run_dir": Path(state["run_dir"])})

    def alive(self) -> dict[str, bool]:
        return {name: _running(pid, name) for name, pid in self.pids.items()}

    def all_pids(self) -> list[int]:
        """The processes' pids and nginx's workers'."""
        pids = list(self.pids.values())
        nginx = self.pids.get("nginx")
        return pids + (_children(nginx) if nginx and _running(nginx, "nginx") else [])

    def stop(self, timeout: float = 15.0):
        stop(self.run_dir, timeout)


def _running(pid: int, name: str) -> bool:
    """pid is a live process of this deployment (a recycled pid runs something else)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    comm, state = stat[stat.index("(") + 1: stat.rindex(")")], stat.rsplit(")", 1)[1].split()[0]
    if not cmdline:    # an exiting process has let go of its memory, its command line with it: its name says
        return state != "Z" and (comm == "nginx" if name == "nginx" else comm.startswith(("python", "panel")))
    return state != "Z" and ("nginx" in cmdline if name == "nginx" else "panel" in cmdline)


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _get(url: str, timeout: float = 5.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except OSError:
        return 0


def _log_tail(path: Path, n: int = 2000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def start(port: int = 8080, procs: int | None = None, run_dir: Path = RUN_DIR, listen: str = "127.0.0.1",
          origins: tuple[str, ...] = (), timeout: float = 180.0, unused_session_ms: int = UNUSED_SESSION_MS,
          say=print) -> Deployment:
    """Start nginx and the Panel processes, wait until they serve, and return the running deployment."""
    nginx = nginx_binary()
    if nginx is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install -y nginx)")
    run_dir = Path(run_dir).resolve()
    old = Deployment.load(run_dir)
    if old is not None and any(old.alive().values()):
        raise RuntimeError(f"already running ({old.url}); stop it first: class_server.py stop")
    # an nginx already on the port would answer the readiness check for this one, which could not bind
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as nginx does: closed connections do not count
        try:
            s.bind((listen, port))
        except OSError as e:
            raise RuntimeError(f"port {port} on {listen} is taken ({e.strerror}): choose another with --port") from None
    for sub in ("tmp", "logs"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    procs = procs or default_procs()
    dep = Deployment(run_dir, port, [free_port() for _ in range(procs)], listen=listen,
                     unused_session_ms=unused_session_ms)
    (run_dir / "nginx.conf").write_text(nginx_conf(run_dir, port, dep.backends, listen))

    # one process per core: BLAS threads on top would only fight over the same cores
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **os.environ}
    allowed = [f"127.0.0.1:{port}", f"localhost:{port}", *origins]
    popen = {}
    try:
        for i, backend in enumerate(dep.backends):
            args = [sys.executable, "-m", "panel", "serve", "app", "--address", "127.0.0.1", "--port", str(backend),
                    "--num-procs", "1", "--use-xheaders", "--admin", "--liveness",
                    "--unused-session-lifetime", str(unused_session_ms), "--check-unused-sessions", "1000"]
            for origin in allowed:
                args += ["--allow-websocket-origin", origin]
            popen[f"lab{i}"] = _spawn(args, run_dir / "logs" / f"lab{i}.log", env)
        popen["nginx"] = _spawn([nginx, "-p", str(run_dir), "-c", str(run_dir / "nginx.conf"),
                                 "-e", str(run_dir / "nginx-error.log")], run_dir / "logs" / "nginx.log", env)
        dep.pids = {name: p.pid for name, p in popen.items()}
        for name, pid in dep.pids.items():
            (run_dir / f"{name}.pid").write_text(f"{pid}\n")
        dep.save()
        _wait_ready(dep, popen, timeout)
    except BaseException:
        stop(run_dir)
        raise
    say(f"serving the lab at {dep.url} ({procs} Panel process{'es' if procs > 1 else ''} behind nginx; "
        f"logs in {run_dir / 'logs'})")
    return dep


def _spawn(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    # a session of its own: Ctrl-C in the terminal that started the class does not end it
    with open(log, "ab") as out:
        return subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


def _wait_ready(dep: Deployment, popen: dict, timeout: float):
    """Every process builds the app on its liveness endpoint, and nginx serves the page."""
    deadline = time.monotonic() + timeout
    pending = {f"lab{i}": f"http://127.0.0.1:{p}/liveness?endpoint=/app" for i, p in enumerate(dep.backends)}
    pending["nginx"] = dep.url
    while pending:
        for name, p in popen.items():
            if p.poll() is not None:
                log = dep.run_dir / "logs" / f"{name}.log"
                extra = _log_tail(dep.run_dir / "nginx-error.log") if name == "nginx" else ""
                raise RuntimeError(f"{name} exited with status {p.returncode}:\n{_log_tail(log)}{extra}")
        for name, url in list(pending.items()):
            if (name != "nginx" or len(pending) == 1) and _get(url, timeout=30) == 200:
                del pending[name]
        if time.monotonic() > deadline:
            raise TimeoutError(f"not ready within {timeout:.0f} s: {', '.join(pending)}")
        if pending:
            time.sleep(0.3)


def stop(run_dir: Path = RUN_DIR, timeout: float = 15.0) -> list[int]:
    """Stop nginx first (no new requests reach a stopping process), then the Panel processes; returns
    the pids that were running."""
    dep = Deployment.load(Path(run_dir).resolve())
    if dep is None:
        return []
    order = ["nginx"] + [n for n in dep.pids if n != "nginx"]
    # nginx's workers too: its master can be past its deadline and killed before they have exited
    workers = dep.all_pids()[len(dep.pids):]
    stopped = []
    for name in order:
        pid = dep.pids.get(name)
        if pid and _running(pid, name):
            # SIGTERM: nginx's fast shutdown (SIGQUIT would wait for every open websocket to close)
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
    deadline = time.monotonic() + timeout
    for name in order:
        pid = dep.pids.get(name)
        if not pid:
            continue
        _end(pid, name, deadline)
        (dep.run_dir / f"{name}.pid").unlink(missing_ok=True)
    for pid in workers:
        _end(pid, "nginx", deadline)
    (dep.run_dir / "state.json").unlink(missing_ok=True)
    return stopped


def _end(pid: int, name: str, deadline: float):
    """Wait for a signalled process until the deadline, then SIGKILL it and wait until it has ended."""
    while _running(pid, name) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if _running(pid, name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # SIGKILL is delivered asynchronously: wait until it has ended, so that stop means stopped
        killed_by = time.monotonic() + 5.0
        while _running(pid, name) and time.monotonic() < killed_by:
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)


def _reap(pid: int):
    """Collect the exit status of a process this one started (others' parents collect theirs)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def status(run_dir: Path = RUN_DIR) -> str:
    dep = Deployment.load(Path(run_dir).resolve())
    if dep is None:
        return "not running"
    alive = dep.alive()
    lines = [f"{dep.url}  (run directory {dep.run_dir})"]
    for name, pid in dep.pids.items():
        if name == "nginx":
            where, answer = f"port {dep.port}", _get(dep.url)
        else:
            backend = dep.backends[int(name[3:])]
            where, answer = f"127.0.0.1:{backend}", _get(f"http://127.0.0.1:{backend}/liveness")
        state = "running" if alive[name] else "not running"
        lines.append(f"  {name:<6} pid {pid:<8} {where:<16} {state:<12} HTTP {answer or '-'}")
    return "\n".join(lines)


def serve_foreground(dep: Deployment) -> int:
    """Wait until SIGTERM/SIGINT or until one process ends, then stop them all: the container's
    supervisor restarts the whole deployment rather than leave a process missing."""
    ended = []
    signal.signal(signal.SIGTERM, lambda *_: ended.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: ended.append("SIGINT"))
    while not ended:
        gone = [name for name, ok in dep.alive().items() if not ok]
        if gone:
            ended.append(f"{', '.join(gone)} ended")
        time.sleep(1.0)
    print(f"stopping: {ended[0]}", flush=True)
    dep.stop()
    return 0 if ended[0].startswith("SIG") else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["start", "stop", "status"])
    ap.add_argument("--port", type=int, default=8080, help="nginx's port (default 8080)")
    ap.add_argument("--procs", type=int, default=None,
                    help=f"Panel processes (default: the number of cores, here {default_procs()})")
    ap.add_argument("--run-dir", type=Path, default=RUN_DIR, help="config, pid files and logs (default deploy/run)")
    ap.add_argument("--listen", default="127.0.0.1",
                    help="nginx's address (default 127.0.0.1; 0.0.0.0 for students on the network, with --origin)")
    ap.add_argument("--origin", action="append", default=[], metavar="HOST[:PORT]",
                    help="a name or address students open the lab by, e.g. 192.168.1.20:8080 (repeatable)")
    ap.add_argument("--unused-session-ms", type=int, default=UNUSED_SESSION_MS,
                    help=f"how long a session waits for its page to connect (default {UNUSED_SESSION_MS})")
    ap.add_argument("--foreground", action="store_true", help="start stays until SIGTERM (a container's entry point)")
    args = ap.parse_args(argv)
    if args.command == "stop":
        pids = stop(args.run_dir)
        print(f"stopped {len(pids)} processes" if pids else "not running")
        return 0
    if args.command == "status":
        print(status(args.run_dir))
        return 0
    try:
        dep = start(args.port, args.procs, args.run_dir, args.listen, tuple(args.origin),
                    unused_session_ms=args.unused_session_ms)
    except (RuntimeError, TimeoutError) as e:
        print(f"class_server: {e}", file=sys.stderr)
        return 1
    if args.listen != "127.0.0.1":
        print(f"students open http://<this machine's name or address>:{args.port}/app", flush=True)
    return serve_foreground(dep) if args.foreground else 0


if __name__ == "__main__":
    sys.exit(main())
