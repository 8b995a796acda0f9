"""Socket.IO: an inbound webhook reaches the organization's room and the conversation's room."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from core.realtime import socketio
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.messaging.helpers import CONTACT, open_window, send, text_body


def received(listener: Any, name: str) -> list[dict[str, Any]]:
    return [packet["args"][0] for packet in listener.get_received() if packet["name"] == name]


def test_inbound_webhook_reaches_the_organization_room(
    app: Flask, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    mine = socketio.test_client(app, auth={"api_key": wa.org.live_key})
    theirs = socketio.test_client(app, auth={"api_key": other_org.live_key})
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text(CONTACT, "¿Hay envío gratis?")])))
    [event] = received(mine, "message.created")
    assert event["type"] == "message.created" and event["organization_id"] == wa.org.id
    assert event["data"]["content"] == {"kind": "text", "text": "¿Hay envío gratis?"}
    assert event["data"]["direction"] == "incoming"
    assert received(theirs, "message.created") == []


def test_joining_a_conversation_room_and_its_guard(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    open_window(deliver, wa)
    conversation_id = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"][0][
        "conversation_id"
    ]
    follower = socketio.test_client(app, auth={"api_key": wa.org.live_key})
    outsider = socketio.test_client(app, auth={"api_key": other_org.live_key})
    assert follower.emit("join_conversation", {"conversation_id": conversation_id}, callback=True) == {
        "ok": True,
        "room": f"live:conversation:{conversation_id}",
    }
    assert outsider.emit("join_conversation", {"conversation_id": conversation_id}, callback=True) == {
        "ok": False,
        "error": "Conversation not found",
    }
    assert outsider.emit("join_conversation", {"conversation_id": "nope"}, callback=True)["ok"] is False
    follower.get_received()
    outsider.get_received()
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text(CONTACT, "otra pregunta")])))
    # in the organization room and the conversation room, and still delivered once
    assert [e["data"]["content"]["text"] for e in received(follower, "message.created")] == ["otra pregunta"]
    assert received(outsider, "message.created") == []
    send(client, wa, text_body(wa))
    updates = received(follower, "message.updated")
    assert updates and updates[-1]["data"]["current_status"] == "accepted"
    assert follower.emit("leave_conversation", {"conversation_id": conversation_id}, callback=True) == {
        "ok": True
    }
