"""Fixtures every test can use: the app with both environments, clients, organizations, query counting."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from app import create_app
from core import jobs, realtime
from core.db import db
from core.environments import ENVIRONMENTS, SANDBOX, environment_app
from tests.support.queries import QueryCounter, count_commits, count_queries
from tests.support.stores import Stores, make_stores

TEST_SECRET = "test-secret-key-not-for-production-0123456789"


@pytest.fixture(scope="session")
def shared_instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("instance")


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory, shared_instance: Path) -> Stores:
    stores = make_stores(tmp_path_factory.mktemp("stores"))
    app = create_app(_config(stores, shared_instance))
    app.test_cli_runner().invoke(args=["setup"], catch_exceptions=False)
    return stores


def _config(stores: Stores, instance: Path) -> dict[str, Any]:
    return {
        "TESTING": True,
        "INSTANCE_PATH": str(instance),
        "DATABASE_URL": stores.live_url,
        "SANDBOX_DATABASE_URL": stores.sandbox_url,
        "SECRET_KEY": TEST_SECRET,
        "JOBS_MODE": "inline",
        "REDIS_URL": None,
        "API_KEY_TOUCH_SECONDS": 0,
        # Keys stay cached for the whole test (in-process revocations still drop them at once through
        # core.keycache.invalidate): a statement count must not depend on a 1 s TTL expiring mid-test.
        "API_KEY_CACHE_LOCAL_SECONDS": 3600,
        # Rate limits stay on (their headers and counting run in every test) but out of reach: apps are
        # reused across tests, so counts add up over the run (tests/core/test_rate_limits.py sets its own).
        "RATE_LIMIT_API": "1000000/second",
        "RATE_LIMIT_API_SANDBOX": "1000000/second",
        "RATE_LIMIT_UNAUTHENTICATED": "1000000/second",
        "RATE_LIMIT_WEBHOOKS": "1000000/second",
    }


@pytest.fixture
def app_config(stores: Stores, shared_instance: Path) -> dict[str, Any]:
    """Override in a module to change settings before the app is built. Tests whose app writes files
    under the instance folder (an embedded job queue) set their own ``INSTANCE_PATH``."""
    return _config(stores, shared_instance)


# Building the two apps compiles ~600 URL rules, the largest fixed cost of a test; apps are therefore
# reused between tests with the same settings. Each test still starts from empty stores, the app's own
# Socket.IO server and job queue re-activated, and configuration restored to what it was at build time.
_APPS: dict[str, tuple[Flask, dict[str, dict[str, Any]]]] = {}


@pytest.fixture
def app(app_config: dict[str, Any]) -> Iterator[Flask]:
    key = repr(sorted(app_config.items(), key=lambda item: item[0]))
    if key in _APPS:
        application, snapshots = _APPS[key]
        realtime.activate(application)
        jobs.init_app(application)
    else:
        application = create_app(app_config)
        snapshots = {env: dict(environment_app(application, env).config) for env in ENVIRONMENTS}
        _APPS[key] = (application, snapshots)
    server = realtime.socketio.server
    handlers = (server.async_handlers, server.eio.async_handlers) if server is not None else None
    yield application
    if server is not None and handlers is not None:
        _undo_socketio_test_clients(server, handlers)
    _empty_stores(application)
    for environment, snapshot in snapshots.items():
        config = environment_app(application, environment).config
        config.clear()
        config.update(snapshot)


def _undo_socketio_test_clients(server: Any, handlers: tuple[bool, bool]) -> None:
    """Flask-SocketIO's test client replaces the server's packet senders with its own (on the instance)
    and makes its handlers synchronous; a later test that serves real browsers from the same app would
    then never answer their sockets. Put the server back as it was."""
    for name in ("_send_packet", "_send_eio_packet"):
        server.__dict__.pop(name, None)
    server.async_handlers, server.eio.async_handlers = handlers


def _empty_stores(application: Flask) -> None:
    """Delete every row the test wrote. Plain DELETEs in foreign-key order: on tables this small they are
    far cheaper than TRUNCATE, whose fixed cost per table dominated the PostgreSQL lane."""
    for environment in ENVIRONMENTS:
        target = environment_app(application, environment)
        with target.app_context():
            db.session.remove()
            with db.engine.begin() as connection:
                for table in reversed(db.metadata.sorted_tables):
                    connection.execute(table.delete())
            db.engine.dispose()


@pytest.fixture
def sandbox_app(app: Flask) -> Flask:
    return environment_app(app, SANDBOX)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@dataclass(frozen=True)
class Org:
    id: str
    name: str
    products: list[str]
    live_key: str
    sandbox_key: str

    def headers(self, environment: str = "live") -> dict[str, str]:
        return {"X-API-Key": self.live_key if environment == "live" else self.sandbox_key}


@pytest.fixture
def make_org(runner: FlaskCliRunner) -> Callable[..., Org]:
    """Create an organization through the real CLI, as a person would."""

    def _make(name: str | None = None, products: str = "SIM,ESIM,TRAVEL_ESIM") -> Org:
        name = name or f"Org {uuid.uuid4().hex[:6]}"
        result = runner.invoke(args=["orgs", "create", "--name", name, "--products", products, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        return Org(data["organization_id"], data["name"], data["products"], *data["api_keys"].values())

    return _make


@pytest.fixture
def org(make_org: Callable[..., Org]) -> Org:
    return make_org("Acme")


@pytest.fixture
def other_org(make_org: Callable[..., Org]) -> Org:
    return make_org("Globex")


@pytest.fixture
def queries() -> Callable[[], Any]:
    """``with queries() as counted: ...; assert counted.count <= N``"""
    return count_queries


@pytest.fixture
def commits() -> Callable[[], Any]:
    """``with commits() as counted: client.post(...); assert counted.count == 1``"""
    return count_commits


__all__ = ["Org", "QueryCounter"]
