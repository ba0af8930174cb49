"""Serve the lab to a class: nginx in front of N `panel serve app` processes, kept running by supervisord.

    python3 deploy/class_server.py start [--port 8080] [--procs N] [--listen 0.0.0.0 --origin HOST]
                                         [--workers HOST:PORT,...] [--foreground]
    python3 deploy/class_server.py workers --bind ADDR --first-port 5100 --origin FRONT[:PORT] [--procs N]
    python3 deploy/class_server.py status
    python3 deploy/class_server.py stop

`start` writes deploy/run/nginx.conf from deploy/nginx.conf.template and deploy/run/supervisord.conf, and
starts supervisord (the `class` extra: pip install -e '.[class]'), which starts N Panel processes on free
loopback ports (N = the cores this process may use) and nginx on --port and restarts any of them that ends.
It waits until every process answers its liveness endpoint and nginx serves the page, prints the URL and
returns; supervisord keeps running. `--foreground` stays (a container's entry point) and stops everything on
SIGTERM; a Panel process that ends is restarted, not a reason to end. Each process's log is in the run
directory's logs/. nginx serves Bokeh's and Panel's static files itself and keeps each student on one
process by a cookie (docs/notes/deploy.md).

Beyond one machine: `workers` on each other host starts only its Panel processes (supervised there), on
--bind ADDR, ports --first-port, --first-port + 1, ...; `start --workers HOST:PORT,...` on the front adds them
to nginx's processes (with --procs 0, nginx alone).

The same from Python: `start(port=..., procs=..., run_dir=..., workers=...)` and `start_workers(...)` return
a `Deployment`; `stop(run_dir)`.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import xmlrpc.client
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
FIRST_PORT = 5100       # a worker host's first Panel port (`workers`)
# Reconnects (after a process's restart) nginx lets through to one process per second; the others wait in its
# queue (nginx.conf.template). A reconnect builds a page, about 0.45 s of the process's CPU (17.4 s for 40 in
# benchmarks/class_load.py --kill): at 2 a second they take under the restarted process's whole core, and a class's
# 40 are all back within about 20 s, where at once they took 40 s and held every new page back 20 s (issue 28).
RECONNECTS_PER_S = 2.0
RECONNECT_QUEUE = 1000  # per process: a class's reconnects all wait, none is refused


def nginx_binary() -> str | None:
    # /usr/sbin is not on a non-root user's PATH on Debian
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def supervisor_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("supervisor") is not None


def default_procs() -> int:
    return len(os.sched_getaffinity(0))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_workers(text: str) -> list[str]:
    """"host:port,host:port" -> ["address:port", ...]. Names are resolved here, once: nginx resolves an
    upstream's name when it loads its configuration, and names the process that answered by its address."""
    out = []
    for item in filter(None, (w.strip() for w in text.replace("\n", ",").split(","))):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"a worker is HOST:PORT, not {item!r}")
        try:
            address = socket.gethostbyname(host)
        except OSError as e:
            raise ValueError(f"worker {item}: {host} does not resolve ({e})") from None
        out.append(f"{address}:{int(port)}")
    if len(set(out)) != len(out):
        raise ValueError(f"a worker is named twice: {text}")
    return out


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


def nginx_conf(run_dir: Path, port: int, backends: list[str], listen: str = "127.0.0.1",
               reconnects_per_s: float = RECONNECTS_PER_S) -> str:
    """backends: "address:port" of each Panel process, lab0, lab1, ... in order. reconnects_per_s: the pages a
    process's reconnecting students get, per second (0: all at once)."""
    names = [f"lab{i}" for i in range(len(backends))]
    # a process that refused a connection gets no new visitor for 3 s: a restarted one is back soon after
    upstreams = [f"    upstream {n} {{ server {a}; }}" for n, a in zip(names, backends)]
    servers = "".join(f"        server {a} max_fails=1 fail_timeout=3s;\n" for a in backends)
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
        # after a failover $upstream_addr lists every address tried: the last one answered
        "@ADDR_TO_NAME@": "\n".join(f'        "~(^|[ ,]){re.escape(a)}$" {n};' for n, a in zip(names, backends)),
        "@COOKIE_IS_VALID@": "\n".join(f'        {n} "";' for n in names),
        "@BOKEH_STATIC@": str(dirs["bokeh"]),
        "@EXTENSIONS@": extensions,
        "@FAVICON@": str(dirs["favicon"]),
        # nginx's rate is whole requests a second or a minute
        "@RECONNECT_RATE@": f"{max(1, round(60 * reconnects_per_s))}r/m",
        "@RECONNECT_LIMIT@": (f"            limit_req zone=reconnects burst={RECONNECT_QUEUE};"
                              if reconnects_per_s > 0 else ""),
    }
    text = TEMPLATE.read_text()
    for key, value in fills.items():
        text = text.replace(key, value)
    return text


