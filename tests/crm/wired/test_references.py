"""Member and conversation ids the CRM is given must name members and conversations of the organization
(issue 9: one member id across areas; a deal links only conversations that exist). These tests go
through the members and messaging APIs, with the areas wired as in production."""

from __future__ import annotations

import uuid
from typing import Any

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.crm.conftest import Crm, crm_error, not_found_body
from tests.fakes.fixtures import Channel, Deliver
from tests.messaging.helpers import open_window


def _member(client: FlaskClient, org: Org, **fields: Any) -> str:
    response = client.post(
        f"/v2/messages/organizations/{org.id}/members",
        json={"name": "Ana", "ai": False, "organization_id": org.id, **fields},
        headers=org.headers(),
    )
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["id"])


def _conversation(client: FlaskClient, wa: Channel, deliver: Deliver) -> str:
    open_window(deliver, wa)
    [message] = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"]
    return str(message["conversation_id"])


def _refused(response: Any, field: str) -> None:
    assert response.status_code == 400, response.get_json()
    message = response.get_json()["error"]["message"]
    assert message.startswith(f"{field}: no member of the organization has the id")
    assert response.get_json() == crm_error(400, message)


def test_ticket_and_deal_take_real_member_ids_and_refuse_unknown_ones(
    wired: None, client: FlaskClient, crm: Crm, org: Org, other_org: Org
) -> None:
    member = _member(client, org)  # created without an id: a UUID
    custom = _member(client, org, id="agent.ana-2")  # custom string ids stay accepted
    uuid.UUID(member)
    foreign = _member(client, other_org)

    ticket = crm.ticket(assignee_member_id=member)
    assert ticket["assignee_member_id"] == member
    assigned = crm.ok(
        crm.patch(f"/tickets/{ticket['id']}/assign", {"assignee_member_id": custom, "assigned_by": member})
    )
    assert (assigned["assignee_member_id"], assigned["assigned_by"]) == (custom, member)
    assert crm.ok(crm.get("/tickets", assignee_member_id=custom))["total"] == 1

    deal = crm.deal(owner_id=member)
    assert deal["owner_id"] == member
    assert crm.ok(crm.patch(f"/deals/{deal['id']}", {"owner_id": custom}))["owner_id"] == custom
    assert crm.ok(crm.get("/deals", owner_id=custom))["total"] == 1
    task = crm.task(owner_id=custom)
    assert task["owner_id"] == custom

    for unknown in (str(uuid.uuid4()), foreign, "nobody"):
        _refused(
            crm.post("/tickets", {"title": "T", "source": "api", "assignee_member_id": unknown}),
            "assignee_member_id",
        )
        _refused(crm.patch(f"/tickets/{ticket['id']}", {"assignee_member_id": unknown}), "assignee_member_id")
        _refused(
            crm.patch(f"/tickets/{ticket['id']}/assign", {"assignee_member_id": unknown}),
            "assignee_member_id",
        )
        _refused(
            crm.patch(
                f"/tickets/{ticket['id']}/assign", {"assignee_member_id": member, "assigned_by": unknown}
            ),
            "assigned_by",
        )
        _refused(crm.patch(f"/deals/{deal['id']}", {"owner_id": unknown}), "owner_id")
        _refused(crm.post("/tasks", {"title": "Call", "owner_id": unknown}), "owner_id")
    pipeline = crm.pipeline()
    _refused(
        crm.post(
            "/deals",
            {
                "name": "D",
                "pipeline_id": pipeline["id"],
                "stage_id": pipeline["stages"][0]["id"],
                "owner_id": foreign,
            },
        ),
        "owner_id",
    )
    # nothing was changed by the refused calls
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["assignee_member_id"] == custom
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["owner_id"] == custom
    assert crm.ok(crm.get("/deals"))["total"] == 1
    # null still unassigns
    assert crm.ok(crm.patch(f"/deals/{deal['id']}", {"owner_id": None}))["owner_id"] is None


def test_deal_links_only_conversations_of_the_organization(
    wired: None, client: FlaskClient, crm: Crm, other_crm: Crm, wa: Channel, deliver: Deliver
) -> None:
    conversation = _conversation(client, wa, deliver)
    member = _member(client, crm.org)
    deal = crm.deal()
    link = crm.ok(
        crm.post(
            f"/deals/{deal['id']}/conversations",
            {"conversation_id": conversation, "channel": "whatsapp", "linked_by": member},
        ),
        201,
    )
    assert (link["conversation_id"], link["linked_by"]) == (conversation, member)

    other = crm.deal(name="Other")
    for missing in (str(uuid.uuid4()), "call-9"):
        response = crm.post(f"/deals/{other['id']}/conversations", {"conversation_id": missing})
        assert response.get_json() == not_found_body("Conversation")
    _refused(
        crm.post(
            f"/deals/{other['id']}/conversations",
            {"conversation_id": conversation, "linked_by": str(uuid.uuid4())},
        ),
        "linked_by",
    )
    # another organization's conversation is not found either, and nothing is linked by the refusals
    foreign_deal = other_crm.deal()
    response = other_crm.post(f"/deals/{foreign_deal['id']}/conversations", {"conversation_id": conversation})
    assert response.get_json() == not_found_body("Conversation")
    assert other_crm.ok(other_crm.get(f"/deals/{foreign_deal['id']}"))["conversations"] == []
    assert crm.ok(crm.get(f"/deals/{other['id']}"))["conversations"] == []
    # at creation too
    pipeline = other_crm.pipeline()
    response = other_crm.post(
        "/deals",
        {
            "name": "D",
            "pipeline_id": pipeline["id"],
            "stage_id": pipeline["stages"][0]["id"],
            "conversation_ids": [conversation],
        },
    )
    assert response.get_json() == not_found_body("Conversation")


def test_ticket_conversation_ids_must_exist_in_the_organization(
    wired: None, client: FlaskClient, crm: Crm, other_crm: Crm, wa: Channel, deliver: Deliver
) -> None:
    conversation = _conversation(client, wa, deliver)
    ticket = crm.ticket(conversation_ids=[conversation])
    assert ticket["conversation_ids"] == [conversation]
    refused = crm.post(
        "/tickets", {"title": "T", "source": "api", "conversation_ids": [conversation, "nope"]}
    )
    assert refused.get_json() == not_found_body("Conversation")
    patched = crm.patch(f"/tickets/{ticket['id']}", {"conversation_ids": [str(uuid.uuid4())]})
    assert patched.get_json() == not_found_body("Conversation")
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["conversation_ids"] == [conversation]
    foreign = other_crm.post("/tickets", {"title": "T", "source": "api", "conversation_ids": [conversation]})
    assert foreign.get_json() == not_found_body("Conversation")
    assert crm.ok(crm.get("/tickets"))["total"] == 1 and other_crm.ok(other_crm.get("/tickets"))["total"] == 0


def test_without_the_owning_areas_every_id_is_accepted(crm: Crm) -> None:
    # the CRM runs alone (tests/crm/conftest.py: nobody answers the hooks): ids are taken as given
    ticket = crm.ticket(assignee_member_id="anyone", conversation_ids=["call-1"])
    assert (ticket["assignee_member_id"], ticket["conversation_ids"]) == ("anyone", ["call-1"])
    deal = crm.deal(owner_id=str(uuid.uuid4()))
    link = crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "call-1", "linked_by": "x"})
    assert link.status_code == 201
