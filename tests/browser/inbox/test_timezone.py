"""The desk shows times in the organization's time zone (set with ``orgs create --timezone`` or
``orgs timezone``); the API keeps speaking UTC."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.organizations.services import get_organization
from core.environments import SANDBOX, in_environment
from tests.browser.conftest import DeskLogin
from tests.browser.inbox.data import conversation_of, incoming, signed_in_client
from tests.conftest import Org
from tests.fakes.fixtures import Deliver, msg

HX = {"HX-Request": "true"}


def test_message_times_are_shown_in_the_organizations_zone(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    make_user: Callable[..., DeskLogin],
) -> None:
    # 23:30 UTC on 10 January is 08:30 the next morning in Tokyo (no summer time there)
    sent = datetime(2026, 1, 10, 23, 30, tzinfo=UTC)
    incoming(deliver, "5215577770001", "Buenas", name="Rafa", timestamp=str(int(sent.timestamp())))
    conversation = conversation_of(client, org, "5215577770001")
    message = client.get(msg(org, f"/messages?conversation_id={conversation['id']}"), headers=org.headers())
    message_id = message.get_json()["data"][0]["id"]
    login = make_user(org, "Ana Agent")
    browser = signed_in_client(app.test_client(), login.email, login.password)
    url = f"/inbox/c/{conversation['id']}/messages/{message_id}"

    def shown() -> str:
        html = browser.get(url, headers=HX).get_data(as_text=True)
        found = re.search(r'<time datetime="[^"]+" title="([^"]+)"', html)
        assert found, html
        return found.group(1)

    assert "Jan 10, 2026" in shown() and "11:30" in shown()  # a new organization's zone is UTC

    result = runner.invoke(args=["orgs", "timezone", "--org", org.id, "Asia/Tokyo"])
    assert result.exit_code == 0, result.output
    browser = signed_in_client(app.test_client(), login.email, login.password)  # the zone is read at sign-in
    assert "Jan 11, 2026" in shown() and "8:30" in shown()

    # the API still speaks UTC
    again = client.get(msg(org, f"/messages?conversation_id={conversation['id']}"), headers=org.headers())
    assert again.get_json()["data"][0]["timestamp"].startswith("2026-01-10T23:30")


def test_an_unknown_zone_is_refused_by_name(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    result = runner.invoke(args=["orgs", "timezone", "--org", org.id, "Mars/Olympus"])
    assert result.exit_code != 0 and "Mars/Olympus" in result.output
    created = runner.invoke(args=["orgs", "create", "--name", "Zeta", "--timezone", "Nowhere/City"])
    assert created.exit_code != 0 and "timezone" in created.output
    made = runner.invoke(
        args=["orgs", "create", "--name", "Zeta", "--timezone", "America/Mexico_City", "--json"]
    )
    assert made.exit_code == 0, made.output
    organization_id = uuid.UUID(json.loads(made.stdout)["organization_id"])
    with in_environment(app, SANDBOX):  # both stores know the zone
        assert get_organization(organization_id).timezone == "America/Mexico_City"
