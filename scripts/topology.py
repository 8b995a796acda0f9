"""The production topology on loopback: N app processes behind nginx, plus the job queue's consumers.

    .venv/bin/python -m scripts.topology [--apps 2] [--threads 100] [--port 8080] [--job-workers 1]
                                          [--dir DIR] [--setup] [--no-nginx]

Each app process is gunicorn with **one** worker (``gthread``, ``--threads``): Flask-SocketIO keeps a
client's Socket.IO session in the process that accepted it, and gunicorn's own balancing across several
workers is not sticky, so processes are scaled by starting more gunicorns, never with ``-w`` (see
docs/deploy.md). nginx (Debian's package) spreads plain HTTP round-robin over the processes and pins
``/socket.io`` to one process per client address (``ip_hash``: the sticky session Socket.IO's long-polling
handshake needs), with the WebSocket upgrade headers. With ``JOBS_MODE=redis`` (the default when
``REDIS_URL`` is set) ``flask jobs worker`` processes consume the queue, which drains stored webhook
deliveries in batches (docs/channels.md).

Configuration is the service's own environment (``DATABASE_URL``, ``SANDBOX_DATABASE_URL``, ``REDIS_URL``,
``SECRET_KEY``, ``META_APP_SECRET`` ...). nginx's configuration, pid file, temp files and every log are
written to ``--dir`` (a new temporary directory by default); nothing outside it is touched and no root
configuration is read. The script prints the URLs and waits; Ctrl-C (or SIGTERM) stops everything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NGINX_CANDIDATES = ("nginx", "/usr/sbin/nginx")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def find_nginx() -> str | None:
    for candidate in NGINX_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


# gunicorn keeps an idle connection from nginx open this long (its default, 2 s, is far shorter than
# nginx's upstream keepalive_timeout: nginx then reused connections gunicorn had just closed, and three
# webhook deliveries in 9,200 were answered 502 in the ingest benchmark).
UPSTREAM_KEEPALIVE_SECONDS = 75


def find_gunicorn(root: Path = PROJECT_ROOT) -> str | None:
    local = root / ".venv" / "bin" / "gunicorn"
    if local.exists():
        return str(local)
    beside = Path(sys.executable).parent / "gunicorn"
    return str(beside) if beside.exists() else shutil.which("gunicorn")


def nginx_config(workdir: Path, port: int, app_ports: list[int]) -> str:
    """nginx.conf for the app processes on ``app_ports``, listening on 127.0.0.1:``port``."""
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in app_ports)
    return f"""# Written by scripts/topology.py; paths are all under {workdir}.
worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/nginx-temp/body;
    proxy_temp_path {workdir}/nginx-temp/proxy;
    fastcgi_temp_path {workdir}/nginx-temp/fastcgi;
    uwsgi_temp_path {workdir}/nginx-temp/uwsgi;
    scgi_temp_path {workdir}/nginx-temp/scgi;
    # Meta's deliveries are at most 3 MB; keep them in memory rather than in temp files.
    client_max_body_size 5m;
    client_body_buffer_size 1m;

    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      '';
    }}
    # Plain HTTP (API, pages, webhooks): any process, round robin, over kept-alive connections.
    upstream agentdesk_app {{
{servers}
        keepalive 64;
        # shorter than gunicorn's --keep-alive: nginx must drop an idle connection before gunicorn does,
        # or it reuses one gunicorn is closing and answers the request 502 (a POST is not retried)
        keepalive_timeout 60s;
    }}
    # Socket.IO: the same client address always reaches the same process (sticky sessions).
    upstream agentdesk_socketio {{
        ip_hash;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://agentdesk_app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
        location /socket.io {{
            proxy_pass http://agentdesk_socketio;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 3600s;
        }}
    }}
}}
"""


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/v1/organizations", timeout=1).status_code == 401
    except requests.RequestException:
        return False


def wait_until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


@dataclass
class Topology:
    """Start with :meth:`start` (or ``with Topology(...) as t``); ``t.url`` is nginx, ``t.app_urls`` the
    processes behind it. ``environment`` is the processes' environment (defaults: this one's)."""

    environment: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    apps: int = 2
    threads: int = 100
    job_workers: int = 1
    job_threads: int = 4
    port: int | None = None
    use_nginx: bool = True
    root: Path = PROJECT_ROOT
    workdir: Path | None = None
    app_urls: list[str] = field(default_factory=list)
    url: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _logs: list[IO[bytes]] = field(default_factory=list)

    def flask(self, *args: str, timeout: float = 300) -> str:
        """A CLI command (``flask --app app ...``) with the topology's environment; its standard output."""
        done = subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", *args],
            cwd=self.root,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"flask {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def _spawn(self, name: str, command: list[str]) -> None:
        assert self.workdir is not None
        log = (self.workdir / f"{name}.log").open("wb")
        self._logs.append(log)
        self.processes.append(
            subprocess.Popen(command, cwd=self.root, env=self.environment, stdout=log, stderr=log)
        )

    def jobs_mode(self) -> str:
        """As ``core.config``: ``JOBS_MODE``, or ``redis`` when ``REDIS_URL`` is set, else ``embedded``."""
        default = "redis" if self.environment.get("REDIS_URL") else "embedded"
        return self.environment.get("JOBS_MODE") or default

    def start(self) -> Topology:
        self.workdir = Path(self.workdir or tempfile.mkdtemp(prefix="agentdesk-topology-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        gunicorn = find_gunicorn(self.root)
        if gunicorn is None:
            raise RuntimeError("gunicorn is not installed (pip install -e . installs it)")
        if self.use_nginx:
            # nginx appends the client to X-Forwarded-For: the apps trust that one proxy (app.py ProxyFix).
            self.environment = {**self.environment, "TRUSTED_PROXIES": "1"}
        try:
            app_ports = [free_port() for _ in range(self.apps)]
            for index, app_port in enumerate(app_ports):
                self._spawn(
                    f"app-{index + 1}",
                    [
                        gunicorn,
                        "--worker-class",
                        "gthread",
                        "--workers",
                        "1",
                        "--threads",
                        str(self.threads),
                        "--bind",
                        f"127.0.0.1:{app_port}",
                        "--chdir",
                        str(self.root),
                        "--graceful-timeout",
                        "5",
                        "--keep-alive",
                        str(UPSTREAM_KEEPALIVE_SECONDS),
                        "--no-control-socket",  # gunicorn 27: one per user by default, shared otherwise
                        "app:create_app(warm=True)",
                    ],
                )
                self.app_urls.append(f"http://127.0.0.1:{app_port}")
            if self.jobs_mode() == "redis":
                for index in range(self.job_workers):
                    self._spawn(
                        f"jobs-{index + 1}",
                        [
                            sys.executable,
                            "-m",
                            "flask",
                            "--app",
                            "app",
                            "jobs",
                            "worker",
                            "--workers",
                            str(self.job_threads),
                        ],
                    )
            for app_url in self.app_urls:
                if not wait_until(lambda u=app_url: _answers(u), timeout=90):
                    raise RuntimeError(f"{app_url} did not start; see {self.workdir}")
            self.url = self.app_urls[0]
            if self.use_nginx:
                self._start_nginx(app_ports)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_nginx(self, app_ports: list[int]) -> None:
        assert self.workdir is not None
        nginx = find_nginx()
        if nginx is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        (self.workdir / "nginx-temp").mkdir(exist_ok=True)
        if os.geteuid() == 0:
            # nginx's workers drop to ``nobody``: let them write their temp files under our directory
            os.chmod(self.workdir, 0o755)
            os.chmod(self.workdir / "nginx-temp", 0o777)
        self.port = self.port or free_port()
        config = self.workdir / "nginx.conf"
        config.write_text(nginx_config(self.workdir, self.port, app_ports))
        self._spawn("nginx", [nginx, "-p", str(self.workdir), "-c", str(config)])
        self.url = f"http://127.0.0.1:{self.port}"
        if not wait_until(lambda: _answers(self.url), timeout=30):
            raise RuntimeError(f"nginx did not start; see {self.workdir}/nginx-error.log")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> Topology:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--apps", type=int, default=2, help="app processes (gunicorn, one worker each)")
    parser.add_argument("--threads", type=int, default=100, help="threads per app process")
    parser.add_argument("--job-workers", type=int, default=1, help="'flask jobs worker' processes (Redis)")
    parser.add_argument("--job-threads", type=int, default=4, help="threads per job worker")
    parser.add_argument("--port", type=int, default=8080, help="nginx's loopback port")
    parser.add_argument("--dir", type=Path, default=None, help="nginx.conf, logs (default: a temp dir)")
    parser.add_argument("--setup", action="store_true", help="apply the migrations first")
    parser.add_argument("--no-nginx", action="store_true", help="only the app processes and job workers")
    args = parser.parse_args(argv)
    topology = Topology(
        apps=args.apps,
        threads=args.threads,
        job_workers=args.job_workers,
        job_threads=args.job_threads,
        port=args.port,
        use_nginx=not args.no_nginx,
        workdir=args.dir,
    )
    if args.setup:
        topology.flask("setup")
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with topology:
        print(f"Agent Desk on {topology.url}  (app processes: {', '.join(topology.app_urls)})")
        print(f"nginx.conf and logs: {topology.workdir}", flush=True)
        while not stopping and all(p.poll() is None for p in topology.processes):
            time.sleep(0.5)
        failed = [p.args for p in topology.processes if p.poll() not in (None, 0, -signal.SIGTERM)]
        if failed:
            print(f"stopped: a process exited ({failed[0]}); see {topology.workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
