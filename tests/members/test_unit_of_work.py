"""One unit of work per request in the members area: a write commits once, a read never commits, and a
refused write keeps nothing. Also the member-id lookup other areas are wired to."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from blueprints.members.services.members import existing_member_ids
from tests.conftest import Org
from tests.members.conftest import mem, msg


def test_create_member_commits_once(client: FlaskClient, org: Org, commits: Any) -> None:
    with commits() as counted:
        response = client.post(
            msg(org), json={"name": "Ana", "ai": False, "organization_id": org.id}, headers=org.headers()
        )
    assert response.status_code == 201
    assert counted.count == 1
    fetched = client.get(msg(org, f"/{response.get_json()['id']}"), headers=org.headers())
    assert fetched.status_code == 200 and fetched.get_json()["name"] == "Ana"


def test_a_refused_create_commits_nothing(client: FlaskClient, org: Org, commits: Any, make_member) -> None:
    make_member(org, id="agent-7")
    with commits() as counted:
        again = client.post(
            msg(org),
            json={"name": "Other", "ai": False, "organization_id": org.id, "id": "agent-7"},
            headers=org.headers(),
        )
    assert again.status_code == 409
    assert counted.count == 0
    assert client.get(msg(org, "/agent-7"), headers=org.headers()).get_json()["name"] == "Ana"


def test_change_status_commits_once(client: FlaskClient, org: Org, commits: Any, make_member) -> None:
    member = make_member(org)
    with commits() as counted:
        response = client.patch(
            mem(org, f"/members/{member['id']}/status"), json={"status": "busy"}, headers=org.headers()
        )
    assert response.status_code == 200 and response.get_json()["status"] == "busy"
    assert counted.count == 1
    history = client.get(mem(org, "/members/status-history/organization"), headers=org.headers())
    assert history.get_json()["data"][0]["to_status"] == "busy"


def test_create_team_commits_once(client: FlaskClient, org: Org, commits: Any, make_member) -> None:
    member = make_member(org)
    with commits() as counted:
        response = client.post(
            mem(org, "/teams"), json={"name": "Sales", "member_ids": [member["id"]]}, headers=org.headers()
        )
    assert response.status_code == 201
    assert counted.count == 1
    assert [m["id"] for m in response.get_json()["members"]] == [member["id"]]


def test_update_agent_config_commits_once(client: FlaskClient, org: Org, commits: Any, make_member) -> None:
    agent = make_member(org, name="Sofía", ai=True)
    path = mem(org, f"/members/{agent['id']}/agent-config")
    assert client.post(path, json={"sections": {"tone": "warm"}}, headers=org.headers()).status_code == 201
    with commits() as counted:
        response = client.patch(path, json={"voice": "alloy"}, headers=org.headers())
    assert response.status_code == 200
    assert response.get_json()["voice"] == "alloy" and response.get_json()["version"] == 2
    assert counted.count == 1


def test_reads_send_no_commit(client: FlaskClient, org: Org, commits: Any, make_member) -> None:
    make_member(org)
    make_member(org, name="Bot", ai=True)
    with commits() as counted:
        for path in (
            msg(org),
            mem(org, "/members/availabilities"),
            mem(org, "/members/ai-agents"),
            "/v1/organizations",
        ):
            assert client.get(path, headers=org.headers()).status_code == 200, path
    assert counted.count == 0


def test_existing_member_ids_names_the_organizations_members(
    app: Flask, org: Org, other_org: Org, make_member, queries: Any
) -> None:
    human = make_member(org)["id"]
    ai = make_member(org, name="Bot", ai=True)["id"]
    custom = make_member(org, id="agent-7")["id"]
    theirs = make_member(other_org, id="theirs-1")["id"]
    unknown = str(uuid.uuid4())
    with app.app_context(), queries() as counted:
        found = existing_member_ids(uuid.UUID(org.id), [human, ai, custom, theirs, unknown, ""])
        assert found == {human, ai, custom}
        # other threads (heartbeats, grace timers, key touches) may talk to the database meanwhile
        assert len([q for q in counted.statements if "FROM members" in q]) == 1
        assert existing_member_ids(uuid.UUID(org.id), []) == set()


def test_a_deleted_member_is_no_longer_an_existing_id(
    app: Flask, client: FlaskClient, org: Org, make_member
) -> None:
    member = make_member(org)["id"]
    assert client.delete(msg(org, f"/{member}"), headers=org.headers()).status_code == 200
    with app.app_context():
        assert existing_member_ids(uuid.UUID(org.id), [member]) == set()
