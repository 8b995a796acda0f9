"""A single-object GET against a bare JSON route of the same app: what the platform adds to a read.

``GET /v1/crm/organizations/<org>/tickets/<id>`` (key resolution, tenancy, the ticket's query, its
serialisation) is timed beside ``GET /bench/bare`` (``{"ok": true}``, registered on the same live app, so
it crosses the same middleware, request id and unit-of-work boundary). The ratio of their rates is the
issue's figure (performance issue, item 3): target >= 0.5.

Two runs: in-process (the Flask test client, one thread) and, unless ``BENCH_SKIP_SERVED`` is set, through
a real server (``flask serve``'s own server: Werkzeug, threaded) in a child process, driven over one
keep-alive HTTP connection from this process. Also prints the SQL statements of one ticket GET.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, jsonify
from sqlalchemy import event
from sqlalchemy.engine import Engine

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


def served() -> None:
    with socket.socket() as probe:  # a loopback port nobody holds
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
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


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
    else:
        main()
