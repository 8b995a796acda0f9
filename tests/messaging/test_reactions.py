"""Reactions of contacts to messages: stored on the message they point to, replaced, removed, never
brought back by a late delivery, and announced with ``message.updated``."""

from __future__ import annotations

import time
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from core.realtime import socketio
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_reactions import messaging_reaction, wa_reaction
from tests.fakes.meta_webhooks import messaging_delivery, messaging_text, wa_change, wa_delivery, wa_text
from tests.messaging.helpers import CONTACT, CONTACT_E164, get_message, open_window, send, text_body

OTHER_CONTACT = "5215599998888"


def react(deliver: Deliver, channel: Channel, *items: dict[str, Any]) -> dict[str, Any]:
    response = deliver(wa_delivery(wa_change(channel.address, messages=list(items))))
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def sent_reply(client: FlaskClient, deliver: Deliver, wa: Channel) -> dict[str, Any]:
    open_window(deliver, wa)
    response = send(client, wa, text_body(wa, text="Your order ships today"))
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_a_reaction_is_stored_replaced_and_removed(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    reply = sent_reply(client, deliver, wa)
    now = int(time.time())
    report = react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "👍", timestamp=str(now)))
    assert (report["reactions_applied"], report["messages_created"]) == (1, 0)
    stored = get_message(client, wa, reply["id"])
    assert [(r["emoji"], r["from"]) for r in stored["reactions"]] == [("👍", CONTACT_E164)]
    assert stored["reactions"][0]["at"].endswith("Z")

    # the same person reacting again replaces their reaction: one per person
    react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "❤️", timestamp=str(now + 1)))
    assert [r["emoji"] for r in get_message(client, wa, reply["id"])["reactions"]] == ["❤️"]

    # an empty emoji removes it; a late delivery of the older reaction does not bring it back
    react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "", timestamp=str(now + 2)))
    assert get_message(client, wa, reply["id"])["reactions"] == []
    react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "❤️", timestamp=str(now + 1)))
    assert get_message(client, wa, reply["id"])["reactions"] == []

    # a reaction is not a message: the thread holds the two messages it had
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert listed["total"] == 2
    assert [m["reactions"] for m in listed["data"]] == [[], []]


def test_reactions_to_the_contacts_own_message_and_out_of_order_news(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    incoming = wa_text(CONTACT, "Look at this")
    react(deliver, wa, incoming)
    message_id = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"][0]["id"]
    now = int(time.time())
    # the newer reaction arrives first, the older one after it: the newer stays
    react(deliver, wa, wa_reaction(CONTACT, incoming["id"], "😂", timestamp=str(now)))
    react(deliver, wa, wa_reaction(CONTACT, incoming["id"], "😮", timestamp=str(now - 30)))
    assert [r["emoji"] for r in get_message(client, wa, message_id)["reactions"]] == ["😂"]
    # a redelivered removal that arrived before its reaction keeps the reaction away
    removal_then_reaction = [
        wa_reaction(CONTACT, incoming["id"], "", timestamp=str(now + 10)),
        wa_reaction(CONTACT, incoming["id"], "🙏", timestamp=str(now + 5)),
    ]
    report = react(deliver, wa, *removal_then_reaction)
    assert report["reactions_applied"] == 2
    assert get_message(client, wa, message_id)["reactions"] == []


def test_a_reaction_to_an_unknown_or_foreign_message_is_counted_and_dropped(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    reply = sent_reply(client, deliver, wa)
    report = react(deliver, wa, wa_reaction(CONTACT, "wamid.NOT-OURS", "👍"))
    assert (report["reactions_applied"], report["reactions_unmatched"], report["dead_letters"]) == (0, 1, 0)
    # another person cannot react to a message of this contact's thread
    report = react(deliver, wa, wa_reaction(OTHER_CONTACT, reply["external_id"], "👎"))
    assert report["reactions_unmatched"] == 1
    assert get_message(client, wa, reply["id"])["reactions"] == []
    # a reaction naming no message is not stored anywhere (acknowledged, like other non-content items)
    nameless = {"from": CONTACT, "id": "wamid.X1", "timestamp": str(int(time.time())), "type": "reaction"}
    report = react(deliver, wa, {**nameless, "reaction": {"emoji": "👍"}})
    assert (report["ignored"], report["reactions_unmatched"], report["messages_created"]) == (1, 0, 0)


def test_a_reaction_publishes_message_updated_with_the_reactions(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    reply = sent_reply(client, deliver, wa)
    mine = socketio.test_client(app, auth={"api_key": wa.org.live_key})
    theirs = socketio.test_client(app, auth={"api_key": other_org.live_key})
    react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "🎉"))
    updates = [p["args"][0] for p in mine.get_received() if p["name"] == "message.updated"]
    assert [u["data"]["id"] for u in updates] == [reply["id"]]
    assert [r["emoji"] for r in updates[0]["data"]["reactions"]] == ["🎉"]
    assert [p for p in theirs.get_received() if p["name"] == "message.updated"] == []
    # the same news again changes nothing and announces nothing
    before = get_message(client, wa, reply["id"])["reactions"]
    at = int(time.time()) - 1
    react(deliver, wa, wa_reaction(CONTACT, reply["external_id"], "🎉", timestamp=str(at)))
    assert [p for p in mine.get_received() if p["name"] == "message.updated"] == []
    assert get_message(client, wa, reply["id"])["reactions"] == before


def test_messenger_reactions_and_unreactions(client: FlaskClient, fb: Channel, deliver: Deliver) -> None:
    psid = "24681357900"
    item = messaging_text(fb.address, psid, "hi")
    assert deliver(messaging_delivery("page", fb.address, item)).status_code == 200
    message_id = client.get(fb.path("/messages"), headers=fb.org.headers()).get_json()["data"][0]["id"]
    mid = item["message"]["mid"]
    now_ms = int(time.time() * 1000)
    deliver(
        messaging_delivery(
            "page", fb.address, messaging_reaction(fb.address, psid, mid, "❤", timestamp_ms=now_ms)
        )
    )
    assert [(r["emoji"], r["from"]) for r in get_message(client, fb, message_id)["reactions"]] == [
        ("❤", psid)
    ]
    unreact = messaging_reaction(fb.address, psid, mid, "", action="unreact", timestamp_ms=now_ms + 1000)
    deliver(messaging_delivery("page", fb.address, unreact))
    assert get_message(client, fb, message_id)["reactions"] == []
