"""An agent configuration's notification webhooks are checked when saved, by the check every delivery
repeats (``core.outbound.check_url``): a URL its deliveries would refuse is a 400 naming the field, and
nothing of the configuration is stored. The notifications area's loopback switch opens loopback URLs here
as it does at delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from core.environments import environment_app
from tests.conftest import Org
from tests.core.refused_urls import ACCEPTED, REFUSED
from tests.members.conftest import error, mem

FIELD = "notifications.end_of_call.webhook"


def cfg(org: Org, agent_id: str) -> str:
    return mem(org, f"/members/{agent_id}/agent-config")


def body(webhook: str) -> dict[str, Any]:
    return {
        "sections": {"identity": "You are Sofía."},
        "notifications": {"end_of_call": {"webhook": webhook}},
    }


def assert_refused(response: Any) -> None:
    assert response.status_code == 400, response.get_json()
    message = response.get_json()["message"]
    assert message.startswith(f"{FIELD}: webhook must be an https URL"), message


@pytest.mark.parametrize(("url", "words"), REFUSED)
def test_refused_webhook_is_a_400_naming_the_field_and_stores_nothing(
    client: FlaskClient, org: Org, make_member: Callable[..., dict[str, Any]], url: str, words: str
) -> None:
    agent = make_member(org, name="Sofía", ai=True)
    created = client.post(cfg(org, agent["id"]), json=body(url), headers=org.headers())
    assert_refused(created)
    assert words in created.get_json()["message"]
    assert client.get(cfg(org, agent["id"]), headers=org.headers()).get_json() == error(
        404, "No Agent configuration found"
    )

    # an existing configuration keeps its webhook and its version
    assert client.post(cfg(org, agent["id"]), json=body(ACCEPTED), headers=org.headers()).status_code == 201
    for method in (client.patch, client.post):
        assert_refused(method(cfg(org, agent["id"]), json=body(url), headers=org.headers()))
    stored = client.get(cfg(org, agent["id"]), headers=org.headers()).get_json()
    assert stored["notifications"] == {"end_of_call": {"webhook": ACCEPTED}} and stored["version"] == 1


def test_public_https_webhook_is_stored(
    client: FlaskClient, org: Org, make_member: Callable[..., dict[str, Any]]
) -> None:
    agent = make_member(org, ai=True)
    created = client.post(cfg(org, agent["id"]), json=body(ACCEPTED), headers=org.headers())
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["notifications"] == {"end_of_call": {"webhook": ACCEPTED}}


def test_loopback_receivers_need_the_notifications_test_switch(
    app: Flask, client: FlaskClient, org: Org, make_member: Callable[..., dict[str, Any]]
) -> None:
    agent = make_member(org, ai=True)
    loopback = ("http://127.0.0.1:8765/hooks", "https://127.1/hooks", "http://localhost:8765/hooks")
    for url in loopback:
        assert_refused(client.post(cfg(org, agent["id"]), json=body(url), headers=org.headers()))
    environment_app(app, "live").config["NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"] = True  # tests' receivers
    for url in loopback:
        saved = client.post(cfg(org, agent["id"]), json=body(url), headers=org.headers())
        assert saved.status_code in (200, 201), saved.get_json()
        assert saved.get_json()["notifications"]["end_of_call"]["webhook"] == url
    # the switch is about loopback: private networks and plain http elsewhere stay refused
    for url in ("https://10.0.0.8/hooks", "http://hooks.example.com/x"):
        assert_refused(client.post(cfg(org, agent["id"]), json=body(url), headers=org.headers()))
