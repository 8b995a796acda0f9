"""PATCH implements every row of the conversation state table; notes, audit events, labels, DELETE."""

from __future__ import annotations

from collections.abc import Callable

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.inbox.conftest import MakeConversation, msg


def patch(client: FlaskClient, org: Org, conversation_id: str, body: dict):
    return client.patch(msg(org, f"/conversations/{conversation_id}"), json=body, headers=org.headers())


def events(client: FlaskClient, org: Org, conversation_id: str, types: str = "") -> list[dict]:
    query = f"?types={types}" if types else ""
    response = client.get(msg(org, f"/conversations/{conversation_id}/events{query}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def counts(client: FlaskClient, org: Org) -> dict[str, int]:
    body = client.get(
        f"/v1/members/organizations/{org.id}/members/availabilities", headers=org.headers()
    ).get_json()
    rows = body["data"] if isinstance(body, dict) else body
    return {row["member_id"]: row["active_conversations"] for row in rows}


def test_name_and_status_change(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    cid = make_conversation(org)
    body = patch(client, org, cid, {"name": "Order #42", "status": "closed"}).get_json()
    assert body["name"] == "Order #42" and body["status"] == "closed"
    assert patch(client, org, cid, {"status": "active"}).get_json()["status"] == "active"
    assert [e["data"]["to"] for e in events(client, org, cid, "status_changed")] == ["closed", "active"]
    bad = patch(client, org, cid, {"status": "archived"})
    assert bad.status_code == 400 and bad.get_json()["message"].startswith("status:")


def test_extra_merges_only_fields_sent(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org, labels=["vip"], extra={"flow_id": "flow-1"})
    body = patch(client, org, cid, {"extra": {"member_id": agent}}).get_json()
    assert body["extra"]["member_id"] == agent
    assert body["extra"]["labels"] == ["vip"]
    assert body["extra"]["flow_id"] == "flow-1"
    assert body["extra"]["assignment"]["member_id"] == agent


def test_assignment_creates_an_audit_event_and_counts_follow(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org)
    patch(client, org, cid, {"extra": {"member_id": agent, "assignment": {"assigned_by": "supervisor"}}})
    [assignment] = events(client, org, cid, "assignment")
    assert assignment["type"] == "assignment"
    assert assignment["data"]["member_id"] == agent and assignment["data"]["assigned_by"] == "supervisor"
    assert assignment["created_at"].endswith("Z") and assignment["conversation_id"] == cid
    assert counts(client, org)[agent] == 1
    patch(client, org, cid, {"extra": {"member_id": None}})
    assert counts(client, org)[agent] == 0
    assert [e["type"] for e in events(client, org, cid, "assignment,unassignment")] == [
        "assignment",
        "unassignment",
    ]
    unknown = patch(client, org, cid, {"extra": {"member_id": "mem_nobody"}})
    assert unknown.status_code == 400 and "member_id" in unknown.get_json()["message"]


def test_archive_keeps_assignment_team_and_labels(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    agent = make_member(org, "Ana")
    team = make_team(org, "Sales", [agent])
    cid = make_conversation(org, labels=["vip"])
    patch(client, org, cid, {"extra": {"member_id": agent, "team_id": team}})
    body = patch(client, org, cid, {"extra": {"archived": "2026-11-20T10:00:00Z"}}).get_json()
    assert body["status"] == "active"
    assert body["extra"]["archived"] == "2026-11-20T10:00:00.000Z"
    assert body["extra"]["member_id"] == agent and body["extra"]["team_id"] == team
    assert body["extra"]["team_name"] == "Sales" and body["extra"]["labels"] == ["vip"]
    assert counts(client, org)[agent] == 0  # archived conversations are not active work
    unarchived = patch(client, org, cid, {"extra": {"archived": None}}).get_json()
    assert unarchived["extra"]["archived"] is None and unarchived["extra"]["member_id"] == agent
    assert [e["type"] for e in events(client, org, cid, "archived,unarchived")] == ["archived", "unarchived"]


def test_archive_and_clean(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org, labels=["vip", "lead"], extra={"flow_id": "f1", "flow_member_id": "ai_1"})
    patch(client, org, cid, {"extra": {"member_id": agent, "team_name": "Ventas"}})
    assert counts(client, org)[agent] == 1
    clean = {
        "archived": "2026-11-20T10:00:00Z",
        "member_id": None,
        "assignment": None,
        "team_id": None,
        "team_name": None,
        "labels": [],
    }
    body = patch(client, org, cid, {"extra": clean}).get_json()
    extra = body["extra"]
    assert extra["archived"] is not None
    assert extra["member_id"] is None and extra["assignment"] is None
    assert extra["team_id"] is None and extra["team_name"] is None and extra["labels"] == []
    assert extra["flow_id"] is None and extra["flow_member_id"] is None
    assert counts(client, org)[agent] == 0
    removed = {e["data"]["label"] for e in events(client, org, cid, "label_removed")}
    assert removed == {"vip", "lead"}
    listed = client.get(msg(org, "/conversations?labels=vip"), headers=org.headers()).get_json()
    assert listed["total"] == 0


def test_incoming_message_unarchives(client: FlaskClient, org: Org, wa, deliver, make_member) -> None:
    from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "hola")])))
    [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    patch(client, org, conversation["id"], {"extra": {"archived": "2026-11-20T10:00:00Z"}})
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "sigo aquí")])))
    again = client.get(msg(org, f"/conversations/{conversation['id']}"), headers=org.headers()).get_json()
    assert again["extra"]["archived"] is None


