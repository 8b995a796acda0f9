"""A single-object GET against a bare JSON route of the same app: what the platform adds to a read.

``GET /v1/crm/organizations/<org>/tickets/<id>`` (key resolution, tenancy, the ticket's query, its
serialisation) is timed beside ``GET /bench/bare`` (``{"ok": true}``, registered on the same live app, so
it crosses the same middleware, request id and unit-of-work boundary). The ratio of their rates is the
issue's figure (performance issue, item 3): target >= 0.5.

Three runs: in-process (the Flask test client, one thread) and, unless ``BENCH_SKIP_SERVED`` is set, through
real servers in a child process: ``flask serve``'s own (Werkzeug, threaded), driven over one keep-alive
HTTP connection from this process, and gunicorn as the production sketch runs it (one ``gthread`` worker,
4 threads), driven by ``wrk`` (Debian package; 2 threads, 8 connections) when it is installed, else by the
keep-alive connection. Also prints the SQL statements of one ticket GET.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify
from sqlalchemy import event
from sqlalchemy.engine import Engine

from bench import profile
from bench.harness import make_app, make_org

TARGET = 0.5
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))


def _prepared() -> tuple[Flask, dict[str, Any]]:
    """An app with the bare route, an organization and one ticket; the paths and key to use."""
    app = make_app()

    def bare() -> Response:
        return jsonify({"ok": True})

    # Registered before the first request (Flask refuses new rules afterwards).
    app.add_url_rule("/bench/bare", "bench_bare", bare)
    org = make_org(app)
    key = org["api_keys"]["live"]
    base = f"/v1/crm/organizations/{org['organization_id']}"
    created = app.test_client().post(
        f"{base}/tickets", headers={"X-API-Key": key}, json={"title": "Bench", "source": "api"}
    )
    assert created.status_code == 201, created.get_json()
    return app, {"key": key, "ticket": f"{base}/tickets/{created.get_json()['id']}", "bare": "/bench/bare"}


def _rate(fn: Callable[[], object], seconds: float = SECONDS) -> float:
    """Requests per second of ``fn`` over ``seconds`` (after a short warm-up)."""
    for _ in range(50):
        fn()
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            fn()
        count += 20
    return count / (time.perf_counter() - started)


def _report(where: str, ticket: float, bare: float) -> None:
    ratio = ticket / bare
    verdict = "meets" if ratio >= TARGET else "below"
    print(f"{where:<12} ticket GET {ticket:8.0f} req/s   bare route {bare:8.0f} req/s   ", end="")
    print(f"ratio {ratio:5.3f}   (target >= {TARGET}: {verdict})")


def _statements(app: Flask, paths: dict[str, Any]) -> list[str]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append(" ".join(statement.split())[:100])

    client = app.test_client()
    event.listen(Engine, "after_cursor_execute", record)
    try:
        client.get(paths["ticket"], headers={"X-API-Key": paths["key"]}).close()
    finally:
        event.remove(Engine, "after_cursor_execute", record)
    return seen


def in_process() -> None:
    app, paths = _prepared()
    client = app.test_client()
    headers = {"X-API-Key": paths["key"]}

    def ticket() -> None:
        response = client.get(paths["ticket"], headers=headers)
        assert response.status_code == 200
        response.close()

    def bare() -> None:
        client.get(paths["bare"]).close()

    ticket()  # the first use of the key records last_used_at; what follows is the steady state
    statements = _statements(app, paths)
    print(f"SQL statements of one ticket GET (steady state): {len(statements)}")
    for statement in statements:
        print(f"    {statement}")
    _report("in-process", _rate(ticket), _rate(bare))


def serve(port: int) -> None:
    """Child process: the prepared app behind ``flask serve``'s server; prints the paths, then serves."""
    from core.realtime import socketio
    from core.serving import JsonErrorRequestHandler

    app, paths = _prepared()
    print(json.dumps(paths), flush=True)
    socketio.run(
        app,
        host="127.0.0.1",
        port=port,
        use_reloader=False,
        allow_unsafe_werkzeug=True,
        log_output=False,
        request_handler=JsonErrorRequestHandler,
    )


def serve_gunicorn(port: int) -> None:
    """Child process: the prepared app under gunicorn (one gthread worker, 4 threads), as in production."""
    from gunicorn.app.base import BaseApplication

    from core.db import db

    app, paths = _prepared()
    with app.app_context():
        db.engine.dispose()  # the worker is forked: it opens its own connections
    print(json.dumps(paths), flush=True)

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            settings = {
                "bind": f"127.0.0.1:{port}",
                "workers": 1,
                "worker_class": "gthread",
                "threads": 4,
                "accesslog": None,
                "loglevel": "warning",
                "control_socket_disable": True,
            }
            for name, value in settings.items():
                if name in self.cfg.settings:
                    self.cfg.set(name, value)

        def load(self) -> Flask:
            return app

    Server().run()


def _wrk(port: int, path: str, headers: dict[str, str]) -> float:
    command = ["wrk", "-t2", "-c8", f"-d{max(SECONDS, 3):.0f}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    output = subprocess.run(
        [*command, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True
    ).stdout
    if "Non-2xx" in output:
        raise AssertionError(output)
    return float(output.split("Requests/sec:")[1].split()[0])


def served_gunicorn() -> None:
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.single_get", "--gunicorn", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        paths = json.loads(child.stdout.readline())
        _connect(port).close()
        headers = {"X-API-Key": paths["key"]}
        if shutil.which("wrk"):
            with _profiled(child.pid):
                ticket = _wrk(port, paths["ticket"], headers)
            bare = _wrk(port, paths["bare"], {})
            _report("gunicorn+wrk", ticket, bare)
        else:
            connection = _connect(port)

            def get(path: str, sent: dict[str, str]) -> None:
                connection.request("GET", path, headers=sent)
                response = connection.getresponse()
                response.read()
                assert response.status == 200, response.status

            _report(
                "gunicorn",
                _rate(lambda: get(paths["ticket"], headers)),
                _rate(lambda: get(paths["bare"], {})),
            )
    finally:
        child.send_signal(signal.SIGINT)  # gunicorn's quick shutdown (TERM waits for the workers)
        child.wait(timeout=10)


def _profiled(arbiter: int) -> AbstractContextManager[object]:
    """BENCH_PROFILE=<folder>: sample the gunicorn worker while it serves the ticket (bench/profile.py)."""
    out = profile.folder()
    children = Path(f"/proc/{arbiter}/task/{arbiter}/children")
    workers = children.read_text().split() if children.exists() else []
    if out is None or not workers:
        return nullcontext()
    return profile.Sampler({"single-get-worker": int(workers[0])}, out)


def _free_port() -> int:
    with socket.socket() as probe:  # a loopback port nobody holds
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def served() -> None:
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.single_get", "--serve", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        paths = json.loads(child.stdout.readline())
        connection = _connect(port)

        def get(path: str, headers: dict[str, str]) -> None:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status

        headers = {"X-API-Key": paths["key"]}
        _report(
            "flask serve",
            _rate(lambda: get(paths["ticket"], headers)),
            _rate(lambda: get(paths["bare"], {})),
        )
        connection.close()
    finally:
        child.terminate()
        child.wait(timeout=10)


def _connect(port: int) -> http.client.HTTPConnection:
    deadline = time.monotonic() + 30
    while True:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.connect()
            return connection
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    in_process()
    if not os.environ.get("BENCH_SKIP_SERVED"):
        served()
        served_gunicorn()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--gunicorn"]:
        serve_gunicorn(int(sys.argv[2]))
    else:
        main()
