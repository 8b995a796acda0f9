"""``/healthz`` and ``/readyz`` as a load balancer sees them: no credentials, both environments, a 503
naming the failed dependency (without its password) when one is down or hangs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from huey import SqliteHuey
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from core import health
from core.db import db
from core.environments import LIVE, SANDBOX, environment_app
from tests.support.servers import reachable_redis_url

PASSWORD = "hunter2-Secret"


@pytest.fixture
def broken_live_database(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live store refuses every new connection (as PostgreSQL does while restarting); the sandbox
    store keeps working."""
    with environment_app(app, LIVE).app_context():
        engine = db.engine
    engine.dispose()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError(
            "SELECT 1",
            {},
            Exception(f"connection to postgresql://agentdesk:{PASSWORD}@db.internal:5432/live refused"),
        )

    monkeypatch.setattr(engine, "connect", refuse)


@pytest.mark.parametrize("prefix", ["", "/sandbox"])
def test_both_endpoints_answer_without_credentials_in_each_environment(
    client: FlaskClient, prefix: str
) -> None:
    live = client.get(f"{prefix}/healthz")
    assert live.status_code == 200
    assert live.get_json() == {"status": "ok"}

    ready = client.get(f"{prefix}/readyz")
    assert ready.status_code == 200
    assert ready.get_json() == {
        "status": "ready",
        "checks": {"database": {"ok": True}, "jobs": {"ok": True, "mode": "inline"}},
    }
    assert ready.headers["Cache-Control"] == "no-store"
    assert ready.headers["X-Request-Id"]


def test_readiness_fails_with_the_database_and_liveness_does_not(
    client: FlaskClient, broken_live_database: None
) -> None:
    assert client.get("/healthz").status_code == 200  # a database outage must not restart the process

    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] is False
    assert "OperationalError" in body["checks"]["database"]["error"]
    assert body["checks"]["jobs"] == {"ok": True, "mode": "inline"}
    assert PASSWORD not in response.get_data(as_text=True)

    # Each environment checks its own store: the sandbox's is fine.
    assert client.get("/sandbox/readyz").status_code == 200


def test_a_database_server_that_refuses_connections_answers_503(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real PostgreSQL driver against a closed port (nothing listens on port 1)."""
    dead = create_engine(f"postgresql+psycopg://agentdesk:{PASSWORD}@127.0.0.1:1/agentdesk")
    check_for = health._database_check
    monkeypatch.setattr(health, "_database_check", lambda engine: check_for(dead))

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.get_json()["checks"]["database"]["ok"] is False
    assert PASSWORD not in response.get_data(as_text=True)


def test_redis_is_checked_when_configured_and_its_password_never_shown(
    client: FlaskClient, app: Flask
) -> None:
    environment_app(app, LIVE).config["REDIS_URL"] = f"redis://:{PASSWORD}@127.0.0.1:1/0"

    response = client.get("/readyz")

    assert response.status_code == 503
    checks = response.get_json()["checks"]
    assert checks["redis"]["ok"] is False
    assert "ConnectionError" in checks["redis"]["error"]
    assert checks["database"] == {"ok": True}
    assert PASSWORD not in response.get_data(as_text=True)
    # Not configured in the sandbox app: no Redis check there.
    assert "redis" not in client.get("/sandbox/readyz").get_json()["checks"]


@pytest.mark.redis
def test_a_reachable_redis_passes(client: FlaskClient, app: Flask) -> None:
    environment_app(app, SANDBOX).config["REDIS_URL"] = reachable_redis_url()

    response = client.get("/sandbox/readyz")

    assert response.status_code == 200
    assert response.get_json()["checks"]["redis"] == {"ok": True}


@pytest.fixture
def hanging_database(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """A database check that never returns until released (a blackholed host, an exhausted pool)."""
    release = threading.Event()

    def hang() -> dict[str, Any]:
        release.wait(30)
        return {"ok": True}

    monkeypatch.setattr(health, "_database_check", lambda engine: hang)
    yield release
    release.set()


def test_a_hanging_dependency_answers_503_instead_of_hanging(
    client: FlaskClient, hanging_database: threading.Event
) -> None:
    response = client.get("/readyz")

    assert response.status_code == 503
    database = response.get_json()["checks"]["database"]
    assert database["ok"] is False
    assert database["error"].startswith("no answer within")


def test_the_job_queue_storage_is_checked(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Outside inline mode the queue's own storage must answer: the embedded SQLite queue works, a queue
    whose storage fails makes the service not ready."""
    queue = SqliteHuey("readyz-test", filename=str(tmp_path / "jobs.db"))
    monkeypatch.setattr(health.jobs, "queue", lambda: queue)
    monkeypatch.setitem(client.application.config, "JOBS_MODE", "embedded")

    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.get_json()["checks"]["jobs"] == {"ok": True, "mode": "embedded", "pending": 0}

    def unreachable() -> int:
        raise ConnectionError(f"Error 111 connecting to redis://:{PASSWORD}@10.0.0.5:6379")

    monkeypatch.setattr(queue, "pending_count", unreachable)
    down = client.get("/readyz")
    assert down.status_code == 503
    assert down.get_json()["checks"]["jobs"]["ok"] is False
    assert PASSWORD not in down.get_data(as_text=True)


def test_health_endpoints_are_not_api_operations(client: FlaskClient) -> None:
    paths = client.get("/openapi.json").get_json()["paths"]
    assert not [path for path in paths if path.endswith(("/healthz", "/readyz"))]
