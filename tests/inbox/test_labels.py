"""The label catalogue, flows bound to labels, the enriched view and addresses by label."""

from __future__ import annotations

from collections.abc import Callable

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.inbox.conftest import MakeConversation, msg


def test_label_catalogue_crud(client: FlaskClient, org: Org, other_org: Org) -> None:
    url = msg(org, "/labels")
    created = client.post(url, json={"name": "VIP", "color": "#ffaa00"}, headers=org.headers())
    assert created.status_code == 201
    label = created.get_json()
    assert label["name"] == "VIP" and label["source"] == "manual"
    duplicate = client.post(url, json={"name": "vip"}, headers=org.headers())
    assert duplicate.status_code == 409 and duplicate.get_json()["message"].startswith("name:")
    assert client.post(url, json={}, headers=org.headers()).get_json()["message"].startswith("name:")
    renamed = client.patch(f"{url}/{label['id']}", json={"name": "Gold"}, headers=org.headers()).get_json()
    assert renamed["name"] == "Gold" and renamed["color"] == "#ffaa00"
    assert [x["name"] for x in client.get(url, headers=org.headers()).get_json()["data"]] == ["Gold"]
    assert (
        client.patch(
            msg(other_org, f"/labels/{label['id']}"), json={"name": "x"}, headers=other_org.headers()
        ).status_code
        == 404
    )
    assert client.delete(f"{url}/{label['id']}", headers=org.headers()).status_code == 200
    assert client.get(url, headers=org.headers()).get_json()["total"] == 0


