"""Health endpoints for load balancers and orchestrators (docs/operations.md).

- ``GET /healthz``: liveness. The process answers; nothing else is touched, so a database outage never
  makes an orchestrator restart healthy processes.
- ``GET /readyz``: readiness. This environment's database (``SELECT 1``), Redis when ``REDIS_URL`` is set
  (``PING``) and the job queue; 200 when all pass, 503 naming what failed otherwise.

Both exist in each environment (``/healthz``, ``/sandbox/healthz``), need no credentials and are left out
of the OpenAPI document. Every check runs in a worker thread with a deadline, so a dependency that hangs
(a blackholed host, an exhausted pool) turns into a 503 within ``HEALTH_TIMEOUT_SECONDS`` instead of a
request that never ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from time import monotonic
from typing import Any

import redis
from flask import Flask, Response, current_app, jsonify
from sqlalchemy import Engine, text

from core import jobs
from core.db import db
from core.logs import redact

log = logging.getLogger(__name__)

# The whole readiness answer must come within ~2 s; each check gets at most this long.
CHECK_TIMEOUT_SECONDS = 1.5
REDIS_SOCKET_TIMEOUT_SECONDS = 1.0

Check = Callable[[], dict[str, Any]]

# Few threads on purpose: if checks hang, new ones queue behind them and time out too (the service is
# not ready), instead of piling up threads.
_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readyz")
_redis_clients: dict[str, redis.Redis] = {}


def short_error(error: BaseException) -> str:
    """The error's type and first line, without credentials: a reason for an operator, not a traceback
    for an attacker (``/readyz`` is unauthenticated)."""
    first_line = (str(error).strip().splitlines() or [""])[0][:200]
    reason = redact(first_line)
    return f"{type(error).__name__}: {reason}" if reason else type(error).__name__


def _database_check(engine: Engine) -> Check:
    def check() -> dict[str, Any]:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return {"ok": True}

    return check


def _redis_client(url: str) -> redis.Redis:
    client = _redis_clients.get(url)
    if client is None:
        client = _redis_clients[url] = redis.Redis.from_url(
            url,
            socket_connect_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
            socket_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
        )
    return client


def _redis_check(url: str) -> Check:
    def check() -> dict[str, Any]:
        _redis_client(url).ping()
        return {"ok": True}

    return check


def _jobs_check(mode: str) -> Check:
    def check() -> dict[str, Any]:
        queue = jobs.queue()
        if queue.immediate:  # inline: jobs run inside the request; nothing to reach
            return {"ok": True, "mode": "inline"}
        # One cheap read of the queue's own storage (LLEN on Redis, a COUNT on the embedded SQLite file)
        # proves the connection the workers and enqueuers use.
        return {"ok": True, "mode": mode, "pending": queue.pending_count()}

    return check


def _run(checks: dict[str, Check]) -> dict[str, dict[str, Any]]:
    """Run every check at once; each answers within its deadline or counts as failed."""
    futures: dict[str, Future[dict[str, Any]]] = {
        name: _executor.submit(check) for name, check in checks.items()
    }
    deadline = monotonic() + CHECK_TIMEOUT_SECONDS
    results: dict[str, dict[str, Any]] = {}
    for name, future in futures.items():
        try:
            results[name] = future.result(timeout=max(0.0, deadline - monotonic()))
        except FutureTimeout:
            future.cancel()
            results[name] = {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_SECONDS:g} s"}
        except Exception as error:  # every failure is a "not ready" with a reason, never a 500
            results[name] = {"ok": False, "error": short_error(error)}
    return results


def healthz() -> Response:
    return jsonify({"status": "ok"})


def readyz() -> Response:
    config = current_app.config
    checks: dict[str, Check] = {"database": _database_check(db.engine)}
    if config.get("REDIS_URL"):
        checks["redis"] = _redis_check(config["REDIS_URL"])
    checks["jobs"] = _jobs_check(str(config.get("JOBS_MODE")))
    results = _run(checks)
    ready = all(result["ok"] for result in results.values())
    if not ready:
        failed = {name: result["error"] for name, result in results.items() if not result["ok"]}
        log.warning("not ready: %s", failed)
    response = jsonify({"status": "ready" if ready else "unavailable", "checks": results})
    response.status_code = 200 if ready else 503
    # Never cached by a proxy: the answer is about this process, now.
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    """Register both endpoints on one environment's app (no authentication, not in the API document)."""
    app.add_url_rule("/healthz", "healthz", healthz, methods=["GET"])
    app.add_url_rule("/readyz", "readyz", readyz, methods=["GET"])
