"""The areas working together: deal links read the real transcript, linked conversations are not
deleted, CRM contact merges carry the messaging contacts along, AI agents list the connected channels."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import Channel
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text


def crm(org: Org, suffix: str) -> str:
    return f"/v1/crm/organizations/{org.id}{suffix}"


def msg(org: Org, suffix: str) -> str:
    return f"/v2/messages/organizations/{org.id}{suffix}"


def inbound(deliver, channel: Channel, text: str, sender: str = "5215512345678") -> None:
    assert (
        deliver(wa_delivery(wa_change(channel.address, messages=[wa_text(sender, text)]))).status_code == 200
    )


def _deal(client: FlaskClient, org: Org) -> str:
    pipeline = client.get(crm(org, "/pipelines"), headers=org.headers()).get_json()["data"][0]
    response = client.post(
        crm(org, "/deals"),
        json={
            "name": "Fleet renewal",
            "pipeline_id": pipeline["id"],
            "stage_id": pipeline["stages"][0]["id"],
        },
        headers=org.headers(),
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def test_linking_a_conversation_captures_its_real_transcript(
    client: FlaskClient, org: Org, wa: Channel, deliver
) -> None:
    inbound(deliver, wa, "Necesito renovar 40 líneas para mi flotilla antes de diciembre")
    [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    deal = _deal(client, org)
    link = client.post(
        crm(org, f"/deals/{deal}/conversations"),
        json={"conversation_id": conversation["id"], "channel": "whatsapp"},
        headers=org.headers(),
    )
    assert link.status_code == 201, link.get_json()
    assert "40 líneas" in (link.get_json()["summary"] or "")


def test_a_conversation_linked_to_a_deal_is_not_deleted(
    client: FlaskClient, org: Org, wa: Channel, deliver
) -> None:
    inbound(deliver, wa, "hola")
    [conversation] = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    deal = _deal(client, org)
    link = client.post(
        crm(org, f"/deals/{deal}/conversations"),
        json={"conversation_id": conversation["id"]},
        headers=org.headers(),
    ).get_json()
    refused = client.delete(msg(org, f"/conversations/{conversation['id']}"), headers=org.headers())
    assert refused.status_code == 409
    assert refused.get_json()["message"].startswith("Conversation is linked to 1 deal")
    client.delete(crm(org, f"/deals/{deal}/conversations/{link['id']}"), headers=org.headers())
    assert (
        client.delete(msg(org, f"/conversations/{conversation['id']}"), headers=org.headers()).status_code
        == 200
    )


def test_merging_crm_contacts_moves_the_messaging_contacts(
    client: FlaskClient, org: Org, make_conversation
) -> None:
    keep = client.post(crm(org, "/contacts"), json={"name": "Ana"}, headers=org.headers()).get_json()
    gone = client.post(crm(org, "/contacts"), json={"name": "Ana L."}, headers=org.headers()).get_json()
    cid = make_conversation(org, crm_contact_id=gone["id"])
    merged = client.post(
        crm(org, f"/contacts/{keep['id']}/merge"),
        json={"source_contact_id": gone["id"]},
        headers=org.headers(),
    )
    assert merged.status_code == 200, merged.get_json()
    listed = client.get(
        msg(org, f"/conversations?crm_contact_id={keep['id']}"), headers=org.headers()
    ).get_json()
    assert [c["id"] for c in listed["data"]] == [cid]


def test_ai_agents_list_the_connected_channels(
    client: FlaskClient, org: Org, wa: Channel, make_member
) -> None:
    agent = make_member(org, "Bot", ai=True)
    detail = client.get(
        f"/v1/members/organizations/{org.id}/members/ai-agents/{agent}", headers=org.headers()
    )
    assert detail.status_code == 200, detail.get_json()
    assert detail.get_json()["connections"] == ["whatsapp"]


def test_messaging_contacts_follow_crm_phone_identities(
    client: FlaskClient, org: Org, wa: Channel, deliver
) -> None:
    # a CRM contact that already has the number: the new WhatsApp contact is linked on arrival
    known = client.post(
        crm(org, "/contacts"),
        json={"name": "Ana", "identities": [{"kind": "phone", "value": "+52 55 1234 5678"}]},
        headers=org.headers(),
    ).get_json()
    inbound(deliver, wa, "hola", sender="5215512345678")
    linked = client.get(
        msg(org, f"/conversations?crm_contact_id={known['id']}"), headers=org.headers()
    ).get_json()
    assert linked["total"] == 1
    # a number first seen on WhatsApp, then added to a CRM contact: linked when the identity is added
    inbound(deliver, wa, "buenas", sender="5215587654321")
    later = client.post(crm(org, "/contacts"), json={"name": "Luis"}, headers=org.headers()).get_json()
    added = client.post(
        crm(org, f"/contacts/{later['id']}/identities"),
        json={"kind": "phone", "value": "+525587654321"},
        headers=org.headers(),
    )
    assert added.status_code in (200, 201), added.get_json()
    found = client.get(
        msg(org, f"/conversations?crm_contact_id={later['id']}"), headers=org.headers()
    ).get_json()
    assert found["total"] == 1 and found["data"][0]["contact_address"] == "+525587654321"


def test_a_messaging_contact_links_only_to_a_crm_contact_of_its_organization(
    client: FlaskClient, org: Org, other_org: Org
) -> None:
    mine = client.post(crm(org, "/contacts"), json={"name": "Ana"}, headers=org.headers()).get_json()
    theirs = client.post(
        crm(other_org, "/contacts"), json={"name": "Eve"}, headers=other_org.headers()
    ).get_json()
    address = [{"service": "whatsapp", "address": "+525511112222"}]
    for crm_contact_id in (theirs["id"], str(uuid.uuid4()), "not-an-id"):
        refused = client.post(
            msg(org, "/contacts"),
            json={"name": "X", "addresses": address, "crm_contact_id": crm_contact_id},
            headers=org.headers(),
        )
        assert refused.status_code == 404 and refused.get_json()["message"] == "CRM contact not found"
    linked = client.post(
        msg(org, "/contacts"),
        json={"name": "Ana", "addresses": address, "crm_contact_id": mine["id"]},
        headers=org.headers(),
    )
    assert linked.status_code == 201 and linked.get_json()["crm_contact_id"] == mine["id"]
    moved = client.patch(
        msg(org, f"/contacts/{linked.get_json()['id']}"),
        json={"crm_contact_id": theirs["id"]},
        headers=org.headers(),
    )
    assert moved.status_code == 404


def _first_messages(client: FlaskClient, org: Org, wa: Channel, deliver, queries, senders: int) -> int:
    """One delivery with a first message from each of ``senders`` new numbers, every third of them a CRM
    contact's; how many SQL statements storing it took."""
    numbers = [f"5255{uuid.uuid4().int % 10**8:08d}" for _ in range(senders)]
    for number in numbers[::3]:
        created = client.post(
            crm(org, "/contacts"),
            json={"name": f"Known {number[-4:]}", "identities": [{"kind": "phone", "value": f"+{number}"}]},
            headers=org.headers(),
        )
        assert created.status_code == 201, created.get_json()
    payload = wa_delivery(wa_change(wa.address, messages=[wa_text(number, "hola") for number in numbers]))
    with queries() as counted:
        assert deliver(payload).status_code == 200
    contacts = client.get(msg(org, "/contacts?take=100"), headers=org.headers()).get_json()["data"]
    linked = {c["addresses"][0]["address"] for c in contacts if c["crm_contact_id"]}
    assert {f"+{n}" for n in numbers[::3]} <= linked  # each known number linked on arrival
    assert not {f"+{n}" for n in numbers if n not in numbers[::3]} & linked
    return counted.count


def test_first_messages_from_many_numbers_link_their_crm_contacts_in_one_query(
    client: FlaskClient, org: Org, wa: Channel, deliver, queries
) -> None:
    few = _first_messages(client, org, wa, deliver, queries, senders=3)
    many = _first_messages(client, org, wa, deliver, queries, senders=12)
    assert many == few  # not one CRM lookup per new contact
