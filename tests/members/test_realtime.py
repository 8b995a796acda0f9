"""Presence over Socket.IO: members connect with a JWT; a dropped connection sets them offline only after
the grace period, and a reconnect restores the status they chose. Also: two server processes sharing
Redis deliver ``presence.updated`` to a client of the other process."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import socketio as socketio_client
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from core.realtime import socketio
from tests.conftest import Org
from tests.members.conftest import mem
from tests.support.servers import flask_servers, reachable_redis_url, wait_until

GRACE = 0.25
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "PRESENCE_GRACE_SECONDS": GRACE}


def _token(runner: FlaskCliRunner, org: Org, subject: str, env: str = "live") -> str:
    result = runner.invoke(args=["tokens", "issue", "--org", org.id, "--subject", subject, "--env", env])
    assert result.exit_code == 0, result.output
    return result.output.strip()


def _row(client: FlaskClient, org: Org, member_id: str) -> dict[str, Any]:
    rows = client.get(mem(org, "/members/availabilities"), headers=org.headers()).get_json()["data"]
    return next(r for r in rows if r["member_id"] == member_id)


def _presence(listener: Any) -> list[dict[str, Any]]:
    return [p["args"][0]["data"] for p in listener.get_received() if p["name"] == "presence.updated"]


def test_member_connects_with_a_jwt_and_joins_the_room(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")
    agent = socketio.test_client(app, auth={"token": _token(runner, org, member["id"])})
    assert agent.is_connected()
    assert _row(client, org, member["id"])["connected"] is True
    agent.get_received()
    client.patch(
        mem(org, f"/members/{member['id']}/status"), json={"status": "online"}, headers=org.headers()
    )
    [event] = _presence(agent)  # the member's own connection hears the organization's events
    assert event["member_id"] == member["id"] and event["status"] == "online"
    agent.disconnect()


def test_refused_tokens(app: Flask, runner: FlaskCliRunner, org: Org, other_org: Org, make_member) -> None:
    member = make_member(org)
    for auth in (
        {"token": "not-a-jwt"},
        {"token": _token(runner, org, "mem_nobody")},
        {"token": _token(runner, other_org, member["id"])},  # the member is not in that organization
        {"token": _token(runner, org, member["id"], env="sandbox")},  # the sandbox store has no such member
        {},
    ):
        connection = socketio.test_client(app, auth=auth)
        assert not connection.is_connected(), auth


def test_a_login_users_token_connects_its_member(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    created = runner.invoke(
        args=[
            "users",
            "create",
            "--org",
            org.id,
            "--email",
            "u@x.test",
            "--password",
            "long-pass",
            "--name",
            "U",
            "--json",
        ]
    )
    data = json.loads(created.stdout)
    connection = socketio.test_client(app, auth={"token": _token(runner, org, data["user_id"])})
    assert connection.is_connected()
    assert _row(client, org, data["member_id"])["connected"] is True
    connection.disconnect()


def test_drop_goes_offline_after_the_grace_period_and_reconnect_restores(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")
    token = _token(runner, org, member["id"])
    listener = socketio.test_client(app, auth={"api_key": org.live_key})
    agent = socketio.test_client(app, auth={"token": token})
    client.patch(mem(org, f"/members/{member['id']}/status"), json={"status": "busy"}, headers=org.headers())
    listener.get_received()
    started = time.monotonic()
    agent.disconnect()
    assert _row(client, org, member["id"])["status"] == "busy"  # not at once: no flapping
    assert wait_until(lambda: _row(client, org, member["id"])["status"] == "offline")
    assert time.monotonic() - started >= GRACE
    [offline] = _presence(listener)
    assert (
        offline["status"] == "offline"
        and offline["source"] == "grace_period"
        and offline["changed_by"] == "system"
    )
    row = _row(client, org, member["id"])
    assert row["chosen_status"] == "busy" and row["connected"] is False
    again = socketio.test_client(app, auth={"token": token})
    [restored] = _presence(listener)
    assert restored["status"] == "busy" and restored["source"] == "reconnect"
    assert _row(client, org, member["id"])["status"] == "busy"
    history = client.get(
        mem(org, f"/members/status-history/organization?member_id={member['id']}"), headers=org.headers()
    ).get_json()["data"]
    assert [(e["to_status"], e["source"]) for e in history[:3]] == [
        ("busy", "reconnect"),
        ("offline", "grace_period"),
        ("busy", "api"),
    ]
    again.disconnect()
    listener.disconnect()


def test_reconnect_within_the_grace_period_changes_nothing(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")
    token = _token(runner, org, member["id"])
    client.patch(
        mem(org, f"/members/{member['id']}/status"), json={"status": "online"}, headers=org.headers()
    )
    listener = socketio.test_client(app, auth={"api_key": org.live_key})
    first = socketio.test_client(app, auth={"token": token})
    first.disconnect()
    second = socketio.test_client(app, auth={"token": token})  # e.g. a page reload
    time.sleep(GRACE * 3)
    assert _row(client, org, member["id"])["status"] == "online"
    assert _presence(listener) == []
    # two tabs: closing one keeps the member online
    third = socketio.test_client(app, auth={"token": token})
    second.disconnect()
    time.sleep(GRACE * 3)
    assert _row(client, org, member["id"])["status"] == "online"
    third.disconnect()
    assert wait_until(lambda: _row(client, org, member["id"])["status"] == "offline")
    listener.disconnect()


def test_a_member_offline_by_choice_stays_offline(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")  # people start offline
    token = _token(runner, org, member["id"])
    connection = socketio.test_client(app, auth={"token": token})
    connection.disconnect()
    time.sleep(GRACE * 3)
    again = socketio.test_client(app, auth={"token": token})
    assert _row(client, org, member["id"])["status"] == "offline"
    history = client.get(
        mem(org, f"/members/status-history/organization?member_id={member['id']}"), headers=org.headers()
    ).get_json()
    assert history["total"] == 1  # only the creation: connecting and dropping changed nothing
    again.disconnect()


# ----------------------------------------------------------------------------------- two processes


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Two `flask serve` processes on one pair of SQLite stores and one Redis; killed afterwards."""
    with flask_servers(tmp_path, reachable_redis_url()) as servers:
        yield servers.urls[0], servers.urls[1], servers.organization


@pytest.mark.redis
def test_event_from_one_process_reaches_a_client_of_the_other(two_servers) -> None:
    server_a, server_b, created = two_servers
    org_id, key = created["organization_id"], created["api_keys"]["live"]
    headers = {"X-API-Key": key}
    member = requests.post(
        f"{server_a}/v2/messages/organizations/{org_id}/members",
        json={"name": "Ana", "ai": False, "organization_id": org_id},
        headers=headers,
        timeout=5,
    ).json()
    received: list[dict[str, Any]] = []
    client = socketio_client.Client(reconnection=False)
    client.on("presence.updated", lambda message: received.append(message))
    client.connect(server_b, auth={"api_key": key}, transports=["websocket"], wait_timeout=10)
    try:
        response = requests.patch(
            f"{server_a}/v1/members/organizations/{org_id}/members/{member['id']}/status",
            json={"status": "away"},
            headers=headers,
            timeout=5,
        )
        assert response.status_code == 200, response.text
        assert wait_until(lambda: bool(received), timeout=10), "process B's client heard nothing"
        [message] = received
        assert message["organization_id"] == org_id
        assert message["data"]["member_id"] == member["id"] and message["data"]["status"] == "away"
    finally:
        client.disconnect()
