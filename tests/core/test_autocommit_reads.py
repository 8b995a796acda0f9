"""On PostgreSQL an API GET runs in autocommit (one round trip for a one-query read instead of BEGIN,
the query and ROLLBACK), while every write keeps its transaction (docs/benchmarks.md, single GET)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from core.environments import ENVIRONMENTS, environment_app
from tests.conftest import Org
from tests.support.stores import Stores


@contextmanager
def autocommit_of_statements() -> Iterator[list[bool]]:
    """Whether the driver connection was in autocommit for each statement sent inside the block."""
    seen: list[bool] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append(bool(conn.connection.driver_connection.autocommit))

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


@pytest.fixture
def postgresql(stores: Stores) -> None:
    if stores.backend != "postgresql":
        pytest.skip("autocommit reads apply to PostgreSQL (the PostgreSQL lane runs this)")


def _crm(org: Org, suffix: str) -> str:
    return f"/v1/crm/organizations/{org.id}{suffix}"


def test_a_get_reads_in_autocommit_and_writes_keep_their_transaction(
    postgresql: None, client: FlaskClient, org: Org
) -> None:
    with autocommit_of_statements() as created:
        response = client.post(
            _crm(org, "/tickets"), json={"title": "Printer", "source": "api"}, headers=org.headers()
        )
    assert response.status_code == 201
    assert created and not any(created)  # the create is one transaction
    ticket = response.get_json()["id"]
    with autocommit_of_statements() as read:
        shown = client.get(_crm(org, f"/tickets/{ticket}"), headers=org.headers())
    assert shown.status_code == 200 and shown.get_json()["title"] == "Printer"
    assert read and all(read)
    with autocommit_of_statements() as updated:
        changed = client.patch(_crm(org, f"/tickets/{ticket}"), json={"title": "Fax"}, headers=org.headers())
    assert changed.status_code == 200
    assert updated and not any(updated)  # the pool gave the connection back in its own isolation
    assert client.get(_crm(org, f"/tickets/{ticket}"), headers=org.headers()).get_json()["title"] == "Fax"


def test_the_setting_turns_it_off(postgresql: None, app: Flask, client: FlaskClient, org: Org) -> None:
    app_config = app.config.get("DATABASE_AUTOCOMMIT_READS")
    for environment in ENVIRONMENTS:
        environment_app(app, environment).config["DATABASE_AUTOCOMMIT_READS"] = False
    try:
        with autocommit_of_statements() as read:
            assert client.get(_crm(org, "/tickets"), headers=org.headers()).status_code == 200
        assert read and not any(read)
    finally:
        for environment in ENVIRONMENTS:
            environment_app(app, environment).config["DATABASE_AUTOCOMMIT_READS"] = app_config
