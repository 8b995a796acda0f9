"""Unavailability reasons: CRUD, unique names, deactivate-instead-of-delete when in use."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem

REASONS = "/members/unavailable-reasons"


def _create(client: FlaskClient, org: Org, **body: object):
    return client.post(mem(org, REASONS), json=body, headers=org.headers())


def test_create_list_update(client: FlaskClient, org: Org) -> None:
    created = _create(client, org, name="Lunch", description="Midday break")
    assert created.status_code == 201
    lunch = created.get_json()
    assert lunch["name"] == "Lunch" and lunch["description"] == "Midday break" and lunch["active"] is True
    uuid.UUID(lunch["id"])
    _create(client, org, name="Training")
    listed = client.get(mem(org, REASONS), headers=org.headers()).get_json()
    assert [r["name"] for r in listed["data"]] == ["Lunch", "Training"] and listed["total"] == 2
    patched = client.patch(
        mem(org, f"{REASONS}/{lunch['id']}"), json={"description": "Food"}, headers=org.headers()
    )
    assert patched.status_code == 200
    assert patched.get_json()["name"] == "Lunch" and patched.get_json()["description"] == "Food"
    off = client.patch(
        mem(org, f"{REASONS}/{lunch['id']}"), json={"active": False}, headers=org.headers()
    ).get_json()
    assert off["active"] is False
    active = client.get(mem(org, f"{REASONS}?active=true"), headers=org.headers()).get_json()
    assert [r["name"] for r in active["data"]] == ["Training"]
    inactive = client.get(mem(org, f"{REASONS}?active=false"), headers=org.headers()).get_json()
    assert [r["name"] for r in inactive["data"]] == ["Lunch"]


def test_names_are_required_and_unique_ignoring_case(client: FlaskClient, org: Org, other_org: Org) -> None:
    assert _create(client, org, description="x").get_json() == error(400, "name: Field required")
    assert _create(client, org, name="").status_code == 400
    assert _create(client, org, name="x" * 121).get_json()["message"].startswith("name: ")
    lunch = _create(client, org, name="Lunch").get_json()
    assert _create(client, org, name="lunch").get_json() == error(
        409, "name: a reason named 'lunch' already exists"
    )
    assert _create(client, other_org, name="Lunch").status_code == 201  # per organization
    training = _create(client, org, name="Training").get_json()
    clash = client.patch(
        mem(org, f"{REASONS}/{training['id']}"), json={"name": "LUNCH"}, headers=org.headers()
    )
    assert clash.status_code == 409
    same = client.patch(mem(org, f"{REASONS}/{lunch['id']}"), json={"name": "LUNCH"}, headers=org.headers())
    assert same.status_code == 200 and same.get_json()["name"] == "LUNCH"
    null = client.patch(mem(org, f"{REASONS}/{lunch['id']}"), json={"name": None}, headers=org.headers())
    assert null.get_json() == error(400, "name: must not be null")


def test_unused_reason_is_deleted(client: FlaskClient, org: Org) -> None:
    reason = _create(client, org, name="Gone").get_json()
    response = client.delete(mem(org, f"{REASONS}/{reason['id']}"), headers=org.headers())
    assert response.get_json() == {"id": reason["id"], "deleted": True, "active": False}
    assert client.get(mem(org, REASONS), headers=org.headers()).get_json()["total"] == 0


def test_reason_in_use_is_deactivated_and_history_keeps_its_name(
    client: FlaskClient, org: Org, make_member
) -> None:
    member = make_member(org)
    reason = _create(client, org, name="Lunch").get_json()
    client.patch(
        mem(org, f"/members/{member['id']}/status"),
        json={"status": "away", "reason_id": reason["id"]},
        headers=org.headers(),
    )
    client.patch(
        mem(org, f"/members/{member['id']}/status"), json={"status": "online"}, headers=org.headers()
    )
    client.patch(mem(org, f"{REASONS}/{reason['id']}"), json={"name": "Meal"}, headers=org.headers())
    response = client.delete(mem(org, f"{REASONS}/{reason['id']}"), headers=org.headers())
    assert response.get_json() == {"id": reason["id"], "deleted": False, "active": False}
    [kept] = client.get(mem(org, REASONS), headers=org.headers()).get_json()["data"]
    assert kept["active"] is False and kept["name"] == "Meal"
    history = client.get(mem(org, "/members/status-history/organization?status=away"), headers=org.headers())
    assert history.get_json()["data"][0]["reason"] == {"id": reason["id"], "name": "Lunch"}
    # a deactivated reason cannot be chosen any more
    refused = client.patch(
        mem(org, f"/members/{member['id']}/status"),
        json={"status": "busy", "reason_id": reason["id"]},
        headers=org.headers(),
    )
    assert refused.status_code == 400


def test_unknown_foreign_and_malformed_ids_are_404(client: FlaskClient, org: Org, other_org: Org) -> None:
    theirs = _create(client, other_org, name="Theirs").get_json()
    not_found = error(404, "No Unavailability reason found")
    for reason_id in (theirs["id"], str(uuid.uuid4()), "not-a-uuid"):
        assert (
            client.patch(
                mem(org, f"{REASONS}/{reason_id}"), json={"name": "x"}, headers=org.headers()
            ).get_json()
            == not_found
        )
        assert (
            client.delete(mem(org, f"{REASONS}/{reason_id}"), headers=org.headers()).get_json() == not_found
        )
    assert client.get(mem(other_org, REASONS), headers=org.headers()).get_json() == NO_ACCESS
    assert (
        client.post(mem(other_org, REASONS), json={"name": "x"}, headers=org.headers()).get_json()
        == NO_ACCESS
    )
    # the other organization's reason is untouched
    assert client.get(mem(other_org, REASONS), headers=other_org.headers()).get_json()["total"] == 1