def socket_path(run_dir: Path) -> Path:
    """supervisord's control socket: in the run directory unless that path is too long for a unix socket."""
    path = Path(run_dir) / "supervisor.sock"
    if len(str(path)) < 100:
        return path
    import hashlib
    return Path(tempfile.gettempdir()) / f"labsv-{hashlib.sha1(str(run_dir).encode()).hexdigest()[:12]}.sock"


def supervisord_conf(run_dir: Path, programs: dict[str, list[str]]) -> str:
    """One [program] per process. autorestart: a process that ends for any reason is started again at once;
    one that cannot stay up 2 s is retried with growing delays, then marked FATAL (`status` says so).
    stopasgroup/killasgroup: whatever a Panel process started (pool workers) ends with it."""
    def esc(text: str) -> str:        # supervisord expands %(name)s in its values
        return text.replace("%", "%%")
    logs = run_dir / "logs"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # nginx's 4096 connections per worker need as many descriptors; supervisord raises its soft limit to this
    minfds = min(8192, hard) if hard != resource.RLIM_INFINITY else 8192
    lines = [
        "; written by deploy/class_server.py: regenerated on every start",
        "[supervisord]",
        f"logfile={esc(str(logs / 'supervisord.log'))}",
        f"pidfile={esc(str(run_dir / 'supervisord.pid'))}",
        f"childlogdir={esc(str(logs))}",
        "nodaemon=true",               # class_server.py starts it in a session of its own, and knows its pid
        f"minfds={max(minfds, 1024)}",
        "",
        "[unix_http_server]",
        f"file={esc(str(socket_path(run_dir)))}",
        "chmod=0700",
        "",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
        "",
        "[supervisorctl]",
        f"serverurl=unix://{esc(str(socket_path(run_dir)))}",
    ]
    for name, args in programs.items():
        lines += [
            "",
            f"[program:{name}]",
            f"command={esc(shlex.join(args))}",
            f"directory={esc(str(ROOT))}",
            "autostart=true",
            "autorestart=true",
            "startsecs=2",
            "startretries=5",
            "stopsignal=TERM",         # nginx: fast shutdown (QUIT would wait for every websocket to close)
            "stopwaitsecs=10",
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            f"stdout_logfile={esc(str(logs / f'{name}.log'))}",
            "stdout_logfile_maxbytes=20MB",
            "stdout_logfile_backups=2",
            # started in this order, stopped in the reverse: nginx last up, first down
            f"priority={900 if name == 'nginx' else 100}",
        ]
    return "\n".join(lines) + "\n"


