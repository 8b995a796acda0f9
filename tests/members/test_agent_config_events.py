"""``agent_config.updated`` names who saved the version (``changed_by`` and ``changed_by_name``), for a studio
open elsewhere to say "Laura saved version 7 …": a desk user by their name, a member by its name, an API
key by nothing but its actor (the page words it), someone of another organization never."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.members.services.agents import actor_name
from core import events
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.members.conftest import mem
from tests.support.desk_users import create_desk_user


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Events as delivered after their commit."""
    seen: list[tuple[str, dict[str, Any]]] = []
    handler = lambda event: seen.append((event.name, event.data))  # noqa: E731
    monkeypatch.setitem(events._subscribers, "*", [*events._subscribers.get("*", []), handler])
    return seen


def test_the_event_names_who_saved(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    other_org: Org,
    make_member,
    published: list[tuple[str, dict[str, Any]]],
) -> None:
    agent = make_member(org, name="Sofía", ai=True)
    client.post(
        mem(org, f"/members/{agent['id']}/agent-config"), json={"sections": {}}, headers=org.headers()
    )
    data = [d for name, d in published if name == "agent_config.updated"][-1]
    assert data["version"] == 1 and data["action"] == "create"
    assert data["changed_by"].startswith("api_key:sk_live_") and data["changed_by_name"] is None

    laura = create_desk_user(
        runner, org.id, "laura.events@example.test", name="Laura Supervisora", role="supervisor"
    )
    outsider = create_desk_user(
        runner, other_org.id, "otra.events@example.test", name="Otra", role="supervisor"
    )
    with in_environment(app, LIVE):
        organization = uuid.UUID(org.id)
        assert actor_name(organization, f"user:{laura['user_id']}") == "Laura Supervisora"
        assert actor_name(organization, f"member:{agent['id']}") == "Sofía"
        assert actor_name(organization, f"user:{outsider['user_id']}") is None  # another organization's
        assert actor_name(organization, "user:not-a-uuid") is None
        assert actor_name(organization, "api_key:sk_live_ab12") is None
        assert actor_name(organization, None) is None
