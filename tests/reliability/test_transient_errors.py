"""Which database failures answer a retryable 503 (``Retry-After: 1``, the area's error format) and which
stay a 500: transient conditions (SQLite's write lock held past ``busy_timeout``, PostgreSQL refusing or
failing connections, no pooled connection free) are the client's to retry; programming errors are not.
Runs in both lanes: the failure is raised by the driver's own exception class at the first statement."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tests.conftest import Org

TRANSIENT = {
    "sqlite write lock": OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked")),
    "postgres refusing connections": OperationalError(
        None, None, psycopg.OperationalError('FATAL:  database "x" is not currently accepting connections')
    ),
    "postgres serialization failure": OperationalError(
        "UPDATE", {}, psycopg.errors.SerializationFailure("could not serialize access")
    ),
    "no pooled connection free": PoolTimeout("QueuePool limit of size 5 overflow 10 reached"),
}
PERMANENT = {
    "sqlite missing table": OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x")),
}


@pytest.fixture
def failing() -> Iterator[list[BaseException]]:
    """The first statement of the next request raises the exception put in the list."""
    armed: list[BaseException] = []

    def fail(*args: Any) -> None:
        if armed:
            raise armed.pop()

    event.listen(Engine, "before_cursor_execute", fail)
    yield armed
    event.remove(Engine, "before_cursor_execute", fail)


@pytest.mark.parametrize("name", sorted(TRANSIENT))
def test_transient_database_failures_answer_a_retryable_503_in_each_area(
    client: FlaskClient, org: Org, failing: list[BaseException], name: str
) -> None:
    paths = {
        "crm": f"/v1/crm/organizations/{org.id}/tickets",
        "messaging": f"/v2/messages/organizations/{org.id}/conversations",
        "telecom": "/v1/partner/balance",
    }
    for area, path in paths.items():
        failing.append(TRANSIENT[name])
        response = client.get(path, headers=org.headers())
        assert response.status_code == 503, (area, response.get_json())
        assert response.headers["Retry-After"] == "1"
        body = response.get_json()
        if area == "crm":
            assert body["error"]["statusCode"] == 503
            assert body["error"]["message"] == "The database is unavailable; retry the request"
        elif area == "telecom":
            assert body["error"]["code"] == "database_unavailable" and body["error"]["type"] == "api_error"
        else:
            assert body == {"statusCode": 503, "message": "The database is unavailable; retry the request"}
        assert client.get(path, headers=org.headers()).status_code == 200  # the next attempt succeeds


@pytest.mark.parametrize("name", sorted(PERMANENT))
def test_programming_errors_stay_500(
    client: FlaskClient, org: Org, failing: list[BaseException], name: str
) -> None:
    failing.append(PERMANENT[name])
    response = client.get(f"/v1/crm/organizations/{org.id}/tickets", headers=org.headers())
    assert response.status_code == 500 and "Retry-After" not in response.headers