@dataclass
class Deployment:
    run_dir: Path
    port: int | None                          # nginx's port; None on a host of workers only
    backends: list[str]                       # every Panel process nginx routes to, "address:port": lab0, lab1, ...
    local: list[str] = field(default_factory=list)   # the programs supervisord runs here: "lab0", ..., "nginx"
    supervisord: int = 0                      # its pid
    listen: str = "127.0.0.1"
    unused_session_ms: int = UNUSED_SESSION_MS

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.listen in ("0.0.0.0", "::") else self.listen
        return f"http://{host}:{self.port}/app"

    def save(self):
        state = {**asdict(self), "run_dir": str(self.run_dir)}
        (self.run_dir / "state.json").write_text(json.dumps(state, indent=1))

    @classmethod
    def load(cls, run_dir: Path) -> Deployment | None:
        path = Path(run_dir) / "state.json"
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        if "local" not in state:             # written by an older class_server.py: nothing to supervise
            return None
        return cls(**{**state, "run_dir": Path(state["run_dir"])})

    def rpc(self, timeout: float = 10.0):
        from supervisor.xmlrpc import SupervisorTransport
        transport = SupervisorTransport(None, None, f"unix://{socket_path(self.run_dir)}")
        transport.timeout = timeout
        return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)

    def processes(self) -> dict[str, dict]:
        """supervisord's view of each program: statename (RUNNING, STARTING, BACKOFF, EXITED, FATAL, ...),
        pid (0 when not running), description; empty when supervisord does not answer."""
        if not self.supervisor_alive():
            return {}
        try:
            return {p["name"]: p for p in self.rpc().supervisor.getAllProcessInfo()}
        except (OSError, xmlrpc.client.Error):
            return {}

    def supervisor_alive(self) -> bool:
        return bool(self.supervisord) and _running(self.supervisord, "supervisord")

    @property
    def pids(self) -> dict[str, int]:
        """The running processes now: "supervisord", "lab0", ..., "nginx" -> pid (a restarted one has a new pid)."""
        out = {"supervisord": self.supervisord} if self.supervisor_alive() else {}
        out.update({n: p["pid"] for n, p in self.processes().items() if p["pid"]})
        return out

    def alive(self) -> dict[str, bool]:
        procs = self.processes()
        return {name: procs.get(name, {}).get("statename") == "RUNNING" for name in self.local}

    def all_pids(self) -> list[int]:
        """supervisord's, its programs' and theirs (nginx's workers, anything a Panel process started)."""
        pids = list(self.pids.values())
        seen = set(pids)
        for pid in list(pids):
            for child in _descendants(pid):
                if child not in seen:
                    seen.add(child)
                    pids.append(child)
        return pids

    def serving_pid(self, name: str) -> int | None:
        """The process that serves labN's pages: the child of the one supervisord runs (deploy/lab_process.py)."""
        parent = self.pids.get(name)
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except (OSError, TypeError):
            return None
        return int(children[0]) if children else None

    def address(self, name: str) -> str:
        return f"{self.listen}:{self.port}" if name == "nginx" else self.backends[int(name[3:])]

    def stop(self, timeout: float = 20.0):
        stop(self.run_dir, timeout)


