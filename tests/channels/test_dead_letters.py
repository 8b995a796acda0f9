"""Poison deliveries: one bad message or status never drops the good ones of its batch. What can be
cleaned is cleaned (NUL removed, lone surrogates replaced with U+FFFD); what cannot be stored is recorded
as a dead letter, readable at ``GET {msg}/dead-letters`` (or, without a known organization, with
``flask webhooks dead-letters``), and the delivery is answered 200."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.channels.inbound import DeliveryReport, Event, InboundMessage, inbound_events
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import (
    messaging_delivery,
    messaging_text,
    wa_change,
    wa_delivery,
    wa_status,
    wa_text,
)

SENDERS = ("5215511110001", "5215511110002", "5215511110003")


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _nul_text(message: dict[str, Any], change: dict[str, Any]) -> None:
    message["text"]["body"] = "hel\u0000lo"


def _nul_profile_name(message: dict[str, Any], change: dict[str, Any]) -> None:
    for contact in change["value"]["contacts"]:
        if contact["wa_id"] == message["from"]:
            contact["profile"]["name"] = "Ana\u0000 Ruiz"


def _lone_surrogate(message: dict[str, Any], change: dict[str, Any]) -> None:
    message["text"]["body"] = "a\ud800b"


def _huge_timestamp(message: dict[str, Any], change: dict[str, Any]) -> None:
    message["timestamp"] = "99999999999999999999"


def _deeply_nested(message: dict[str, Any], change: dict[str, Any]) -> None:
    message["text"]["body"] = _nested(200)


def _from_not_a_number(message: dict[str, Any], change: dict[str, Any]) -> None:
    message["from"] = "abc"


def _without_id(message: dict[str, Any], change: dict[str, Any]) -> None:
    del message["id"]


Poison = Callable[[dict[str, Any], dict[str, Any]], None]

# (poison, what the second message is stored as, or the dead letter's reason)
CLEANED: list[tuple[Poison, str, str]] = [
    (_nul_text, "text", "hello"),
    (_nul_profile_name, "name", "Ana Ruiz"),
    (_lone_surrogate, "text", "a\ufffdb"),
]
REFUSED: list[tuple[Poison, str]] = [
    (_huge_timestamp, "timestamp: not a Unix time"),
    (_deeply_nested, "nested deeper than 32 levels"),
    (_from_not_a_number, "from: not a phone number"),
    (_without_id, "id: missing"),
]


def _batch(channel: Channel, poison: Poison) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    messages = [wa_text(sender, f"message {n}") for n, sender in enumerate(SENDERS)]
    change = wa_change(channel.address, messages=messages)
    poison(messages[1], change)
    return wa_delivery(change), messages


def _messages(client: FlaskClient, channel: Channel) -> list[dict[str, Any]]:
    response = client.get(channel.path("/messages?take=50"), headers=channel.org.headers())
    assert response.status_code == 200
    return response.get_json()["data"]


def _dead_letters(client: FlaskClient, org: Org) -> dict[str, Any]:
    response = client.get(f"/v2/messages/organizations/{org.id}/dead-letters", headers=org.headers())
    assert response.status_code == 200
    return response.get_json()


@pytest.mark.parametrize(("poison", "field", "stored"), CLEANED, ids=[c[0].__name__[1:] for c in CLEANED])
def test_text_postgresql_cannot_store_is_cleaned_and_the_batch_kept(
    client: FlaskClient, wa: Channel, deliver: Deliver, poison: Poison, field: str, stored: str
) -> None:
    payload, messages = _batch(wa, poison)
    response = deliver(payload)
    assert response.status_code == 200
    assert response.get_json()["messages_created"] == 3
    assert response.get_json()["dead_letters"] == 0
    listed = {m["external_id"]: m for m in _messages(client, wa)}
    assert set(listed) == {m["id"] for m in messages}
    second = listed[messages[1]["id"]]
    if field == "text":
        assert second["content"]["text"] == stored
    else:
        conversation = client.get(
            wa.path(f"/conversations/{second['conversation_id']}"), headers=wa.org.headers()
        ).get_json()
        assert conversation["contact"]["name"] == stored
    assert _dead_letters(client, wa.org)["total"] == 0


@pytest.mark.parametrize(("poison", "reason"), REFUSED, ids=[r[0].__name__[1:] for r in REFUSED])
def test_a_poisoned_batch_of_three_stores_the_two_good_messages_and_records_the_bad_one(
    client: FlaskClient, wa: Channel, deliver: Deliver, poison: Poison, reason: str
) -> None:
    payload, messages = _batch(wa, poison)
    response = deliver(payload)
    assert response.status_code == 200
    assert (response.get_json()["messages_created"], response.get_json()["dead_letters"]) == (2, 1)
    assert [m["content"]["text"] for m in _messages(client, wa)] == ["message 0", "message 2"]
    letters = _dead_letters(client, wa.org)
    assert letters["total"] == 1 and (letters["skip"], letters["take"]) == (0, 20)
    letter = letters["data"][0]
    assert letter["reason"] == reason
    assert (letter["organization_id"], letter["source"]) == (wa.org.id, "webhook/meta")
    assert (letter["service"], letter["organization_address"]) == ("whatsapp", wa.address)
    assert json.loads(letter["raw"]) == messages[1]  # the item exactly as received
    assert letter["raw_truncated"] is False and letter["received_at"].endswith("Z")


def test_dead_letters_belong_to_their_organization(
    client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    deliver(_batch(wa, _without_id)[0])
    assert _dead_letters(client, wa.org)["total"] == 1
    assert _dead_letters(client, other_org)["total"] == 0
    response = client.get(f"/v2/messages/organizations/{wa.org.id}/dead-letters", headers=other_org.headers())
    assert response.status_code in (401, 403, 404)


def test_a_status_without_id_is_a_dead_letter_and_the_other_status_applies(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    good = wa_status("wamid.UNKNOWN0001", "delivered", SENDERS[0])
    bad = wa_status("x", "read", SENDERS[0])
    bad["id"] = ""
    response = deliver(wa_delivery(wa_change(wa.address, statuses=[good, bad])))
    assert response.status_code == 200
    assert (response.get_json()["statuses_waiting"], response.get_json()["dead_letters"]) == (1, 1)
    assert _dead_letters(client, wa.org)["data"][0]["reason"] == "id: missing"


def test_a_messenger_item_without_mid_is_a_dead_letter(
    client: FlaskClient, fb: Channel, deliver: Deliver
) -> None:
    good = messaging_text(fb.address, "2468013579", "hi")
    bad = messaging_text(fb.address, "2468013579", "lost")
    del bad["message"]["mid"]
    response = deliver(messaging_delivery("page", fb.address, good, bad))
    assert (response.status_code, response.get_json()["messages_created"]) == (200, 1)
    assert _dead_letters(client, fb.org)["data"][0]["reason"] == "message.mid: missing"


def test_poison_for_an_unknown_address_is_kept_for_operators_only(
    client: FlaskClient, wa: Channel, deliver: Deliver, runner: FlaskCliRunner
) -> None:
    payload, _ = _batch(Channel(wa.org, "whatsapp", "999000111222"), _from_not_a_number)
    response = deliver(payload)
    assert response.status_code == 200 and response.get_json()["dead_letters"] == 1
    assert _dead_letters(client, wa.org)["total"] == 0
    result = runner.invoke(args=["webhooks", "dead-letters", "--unassigned", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["organization_id"], r["organization_address"], r["reason"]) for r in rows] == [
        (None, "999000111222", "from: not a phone number")
    ]
    text = runner.invoke(args=["webhooks", "dead-letters"])
    assert "from: not a phone number" in text.output


def test_an_item_failing_in_storage_is_a_dead_letter_and_the_others_are_stored(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    from blueprints.messaging.ingest import store_item

    def fragile_store(*, events: list[Event]) -> DeliveryReport:
        if any(isinstance(e, InboundMessage) and e.content.get("text") == "boom" for e in events):
            raise ValueError("the store refused this item")
        return store_item(events=events)

    messages = [wa_text(SENDERS[0], "first"), wa_text(SENDERS[1], "boom"), wa_text(SENDERS[2], "third")]
    with inbound_events.only(fragile_store):
        response = deliver(wa_delivery(wa_change(wa.address, messages=messages)))
    assert response.status_code == 200
    assert (response.get_json()["messages_created"], response.get_json()["dead_letters"]) == (2, 1)
    assert [m["content"]["text"] for m in _messages(client, wa)] == ["first", "third"]
    letter = _dead_letters(client, wa.org)["data"][0]
    assert letter["reason"] == "not stored: ValueError: the store refused this item"
    assert json.loads(letter["raw"])["id"] == messages[1]["id"]


def test_a_body_too_deep_to_parse_is_400(deliver: Deliver) -> None:
    body = ("[" * 5000 + "]" * 5000).encode()
    response = deliver(body)
    assert response.status_code == 400
    assert response.get_json() == {"statusCode": 400, "message": "Request body must be a JSON object"}