def test_rename_and_delete_follow_on_conversations(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    label = client.post(msg(org, "/labels"), json={"name": "lead"}, headers=org.headers()).get_json()
    cid = make_conversation(org, labels=["lead"])
    client.patch(msg(org, f"/labels/{label['id']}"), json={"name": "prospect"}, headers=org.headers())
    conversation = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()
    assert conversation["extra"]["labels"] == ["prospect"]
    assert (
        client.get(msg(org, "/conversations?labels=prospect"), headers=org.headers()).get_json()["total"] == 1
    )
    client.delete(msg(org, f"/labels/{label['id']}"), headers=org.headers())
    conversation = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()
    assert conversation["extra"]["labels"] == []


def test_enriched_labels(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    client.post(msg(org, "/labels"), json={"name": "vip"}, headers=org.headers())
    client.post(msg(org, "/labels"), json={"name": "churn-risk", "source": "ai"}, headers=org.headers())
    flow = client.post(
        msg(org, "/flows"),
        json={"name": "VIP welcome", "trigger_labels": ["vip"], "interrupt_labels": ["churn-risk"]},
        headers=org.headers(),
    ).get_json()
    cid = make_conversation(org)
    client.patch(
        msg(org, f"/conversations/{cid}"),
        json={"extra": {"labels": ["vip", "ad-hoc"]}},
        headers=org.headers(),
    )
    body = client.get(msg(org, f"/conversations/{cid}/labels/enriched"), headers=org.headers()).get_json()
    by_name = {item["name"]: item for item in body["labels"]}
    assert set(by_name) == {"vip", "churn-risk", "ad-hoc"}
    ref = {"flowId": flow["id"], "name": "VIP welcome", "status": "active"}
    assert by_name["vip"] == {
        "name": "vip",
        "source": "manual",
        "isApplied": True,
        "sequences": {"triggers": [ref], "interrupts": []},
    }
    assert by_name["churn-risk"]["isApplied"] is False
    assert by_name["churn-risk"]["source"] == "ai"
    assert by_name["churn-risk"]["sequences"] == {"triggers": [], "interrupts": [ref]}
    assert by_name["ad-hoc"]["source"] == "conversation"  # catalogued the first time it was applied


def test_trigger_label_starts_the_flow_and_interrupt_stops_it(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    bot = {"id": "ai_bot", "name": "Bot", "ai": True, "organization_id": org.id}
    assert client.post(msg(org, "/members"), json=bot, headers=org.headers()).status_code in (200, 201)
    flow = client.post(
        msg(org, "/flows"),
        json={
            "name": "Nurture",
            "trigger_labels": ["lead"],
            "interrupt_labels": ["won"],
            "member_id": "ai_bot",
        },
        headers=org.headers(),
    ).get_json()
    cid = make_conversation(org)
    url = msg(org, f"/conversations/{cid}")
    started = client.patch(url, json={"extra": {"labels": ["lead"]}}, headers=org.headers()).get_json()
    assert started["extra"]["flow_id"] == flow["id"] and started["extra"]["flow_member_id"] == "ai_bot"
    stopped = client.patch(url, json={"extra": {"labels": ["lead", "won"]}}, headers=org.headers()).get_json()
    assert stopped["extra"]["flow_id"] is None
    trail = client.get(f"{url}/events?types=flow_started,flow_interrupted", headers=org.headers()).get_json()
    assert [e["type"] for e in trail] == ["flow_started", "flow_interrupted"]


def test_flow_crud(client: FlaskClient, org: Org) -> None:
    url = msg(org, "/flows")
    flow = client.post(url, json={"name": "F", "trigger_labels": ["a"]}, headers=org.headers()).get_json()
    assert client.get(f"{url}/{flow['id']}", headers=org.headers()).get_json()["name"] == "F"
    paused = client.patch(f"{url}/{flow['id']}", json={"status": "paused"}, headers=org.headers()).get_json()
    assert paused["status"] == "paused" and paused["trigger_labels"] == ["a"]
    assert (
        client.patch(f"{url}/{flow['id']}", json={"status": "running"}, headers=org.headers()).status_code
        == 400
    )
    assert client.delete(f"{url}/{flow['id']}", headers=org.headers()).status_code == 200
    assert client.get(f"{url}/{flow['id']}", headers=org.headers()).status_code == 404


def test_a_flow_runs_as_a_member_of_its_own_organization(
    client: FlaskClient, org: Org, other_org: Org, make_member: Callable[..., str]
) -> None:
    theirs = make_member(other_org, "Their bot", ai=True)
    url = msg(org, "/flows")
    for member_id in (theirs, "nobody"):
        refused = client.post(url, json={"name": "F", "member_id": member_id}, headers=org.headers())
        assert refused.status_code == 400
        assert refused.get_json()["message"].startswith("member_id: no member")
    ours = make_member(org, "Our bot", ai=True)
    flow = client.post(url, json={"name": "F", "member_id": ours}, headers=org.headers()).get_json()
    moved = client.patch(f"{url}/{flow['id']}", json={"member_id": theirs}, headers=org.headers())
    assert moved.status_code == 400
    assert client.get(f"{url}/{flow['id']}", headers=org.headers()).get_json()["member_id"] == ours


def test_addresses_by_label(
    client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation
) -> None:
    make_conversation(org, labels=["promo"], address="+525500000001")
    make_conversation(org, labels=["promo"], address="+525500000002", service="instagram")
    make_conversation(org, address="+525500000003")
    make_conversation(other_org, labels=["promo"], address="+525500000009")
    url = msg(org, "/conversations/addresses-by-label")
    body = client.get(f"{url}?label=PROMO&organization_id={org.id}", headers=org.headers()).get_json()
    assert sorted(body["addresses"]) == ["+525500000001", "+525500000002"]
    missing_label = client.get(f"{url}?organization_id={org.id}", headers=org.headers())
    assert missing_label.status_code == 400 and missing_label.get_json()["message"].startswith("label:")
    missing_org = client.get(f"{url}?label=promo", headers=org.headers())
    assert missing_org.status_code == 400 and missing_org.get_json()["message"].startswith("organization_id:")
    other = client.get(f"{url}?label=promo&organization_id={other_org.id}", headers=org.headers())
    assert other.status_code == 403