def _running(pid: int, name: str) -> bool:
    """pid is a live process of this deployment (a recycled pid runs something else)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    comm, state = stat[stat.index("(") + 1: stat.rindex(")")], stat.rsplit(")", 1)[1].split()[0]
    if state == "Z":
        return False
    if not cmdline:    # an exiting process has let go of its memory, its command line with it: its name says
        return comm in ("nginx", "supervisord") or comm.startswith(("python", "panel"))
    return name in cmdline if name in ("nginx", "supervisord") else "panel" in cmdline


def _descendants(pid: int) -> list[int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, frontier = [], [pid]
    while frontier:
        kids = [c for c, p in parents.items() if p in frontier]
        out += kids
        frontier = kids
    return out


def _get(url: str, timeout: float = 5.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except OSError:
        return 0


def _log_tail(path: Path, n: int = 2000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def panel_args(address: str, port: int, origins: list[str], unused_session_ms: int) -> list[str]:
    # Panel's admin page shows every session: only where this host alone reaches it (nginx lets only this
    # machine through to it), not on a worker host's network address
    admin = ["--admin"] if address.startswith("127.") else []
    # `panel serve app ...`, forked from a parent that has imported the app (deploy/lab_process.py: a dead
    # process is serving again within seconds)
    args = [sys.executable, str(ROOT / "deploy" / "lab_process.py"), "serve", "app", "--address", address,
            "--port", str(port),
            "--num-procs", "1", "--use-xheaders", *admin, "--liveness",
            "--unused-session-lifetime", str(unused_session_ms), "--check-unused-sessions", "1000"]
    for origin in origins:
        args += ["--allow-websocket-origin", origin]
    return args


def _prepare(run_dir: Path) -> Path:
    if not supervisor_installed():
        raise RuntimeError("supervisord is not installed: python3 -m pip install -e '.[class]'")
    run_dir = Path(run_dir).resolve()
    old = Deployment.load(run_dir)
    if old is not None and old.supervisor_alive():
        raise RuntimeError(f"already running (run directory {run_dir}); stop it first: class_server.py stop")
    for sub in ("tmp", "logs"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    return run_dir


def _check_free(address: str, port: int, what: str):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as nginx does: closed connections do not count
        try:
            s.bind((address, port))
        except OSError as e:
            raise RuntimeError(f"port {port} on {address} is taken ({e.strerror}): choose another {what}") from None


def start(port: int = 8080, procs: int | None = None, run_dir: Path = RUN_DIR, listen: str = "127.0.0.1",
          origins: tuple[str, ...] = (), timeout: float = 180.0, unused_session_ms: int = UNUSED_SESSION_MS,
          workers: tuple[str, ...] = (), reconnects_per_s: float = RECONNECTS_PER_S, say=print) -> Deployment:
    """Start supervisord with nginx and the Panel processes, wait until they serve, and return the running
    deployment. workers: "address:port" of Panel processes on other hosts (`workers` there), added to nginx's.
    reconnects_per_s: see RECONNECTS_PER_S (0: no queue)."""
    nginx = nginx_binary()
    if nginx is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install -y nginx)")
    run_dir = _prepare(run_dir)
    # an nginx already on the port would answer the readiness check for this one, which could not bind
    _check_free(listen, port, "with --port")
    procs = (0 if workers else default_procs()) if procs is None else procs
    if procs + len(workers) == 0:
        raise RuntimeError("no Panel process: --procs 0 needs --workers")
    backends = [f"127.0.0.1:{free_port()}" for _ in range(procs)] + list(workers)
    dep = Deployment(run_dir, port, backends, [f"lab{i}" for i in range(procs)] + ["nginx"],
                     listen=listen, unused_session_ms=unused_session_ms)
    (run_dir / "nginx.conf").write_text(nginx_conf(run_dir, port, backends, listen, reconnects_per_s))
    allowed = [f"127.0.0.1:{port}", f"localhost:{port}", *origins]
    programs = {f"lab{i}": panel_args("127.0.0.1", int(backends[i].rsplit(":", 1)[1]), allowed, unused_session_ms)
                for i in range(procs)}
    programs["nginx"] = [nginx, "-p", str(run_dir), "-c", str(run_dir / "nginx.conf"),
                         "-e", str(run_dir / "nginx-error.log")]
    _launch(dep, programs, timeout)
    remote = f" and {len(workers)} on other hosts" if workers else ""
    say(f"serving the lab at {dep.url} ({procs} Panel process{'' if procs == 1 else 'es'} here{remote} "
        f"behind nginx, supervised by supervisord; logs in {run_dir / 'logs'})")
    return dep


def start_workers(procs: int | None = None, run_dir: Path = RUN_DIR, bind: str = "127.0.0.1",
                  first_port: int = FIRST_PORT, origins: tuple[str, ...] = (), timeout: float = 180.0,
                  unused_session_ms: int = UNUSED_SESSION_MS, say=print) -> Deployment:
    """Panel processes only, on bind:first_port, first_port + 1, ..., supervised: a worker host that a
    front's `start --workers` puts behind its nginx. origins: the names students open the front by."""
    if not origins:
        raise RuntimeError("name the front students open (--origin HOST[:PORT]): "
                           "the Panel processes accept websockets from it only")
    run_dir = _prepare(run_dir)
    procs = procs or default_procs()
    ports = list(range(first_port, first_port + procs))
    for p in ports:
        _check_free(bind, p, "with --first-port")
    dep = Deployment(run_dir, None, [f"{bind}:{p}" for p in ports], [f"lab{i}" for i in range(procs)],
                     listen=bind, unused_session_ms=unused_session_ms)
    programs = {f"lab{i}": panel_args(bind, p, list(origins), unused_session_ms) for i, p in enumerate(ports)}
    _launch(dep, programs, timeout)
    say(f"{procs} Panel process{'' if procs == 1 else 'es'} on {bind}, supervised by supervisord: on the front, "
        f"start --workers {','.join(dep.backends)}")
    return dep


