"""On PostgreSQL an API GET runs in autocommit (one round trip for a one-query read instead of BEGIN,
the query and ROLLBACK), while every write keeps its transaction (docs/benchmarks.md, single GET); so does
a CRM page's GET (docs/benchmarks.md, the deal pages)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import event
from sqlalchemy.engine import Engine

from core.environments import ENVIRONMENTS, environment_app
from tests.conftest import Org
from tests.support.desk_users import create_desk_user, sign_in
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


def test_a_crm_pages_get_reads_in_autocommit_and_its_posts_keep_their_transaction(
    postgresql: None, app: Flask, runner: FlaskCliRunner, org: Org
) -> None:
    """The CRM's pages only read on a GET: the deal drawer's statements (the desk identity's first) run in
    autocommit, sparing BEGIN and ROLLBACK; an edit from the drawer is one transaction."""
    email = f"ana.{org.id[:6]}@example.test"
    member_id = create_desk_user(runner, org.id, email, name="Ana Agent")["member_id"]
    desk = app.test_client()
    sign_in(desk, email)
    api = app.test_client()
    pipeline = api.get(_crm(org, "/pipelines"), headers=org.headers()).get_json()["data"][0]
    deal = api.post(
        _crm(org, "/deals"),
        json={"name": "Plan", "pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"],
              "owner_id": member_id},
        headers=org.headers(),
    ).get_json()  # fmt: skip
    with autocommit_of_statements() as read:
        shown = desk.get(f"/deals/{deal['id']}", headers={"HX-Request": "true"})
    assert shown.status_code == 200 and read and all(read)
    token = re.search(r'name="csrf-token" content="([^"]+)"', desk.get("/desk").get_data(as_text=True))
    assert token is not None
    with autocommit_of_statements() as edited:
        changed = desk.post(
            f"/deals/{deal['id']}/edit/name",
            data={"value": "Plan anual"},
            headers={"HX-Request": "true", "X-CSRFToken": token.group(1)},
        )
    assert changed.status_code == 200 and edited and not any(edited)
    assert (
        api.get(_crm(org, f"/deals/{deal['id']}"), headers=org.headers()).get_json()["name"] == "Plan anual"
    )
