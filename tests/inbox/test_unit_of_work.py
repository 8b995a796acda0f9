"""One unit of work per request: COMMITs per route, and the inbox verbs called directly as a page would."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from core.environments import in_environment
from tests.conftest import Org
from tests.fakes.fixtures import Channel
from tests.fakes.meta_graph import FakeMetaGraph
from tests.inbox.conftest import MakeConversation, msg
from tests.inbox.test_broadcasts import body, numbers, template  # noqa: F401


def _get(client: FlaskClient, org: Org, cid: str) -> dict[str, Any]:
    response = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _trail(client: FlaskClient, org: Org, cid: str) -> list[tuple[str, dict[str, Any]]]:
    events = client.get(msg(org, f"/conversations/{cid}/events"), headers=org.headers()).get_json()
    return [(e["type"], e["data"]) for e in events]


# ---- COMMITs per request -----------------------------------------------------------------------------------


def test_a_change_commits_once(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, commits: Callable
) -> None:
    agent = make_member(org, "Ana")
    cid = make_conversation(org)
    with commits() as counted:
        assigned = client.patch(
            msg(org, f"/conversations/{cid}"), json={"extra": {"member_id": agent}}, headers=org.headers()
        )
    assert assigned.status_code == 200 and counted.count == 1
    with commits() as counted:
        note = client.post(
            msg(org, f"/conversations/{cid}/notes"),
            json={"content": "call back", "organization_id": org.id},
            headers=org.headers(),
        )
    assert note.status_code == 201 and counted.count == 1
    with commits() as counted:
        labelled = client.patch(
            msg(org, f"/conversations/{cid}"), json={"extra": {"labels": ["vip"]}}, headers=org.headers()
        )
    assert labelled.status_code == 200 and counted.count == 1
    with commits() as counted:
        created = client.post(msg(org, "/labels"), json={"name": "lead"}, headers=org.headers())
    assert created.status_code == 201 and counted.count == 1


def test_a_refused_change_commits_nothing(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, commits: Callable
) -> None:
    cid = make_conversation(org, labels=["vip"])
    with commits() as counted:
        refused = client.patch(
            msg(org, f"/conversations/{cid}"),
            json={"extra": {"labels": [], "member_id": "mem_nobody"}},
            headers=org.headers(),
        )
    assert refused.status_code == 400 and counted.count == 0
    # the labels removed before the refusal were rolled back with it
    assert _get(client, org, cid)["extra"]["labels"] == ["vip"]
    assert _trail(client, org, cid) == []


def test_reads_commit_nothing(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, commits: Callable
) -> None:
    cid = make_conversation(org, messages=2)
    with commits() as counted:
        listed = client.get(msg(org, "/conversations?include_messages=2"), headers=org.headers())
        trail = client.get(msg(org, f"/conversations/{cid}/events"), headers=org.headers())
    assert listed.status_code == 200 and trail.status_code == 200
    assert counted.count == 0


def test_a_broadcast_commits_once_then_per_recipient_checkpoints(
    client: FlaskClient,
    org: Org,
    wa: Channel,
    meta: FakeMetaGraph,
    template: dict[str, Any],  # noqa: F811
    commits: Callable,
) -> None:
    # The request commits once; the inline queue then runs the job after that commit, before the
    # response returns: the worker's lease ("broadcast.progress"), per recipient a "broadcast.progress"
    # claim and the send's "send.pending" and "send.accepted" checkpoints, then the job's own commit (the
    # last outcome, the completion and the lease's release).
    with commits() as counted:
        created = client.post(
            msg(org, "/broadcasts"), json=body(wa, template["id"], numbers(2)), headers=org.headers()
        )
    assert created.status_code == 201
    assert len(meta.sends()) == 2
    assert counted.count == 1 + 1 + 2 * 3 + 1


# ---- the verbs, called directly as a page route would ------------------------------------------------------


def test_assign_and_unassign(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member
) -> None:
    from blueprints.inbox.services import conversations  # after the app exists

    agent = make_member(org, "Ana")
    cid = make_conversation(org)
    organization_id = uuid.UUID(org.id)
    with in_environment(app, "live"):
        conversation = conversations.assign(organization_id, cid, agent, actor="member:page")
        assert conversation.member_id == agent
    extra = _get(client, org, cid)["extra"]
    assert extra["member_id"] == agent and extra["assignment"]["assigned_by"] == "manual"
    with in_environment(app, "live"):
        conversations.unassign(organization_id, cid, actor="member:page")
    assert _get(client, org, cid)["extra"]["member_id"] is None
    assert [t for t, _ in _trail(client, org, cid)] == ["assignment", "unassignment"]
    assert _trail(client, org, cid)[1][1]["by"] == "member:page"


def test_set_team_and_status(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    from blueprints.inbox.services import conversations  # after the app exists

    team = make_team(org, "Sales", [make_member(org, "Ana")])
    cid = make_conversation(org)
    organization_id = uuid.UUID(org.id)
    with in_environment(app, "live"):
        conversations.set_team(organization_id, cid, team, actor="member:page")
        conversations.set_status(organization_id, cid, "closed", actor="member:page")
    shown = _get(client, org, cid)
    assert shown["extra"]["team_id"] == team and shown["extra"]["team_name"] == "Sales"
    assert shown["status"] == "closed"
    with in_environment(app, "live"):
        conversations.set_team(organization_id, cid, None, actor="member:page")
    assert _get(client, org, cid)["extra"]["team_id"] is None
    assert [t for t, _ in _trail(client, org, cid)] == ["team_assigned", "status_changed", "team_removed"]


def test_labels_one_at_a_time(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    from blueprints.inbox.services import conversations  # after the app exists

    cid = make_conversation(org)
    organization_id = uuid.UUID(org.id)
    with in_environment(app, "live"):
        conversations.add_label(organization_id, cid, "VIP", actor="member:page")
        conversations.add_label(organization_id, cid, "lead", actor="member:page")
        conversations.add_label(organization_id, cid, "vip", actor="member:page")  # already there
        conversations.remove_label(organization_id, cid, "Vip", actor="member:page")
    assert _get(client, org, cid)["extra"]["labels"] == ["lead"]
    assert [(t, d["label"]) for t, d in _trail(client, org, cid)] == [
        ("label_added", "VIP"),
        ("label_added", "lead"),
        ("label_removed", "VIP"),
    ]
    catalogue = client.get(msg(org, "/labels"), headers=org.headers()).get_json()
    assert {label["name"] for label in catalogue["data"]} == {"VIP", "lead"}


def test_archive_unarchive_and_archive_and_clean(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation, make_member, make_team
) -> None:
    from blueprints.inbox.services import conversations  # after the app exists

    agent = make_member(org, "Ana")
    team = make_team(org, "Sales", [agent])
    cid = make_conversation(org, labels=["vip"], extra={"flow_id": "f1", "flow_member_id": "ai_1"})
    organization_id = uuid.UUID(org.id)
    with in_environment(app, "live"):
        conversations.assign(organization_id, cid, agent, actor="member:page")
        conversations.set_team(organization_id, cid, team, actor="member:page")
        conversations.archive(organization_id, cid, actor="member:page")
    kept = _get(client, org, cid)["extra"]
    assert kept["archived"] is not None and kept["member_id"] == agent and kept["labels"] == ["vip"]
    with in_environment(app, "live"):
        conversations.unarchive(organization_id, cid, actor="member:page")
        conversations.archive_and_clean(organization_id, cid, actor="member:page")
    extra = _get(client, org, cid)["extra"]
    assert extra["archived"] is not None
    assert extra["member_id"] is None and extra["assignment"] is None
    assert extra["team_id"] is None and extra["team_name"] is None and extra["labels"] == []
    assert extra["flow_id"] is None and extra["flow_member_id"] is None
    trail = _trail(client, org, cid)
    assert [t for t, _ in trail][-5:] == [
        "unarchived",
        "team_removed",
        "label_removed",
        "unassignment",
        "archived",
    ]
    assert trail[-1][1] == {"by": "member:page", "cleaned": True}


def test_add_note_and_unknown_conversation(
    app: Flask, client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation
) -> None:
    from blueprints.inbox.services import conversations, notes  # after the app exists

    cid = make_conversation(org)
    theirs = make_conversation(other_org)
    organization_id = uuid.UUID(org.id)
    with in_environment(app, "live"):
        note = notes.add_note(organization_id, cid, "wants a refund", actor="Ana")
        note_id = str(note.id)
    listed = client.get(msg(org, f"/conversations/{cid}/notes"), headers=org.headers()).get_json()
    assert [n["id"] for n in listed["data"]] == [note_id] and listed["total"] == 1
    with in_environment(app, "live"):
        for verb in (
            lambda: conversations.archive(organization_id, theirs, actor="member:page"),
            lambda: notes.add_note(organization_id, theirs, "x"),
            lambda: conversations.add_label(organization_id, "not-a-uuid", "x", actor="member:page"),
        ):
            try:
                verb()
            except Exception as error:
                assert getattr(error, "status", None) == 404, error
            else:
                raise AssertionError("expected 404")