def _launch(dep: Deployment, programs: dict[str, list[str]], timeout: float):
    run_dir = dep.run_dir
    conf = run_dir / "supervisord.conf"
    conf.write_text(supervisord_conf(run_dir, programs))
    socket_path(run_dir).unlink(missing_ok=True)
    # one process per core: BLAS threads on top would only fight over the same cores
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **os.environ}
    # a session of its own: Ctrl-C in the terminal that started the class does not end it
    with open(run_dir / "logs" / "supervisord.out", "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    dep.supervisord = proc.pid
    dep.save()
    try:
        _wait_ready(dep, proc, timeout)
    except BaseException:
        stop(run_dir)
        raise


def _wait_ready(dep: Deployment, proc: subprocess.Popen, timeout: float):
    """supervisord answers, every process here is RUNNING and every Panel process (here or on another host)
    builds the app on its liveness endpoint, then nginx serves the page."""
    deadline = time.monotonic() + timeout
    pending = {f"lab{i}": f"http://{a}/liveness?endpoint=/app" for i, a in enumerate(dep.backends)}
    if dep.port is not None:
        pending["nginx"] = dep.url
    while pending:
        if proc.poll() is not None:
            raise RuntimeError(f"supervisord exited with status {proc.returncode}:\n"
                               f"{_log_tail(dep.run_dir / 'logs' / 'supervisord.out')}"
                               f"{_log_tail(dep.run_dir / 'logs' / 'supervisord.log')}")
        states = dep.processes()
        for name, info in states.items():
            if info["statename"] in ("FATAL", "BACKOFF"):
                extra = _log_tail(dep.run_dir / "nginx-error.log") if name == "nginx" else ""
                raise RuntimeError(f"{name} does not start ({info['statename']}: {info['description']}):\n"
                                   f"{_log_tail(dep.run_dir / 'logs' / f'{name}.log')}{extra}")
        for name, url in list(pending.items()):
            if name in dep.local and states.get(name, {}).get("statename") != "RUNNING":
                continue
            if (name != "nginx" or len(pending) == 1) and _get(url, timeout=30) == 200:
                del pending[name]
        if time.monotonic() > deadline:
            where = [f"{n} ({dep.address(n)})" for n in pending]
            raise TimeoutError(f"not ready within {timeout:.0f} s: {', '.join(where)}")
        if pending:
            time.sleep(0.3)


def stop(run_dir: Path = RUN_DIR, timeout: float = 20.0) -> list[int]:
    """supervisord stops nginx first (no new requests reach a stopping process), then the Panel processes,
    and ends; whatever is left at the deadline is killed. Returns the pids that were running."""
    dep = Deployment.load(Path(run_dir).resolve())
    if dep is None:
        return []
    pids = dep.all_pids()
    deadline = time.monotonic() + timeout
    if dep.supervisor_alive():
        try:
            dep.rpc(timeout=timeout).supervisor.shutdown()
        except (OSError, xmlrpc.client.Error):
            os.kill(dep.supervisord, signal.SIGTERM)
    for pid in pids:
        _end(pid, deadline)
    (dep.run_dir / "state.json").unlink(missing_ok=True)
    socket_path(dep.run_dir).unlink(missing_ok=True)
    return pids


def _end(pid: int, deadline: float):
    """Wait for a process until the deadline, then SIGKILL it and wait until it has ended."""
    while _alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # SIGKILL is delivered asynchronously: wait until it has ended, so that stop means stopped
        killed_by = time.monotonic() + 5.0
        while _alive(pid) and time.monotonic() < killed_by:
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


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
    head = dep.url if dep.port is not None else f"Panel workers on {dep.listen}"
    lines = [f"{head}  (run directory {dep.run_dir})"]
    if not dep.supervisor_alive():
        lines.append(f"  supervisord (pid {dep.supervisord}) is not running: nothing is supervised; "
                     "`stop` clears what is left, `start` starts again")
    else:
        lines.append(f"  supervisord pid {dep.supervisord}")
    procs = dep.processes()
    for i, backend in enumerate(dep.backends):
        name = f"lab{i}"
        answer = _get(f"http://{backend}/liveness", timeout=5)
        if name in dep.local:
            info = procs.get(name, {})
            state = info.get("statename", "unknown")
            pid = info.get("pid") or "-"
            note = info.get("description", "")
        else:
            state, pid, note = "remote", "-", "supervised on its own host"
        lines.append(f"  {name:<6} pid {pid!s:<8} {backend:<22} {state:<9} HTTP {answer or '-':<4} {note}")
    if "nginx" in dep.local:
        info = procs.get("nginx", {})
        where, state = f"{dep.listen}:{dep.port}", info.get("statename", "unknown")
        lines.append(f"  {'nginx':<6} pid {info.get('pid') or '-'!s:<8} {where:<22} {state:<9} "
                     f"HTTP {_get(dep.url) or '-':<4} {info.get('description', '')}")
    return "\n".join(lines)


class Terminated(BaseException):
    """SIGTERM or SIGINT while --foreground starts: start stops what it started, as on any failure."""


def _terminate(signum, _frame):
    raise Terminated(signal.Signals(signum).name)


def serve_foreground(dep: Deployment) -> int:
    """Stay until SIGTERM/SIGINT and then stop everything. A process that ends is supervisord's to restart:
    this only reports it. It ends (status 1, so that a container's runtime restarts the container) when
    supervisord itself ends or gives up on a process (FATAL)."""
    ended = []
    signal.signal(signal.SIGTERM, lambda *_: ended.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: ended.append("SIGINT"))
    last = dep.pids
    while not ended:
        if not dep.supervisor_alive():
            ended.append("supervisord ended")
            break
        procs = dep.processes()
        fatal = [n for n, p in procs.items() if p["statename"] == "FATAL"]
        if fatal:
            ended.append(f"{', '.join(fatal)} cannot be started again (FATAL; logs in {dep.run_dir / 'logs'})")
            break
        now = {n: p["pid"] for n, p in procs.items() if p["pid"]}
        for name, pid in now.items():
            if last.get(name) not in (None, pid):
                print(f"{name} ended; supervisord restarted it (pid {pid})", flush=True)
        last.update(now)
        time.sleep(1.0)
    print(f"stopping: {ended[0]}", flush=True)
    dep.stop()
    return 0 if ended[0].startswith("SIG") else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["start", "workers", "stop", "status"])
    ap.add_argument("--port", type=int, default=8080, help="nginx's port (default 8080)")
    ap.add_argument("--procs", type=int, default=None,
                    help=f"Panel processes on this host (default: the number of cores, here {default_procs()}; "
                         "with --workers, 0)")
    ap.add_argument("--run-dir", type=Path, default=RUN_DIR, help="config, pid files and logs (default deploy/run)")
    ap.add_argument("--listen", default="127.0.0.1",
                    help="nginx's address (default 127.0.0.1; 0.0.0.0 for students on the network, with --origin)")
    ap.add_argument("--origin", action="append", default=[], metavar="HOST[:PORT]",
                    help="a name or address students open the lab by, e.g. 192.168.1.20:8080 (repeatable)")
    ap.add_argument("--workers", default="", metavar="HOST:PORT,...",
                    help="start: Panel processes on other hosts (each started there with `workers`), or @FILE "
                         "naming one HOST:PORT a line")
    ap.add_argument("--bind", default="127.0.0.1", help="workers: the address the Panel processes listen on")
    ap.add_argument("--first-port", type=int, default=FIRST_PORT,
                    help=f"workers: the first port (default {FIRST_PORT})")
    ap.add_argument("--unused-session-ms", type=int, default=UNUSED_SESSION_MS,
                    help=f"how long a session waits for its page to connect (default {UNUSED_SESSION_MS})")
    ap.add_argument("--reconnects-per-s", type=float, default=RECONNECTS_PER_S,
                    help=f"start: reconnecting pages let through to a process per second after its restart "
                         f"(default {RECONNECTS_PER_S:g}; 0: all at once)")
    ap.add_argument("--foreground", action="store_true", help="stay until SIGTERM (a container's entry point)")
    args = ap.parse_args(argv)
    if args.foreground:
        signal.signal(signal.SIGTERM, _terminate)
        signal.signal(signal.SIGINT, _terminate)
    if args.command == "stop":
        pids = stop(args.run_dir)
        print(f"stopped {len(pids)} processes" if pids else "not running")
        return 0
    if args.command == "status":
        print(status(args.run_dir))
        return 0
    say = lambda text: print(text, flush=True)  # noqa: E731 (a container's log shows it at once)
    try:
        if args.command == "workers":
            dep = start_workers(args.procs, args.run_dir, args.bind, args.first_port, tuple(args.origin),
                                unused_session_ms=args.unused_session_ms, say=say)
        else:
            text = Path(args.workers[1:]).read_text() if args.workers.startswith("@") else args.workers
            workers = tuple(parse_workers(text))
            dep = start(args.port, args.procs, args.run_dir, args.listen, tuple(args.origin),
                        unused_session_ms=args.unused_session_ms, workers=workers,
                        reconnects_per_s=args.reconnects_per_s, say=say)
    except (RuntimeError, TimeoutError, ValueError, OSError) as e:
        print(f"class_server: {e}", file=sys.stderr)
        return 1
    except Terminated as e:
        print(f"stopped while starting: {e}", flush=True)
        return 0
    if args.command == "start" and args.listen != "127.0.0.1":
        print(f"students open http://<this machine's name or address>:{args.port}/app", flush=True)
    if not args.foreground:
        return 0
    try:
        return serve_foreground(dep)
    except Terminated:            # in the instant before serve_foreground took the signals over
        dep.stop()
        return 0


if __name__ == "__main__":
    sys.exit(main())