def test_label_events_and_validation(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    cid = make_conversation(org)
    patch(client, org, cid, {"extra": {"labels": ["vip", "lead"]}})
    patch(client, org, cid, {"extra": {"labels": ["lead", "hot"]}})
    added = [e["data"]["label"] for e in events(client, org, cid, "label_added")]
    removed = [e["data"]["label"] for e in events(client, org, cid, "label_removed")]
    assert sorted(added) == ["hot", "lead", "vip"] and removed == ["vip"]
    assert patch(client, org, cid, {"extra": {"labels": [""]}}).status_code == 400
    bad_types = client.get(msg(org, f"/conversations/{cid}/events?types=nope"), headers=org.headers())
    assert bad_types.status_code == 400 and bad_types.get_json()["message"].startswith("types:")


def test_notes(
    client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation, make_member
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org)
    url = msg(org, f"/conversations/{cid}/notes")
    created = client.post(
        url,
        json={"content": "Wants a refund", "organization_id": org.id, "member_id": agent, "actor": "Ana"},
        headers=org.headers(),
    )
    assert created.status_code == 201
    note = created.get_json()
    assert note["content"] == "Wants a refund" and note["member_id"] == agent
    listed = client.get(url, headers=org.headers()).get_json()
    assert [n["id"] for n in listed["data"]] == [note["id"]]
    assert events(client, org, cid, "note_added")[0]["data"]["note_id"] == note["id"]
    missing = client.post(url, json={"organization_id": org.id}, headers=org.headers())
    assert missing.status_code == 400 and missing.get_json()["message"].startswith("content:")
    no_org = client.post(url, json={"content": "x"}, headers=org.headers())
    assert no_org.get_json()["message"].startswith("organization_id:")
    wrong_org = client.post(
        url, json={"content": "x", "organization_id": other_org.id}, headers=org.headers()
    )
    assert wrong_org.status_code == 400 and wrong_org.get_json()["message"].startswith("organization_id:")
    deleted = client.delete(f"{url}/{note['id']}", headers=org.headers())
    assert deleted.status_code == 200
    assert client.get(url, headers=org.headers()).get_json()["data"] == []
    assert client.delete(f"{url}/{note['id']}", headers=org.headers()).status_code == 404


def test_notes_are_never_messages(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    cid = make_conversation(org)
    client.post(
        msg(org, f"/conversations/{cid}/notes"),
        json={"content": "internal", "organization_id": org.id},
        headers=org.headers(),
    )
    messages = client.get(msg(org, f"/messages?conversation_id={cid}"), headers=org.headers()).get_json()
    assert messages["data"] == []


def test_other_organizations_conversation_is_404(
    client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation
) -> None:
    theirs = make_conversation(other_org)
    for call in (
        lambda: patch(client, org, theirs, {"name": "x"}),
        lambda: client.delete(msg(org, f"/conversations/{theirs}"), headers=org.headers()),
        lambda: client.get(msg(org, f"/conversations/{theirs}/notes"), headers=org.headers()),
        lambda: client.get(msg(org, f"/conversations/{theirs}/events"), headers=org.headers()),
        lambda: client.get(msg(org, f"/conversations/{theirs}/labels/enriched"), headers=org.headers()),
        lambda: client.post(
            msg(org, f"/conversations/{theirs}/assign-team"), json={"team_id": "x"}, headers=org.headers()
        ),
    ):
        response = call()
        assert response.status_code == 404, response.get_json()
        assert response.get_json() == {"statusCode": 404, "message": "Conversation not found"}


def test_delete_removes_messages_notes_and_trail(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    cid = make_conversation(org, messages=3, labels=["vip"])
    client.post(
        msg(org, f"/conversations/{cid}/notes"),
        json={"content": "n", "organization_id": org.id},
        headers=org.headers(),
    )
    response = client.delete(msg(org, f"/conversations/{cid}"), headers=org.headers())
    assert response.status_code == 200 and response.get_json() == {"id": cid, "deleted": True}
    assert client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).status_code == 404
    assert (
        client.get(msg(org, f"/messages?conversation_id={cid}"), headers=org.headers()).get_json()["data"]
        == []
    )
    assert client.get(msg(org, "/conversations?labels=vip"), headers=org.headers()).get_json()["total"] == 0


def test_delete_refuses_while_linked(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    from blueprints.inbox.services.conversations import conversation_references

    cid = make_conversation(org)
    linked: Callable[..., list[str]] = lambda *, organization_id, conversation_id: (  # noqa: E731
        ["1 deal"] if conversation_id == cid else []
    )
    with conversation_references.connected(linked):
        response = client.delete(msg(org, f"/conversations/{cid}"), headers=org.headers())
        assert response.status_code == 409
        assert "1 deal" in response.get_json()["message"]
        assert client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).status_code == 200
