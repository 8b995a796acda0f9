"""Presence: status changes with reasons, the history they leave, availabilities and the realtime event."""

from __future__ import annotations

import uuid

from flask import Flask
from flask.testing import FlaskClient

from blueprints.members.services import hooks
from core.realtime import socketio
from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem


def _status(client: FlaskClient, org: Org, member_id: str, **body: object):
    return client.patch(mem(org, f"/members/{member_id}/status"), json=body, headers=org.headers())


def _reason(client: FlaskClient, org: Org, name: str = "Lunch", **extra: object) -> dict:
    response = client.post(
        mem(org, "/members/unavailable-reasons"), json={"name": name, **extra}, headers=org.headers()
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _history(client: FlaskClient, org: Org, query: str = "") -> dict:
    response = client.get(mem(org, f"/members/status-history/organization{query}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_status_change_with_reason_is_recorded_and_visible(
    client: FlaskClient, org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")
    lunch = _reason(client, org, "Lunch", description="Back in an hour")
    online = _status(client, org, member["id"], status="online")
    assert online.status_code == 200
    assert online.get_json()["status"] == "online" and online.get_json()["reason"] is None
    away = _status(client, org, member["id"], status="away", reason_id=lunch["id"])
    body = away.get_json()
    assert body["status"] == "away" and body["chosen_status"] == "away"
    assert body["reason"] == {"id": lunch["id"], "name": "Lunch"}
    assert body["since"].endswith("Z") and body["connected"] is False and body["active_conversations"] == 0
    history = _history(client, org, f"?member_id={member['id']}")
    assert history["total"] == 3 and history["skip"] == 0 and history["take"] == 20
    newest, middle, created = history["data"]
    assert (created["from_status"], created["to_status"], created["source"]) == (None, "offline", "created")
    assert (middle["from_status"], middle["to_status"]) == ("offline", "online")
    assert (newest["from_status"], newest["to_status"]) == ("online", "away")
    assert newest["reason"] == {"id": lunch["id"], "name": "Lunch"}
    assert newest["changed_by"] == f"api_key:{org.live_key[:16]}" and newest["source"] == "api"
    assert newest["member_name"] == "Ana"


def test_same_status_twice_records_nothing(client: FlaskClient, org: Org, make_member) -> None:
    member = make_member(org)
    _status(client, org, member["id"], status="busy")
    _status(client, org, member["id"], status="busy")
    assert _history(client, org)["total"] == 2  # created + busy


def test_status_validation(client: FlaskClient, org: Org, other_org: Org, make_member) -> None:
    member = make_member(org)
    lunch = _reason(client, org)
    theirs = _reason(client, other_org, "Theirs")
    inactive = _reason(client, org, "Old", active=False)
    cases = [
        ({}, "status: Field required"),
        ({"status": "sleeping"}, "status: "),
        (
            {"status": "online", "reason_id": lunch["id"]},
            "reason_id: a reason is only given when the status is not online",
        ),
        ({"status": "away", "reason_id": "nope"}, "reason_id: "),
        ({"status": "away", "reason_id": str(uuid.uuid4())}, "reason_id: no active unavailability reason"),
        ({"status": "away", "reason_id": theirs["id"]}, "reason_id: no active unavailability reason"),
        ({"status": "away", "reason_id": inactive["id"]}, "reason_id: no active unavailability reason"),
    ]
    for body, message in cases:
        response = _status(client, org, member["id"], **body)
        assert response.status_code == 400, body
        assert response.get_json()["message"].startswith(message), response.get_json()
        assert response.get_json()["statusCode"] == 400


def test_unknown_or_foreign_member_is_404_and_foreign_path_403(
    client: FlaskClient, org: Org, other_org: Org, make_member
) -> None:
    theirs = make_member(other_org)
    assert _status(client, org, "mem_nobody", status="online").get_json() == error(404, "No Member found")
    assert _status(client, org, theirs["id"], status="online").status_code == 404
    foreign = client.patch(
        mem(other_org, f"/members/{theirs['id']}/status"), json={"status": "online"}, headers=org.headers()
    )
    assert foreign.get_json() == NO_ACCESS
    assert (
        client.get(mem(other_org, "/members/availabilities"), headers=org.headers()).get_json() == NO_ACCESS
    )
    assert (
        client.get(mem(other_org, "/members/status-history/organization"), headers=org.headers()).get_json()
        == NO_ACCESS
    )


def test_availabilities_list_every_member_with_load_in_one_counter_call(
    client: FlaskClient, org: Org, other_org: Org, make_member, queries
) -> None:
    ana = make_member(org, name="Ana")
    bot = make_member(org, name="Bot", ai=True)
    make_member(other_org, name="Not mine")
    calls: list[list[str]] = []

    def counter(*, organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, int]:
        calls.append(sorted(member_ids))
        return {ana["id"]: 2}

    hooks.active_conversation_counts.connect(counter)
    _status(client, org, ana["id"], status="busy")
    calls.clear()
    response = client.get(mem(org, "/members/availabilities"), headers=org.headers())
    assert response.status_code == 200
    body = response.get_json()
    assert body["total"] == 2
    rows = {row["member_id"]: row for row in body["data"]}
    assert rows[ana["id"]]["status"] == "busy" and rows[ana["id"]]["active_conversations"] == 2
    assert rows[bot["id"]]["status"] == "online" and rows[bot["id"]]["ai"] is True  # AI agents start online
    assert rows[bot["id"]]["active_conversations"] == 0
    assert calls == [sorted([ana["id"], bot["id"]])]
    filtered = client.get(mem(org, "/members/availabilities?status=busy"), headers=org.headers()).get_json()
    assert [r["member_id"] for r in filtered["data"]] == [ana["id"]]
    humans = client.get(mem(org, "/members/availabilities?ai=false"), headers=org.headers()).get_json()
    assert [r["member_id"] for r in humans["data"]] == [ana["id"]]
    bad = client.get(mem(org, "/members/availabilities?status=sleeping"), headers=org.headers())
    assert bad.status_code == 400 and bad.get_json()["message"].startswith("status: ")
    with queries() as few:
        client.get(mem(org, "/members/availabilities"), headers=org.headers())
    for i in range(6):
        make_member(org, name=f"More {i}")
    with queries() as many:
        client.get(mem(org, "/members/availabilities"), headers=org.headers())
    assert many.count == few.count


def test_history_filters_and_pagination(client: FlaskClient, org: Org, make_member) -> None:
    ana = make_member(org, name="Ana")
    ben = make_member(org, name="Ben")
    for status in ("online", "busy", "online"):
        _status(client, org, ana["id"], status=status)
    _status(client, org, ben["id"], status="away")
    assert _history(client, org)["total"] == 6
    assert _history(client, org, f"?member_id={ben['id']}")["total"] == 2
    onlines = _history(client, org, "?status=online")
    assert onlines["total"] == 2 and {e["to_status"] for e in onlines["data"]} == {"online"}
    page = _history(client, org, "?skip=1&take=2")
    assert len(page["data"]) == 2 and page["total"] == 6 and page["skip"] == 1 and page["take"] == 2
    everything = _history(client, org)["data"]
    assert [e["id"] for e in page["data"]] == [e["id"] for e in everything[1:3]]
    today = everything[0]["at"][:10]
    assert _history(client, org, f"?from={today}&to={today}")["total"] == 6
    assert _history(client, org, "?from=2001-01-01&to=2001-01-02")["total"] == 0
    for query, field in (
        ("?from=2026-13-01", "from"),
        ("?timezone=Mars/Base", "timezone"),
        ("?status=nope", "status"),
        ("?take=500", "take"),
    ):
        response = client.get(mem(org, f"/members/status-history/organization{query}"), headers=org.headers())
        assert response.status_code == 400, query
        assert response.get_json()["message"].startswith(f"{field}: "), response.get_json()
    reversed_range = client.get(
        mem(org, "/members/status-history/organization?from=2026-02-02&to=2026-02-01"), headers=org.headers()
    )
    assert reversed_range.get_json() == error(400, "from: must not be after to")


def test_history_outlives_the_member(client: FlaskClient, org: Org, make_member) -> None:
    ana = make_member(org, name="Ana")
    _status(client, org, ana["id"], status="online")
    client.delete(f"/v2/messages/organizations/{org.id}/members/{ana['id']}", headers=org.headers())
    history = _history(client, org, f"?member_id={ana['id']}")
    assert history["total"] == 2 and history["data"][0]["member_name"] == "Ana"


def test_status_change_reaches_the_organization_room(
    app: Flask, client: FlaskClient, org: Org, other_org: Org, make_member
) -> None:
    member = make_member(org, name="Ana")
    lunch = _reason(client, org)
    mine = socketio.test_client(app, auth={"api_key": org.live_key})
    theirs = socketio.test_client(app, auth={"api_key": other_org.live_key})
    assert mine.is_connected() and theirs.is_connected()
    mine.get_received()
    _status(client, org, member["id"], status="away", reason_id=lunch["id"])
    [event] = [p["args"][0] for p in mine.get_received() if p["name"] == "presence.updated"]
    assert event["type"] == "presence.updated" and event["organization_id"] == org.id
    data = event["data"]
    assert (
        data["member_id"] == member["id"]
        and data["status"] == "away"
        and data["previous_status"] == "offline"
    )
    assert data["reason"] == {"id": lunch["id"], "name": "Lunch"} and data["source"] == "api"
    assert [p for p in theirs.get_received() if p["name"] == "presence.updated"] == []
    # a refused change publishes nothing
    _status(client, org, member["id"], status="nope")
    assert [p for p in mine.get_received() if p["name"] == "presence.updated"] == []
    mine.disconnect()
    theirs.disconnect()
