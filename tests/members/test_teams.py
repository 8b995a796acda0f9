"""Teams: CRUD, membership, availability and the pick used by "assign to team"."""

from __future__ import annotations

import uuid

from flask import Flask
from flask.testing import FlaskClient

from blueprints.members.services import hooks
from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem


def _team(client: FlaskClient, org: Org, **body: object):
    return client.post(mem(org, "/teams"), json=body, headers=org.headers())


def test_crud_and_membership(client: FlaskClient, org: Org, make_member) -> None:
    ana, ben = make_member(org, name="Ana"), make_member(org, name="Ben")
    created = _team(client, org, name="Sales", description="Inbound", member_ids=[ben["id"]])
    assert created.status_code == 201
    team = created.get_json()
    assert team["name"] == "Sales" and team["description"] == "Inbound"
    assert [m["id"] for m in team["members"]] == [ben["id"]]
    path = mem(org, f"/teams/{team['id']}")
    added = client.post(f"{path}/members", json={"member_ids": [ana["id"], ben["id"]]}, headers=org.headers())
    assert [m["name"] for m in added.get_json()["members"]] == ["Ana", "Ben"]
    removed = client.delete(f"{path}/members/{ben['id']}", headers=org.headers())
    assert [m["id"] for m in removed.get_json()["members"]] == [ana["id"]]
    again = client.delete(f"{path}/members/{ben['id']}", headers=org.headers())
    assert again.get_json() == error(404, f"Member {ben['id']} is not in this team")
    renamed = client.patch(path, json={"name": "Sales EMEA"}, headers=org.headers()).get_json()
    assert renamed["name"] == "Sales EMEA" and renamed["description"] == "Inbound"
    assert client.get(path, headers=org.headers()).get_json()["name"] == "Sales EMEA"
    listed = client.get(mem(org, "/teams"), headers=org.headers()).get_json()
    assert listed["total"] == 1 and listed["data"][0]["members"][0]["id"] == ana["id"]
    assert client.delete(path, headers=org.headers()).get_json() == {"id": team["id"], "deleted": True}
    assert client.get(path, headers=org.headers()).get_json() == error(404, "No Team found")
    # deleting a member takes it out of its teams
    team2 = _team(client, org, name="Support", member_ids=[ana["id"]]).get_json()
    client.delete(f"/v2/messages/organizations/{org.id}/members/{ana['id']}", headers=org.headers())
    assert client.get(mem(org, f"/teams/{team2['id']}"), headers=org.headers()).get_json()["members"] == []


def test_validation(client: FlaskClient, org: Org, other_org: Org, make_member) -> None:
    theirs = make_member(other_org, name="Theirs")
    assert _team(client, org).get_json() == error(400, "name: Field required")
    assert _team(client, org, name="A", member_ids=["mem_nobody"]).get_json() == error(
        400, "member_ids: no member with id 'mem_nobody'"
    )
    assert _team(client, org, name="A", member_ids=[theirs["id"]]).status_code == 400
    assert _team(client, org, name="A", member_ids="x").get_json()["message"].startswith("member_ids: ")
    team = _team(client, org, name="A").get_json()
    assert _team(client, org, name="a").get_json() == error(409, "name: a team named 'a' already exists")
    empty = client.post(
        mem(org, f"/teams/{team['id']}/members"), json={"member_ids": []}, headers=org.headers()
    )
    assert empty.status_code == 400 and empty.get_json()["message"].startswith("member_ids: ")
    null = client.patch(mem(org, f"/teams/{team['id']}"), json={"name": None}, headers=org.headers())
    assert null.get_json() == error(400, "name: must not be null")
    bad_take = client.get(mem(org, "/teams?take=0"), headers=org.headers())
    assert bad_take.status_code == 400


def test_other_organization(client: FlaskClient, org: Org, other_org: Org) -> None:
    theirs = _team(client, other_org, name="Theirs").get_json()
    for team_id in (theirs["id"], str(uuid.uuid4()), "nope"):
        path = mem(org, f"/teams/{team_id}")
        assert client.get(path, headers=org.headers()).get_json() == error(404, "No Team found")
        assert client.patch(path, json={"name": "x"}, headers=org.headers()).status_code == 404
        assert client.delete(path, headers=org.headers()).status_code == 404
        assert client.get(f"{path}/availability", headers=org.headers()).status_code == 404
        assert (
            client.post(f"{path}/members", json={"member_ids": ["a"]}, headers=org.headers()).status_code
            == 404
        )
    assert client.get(mem(other_org, "/teams"), headers=org.headers()).get_json() == NO_ACCESS
    assert client.get(mem(org, "/teams"), headers=org.headers()).get_json()["total"] == 0


def test_team_availability(app: Flask, client: FlaskClient, org: Org, make_member, queries) -> None:
    ana, ben, cy = (make_member(org, name=n) for n in ("Ana", "Ben", "Cy"))
    outsider = make_member(org, name="Outsider")
    team = _team(client, org, name="Sales", member_ids=[ana["id"], ben["id"], cy["id"]]).get_json()
    for member, status in ((ana, "online"), (ben, "online"), (cy, "busy"), (outsider, "online")):
        client.patch(
            mem(org, f"/members/{member['id']}/status"), json={"status": status}, headers=org.headers()
        )
    hooks.active_conversation_counts.connect(lambda **_: {ana["id"]: 4, ben["id"]: 1, cy["id"]: 0})
    body = client.get(mem(org, f"/teams/{team['id']}/availability"), headers=org.headers()).get_json()
    assert body["team_id"] == team["id"] and body["team_name"] == "Sales"
    assert body["counts"] == {"online": 2, "busy": 1, "away": 0, "offline": 0}
    loads = {m["member_id"]: (m["status"], m["active_conversations"]) for m in body["members"]}
    assert loads == {ana["id"]: ("online", 4), ben["id"]: ("online", 1), cy["id"]: ("busy", 0)}
    with queries() as counted:
        client.get(mem(org, "/teams"), headers=org.headers())
    for i in range(5):
        _team(client, org, name=f"T{i}", member_ids=[ana["id"], ben["id"]])
    with queries() as more:
        client.get(mem(org, "/teams"), headers=org.headers())
    assert more.count == counted.count  # nothing per team or per member
