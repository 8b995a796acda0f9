"""Small helpers shared by the messaging tests."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import messaging_delivery, messaging_text, wa_change, wa_delivery, wa_text

CONTACT = "5215512345678"  # the WhatsApp id of a Mexican mobile (old 521 form)
CONTACT_E164 = "+525512345678"


def open_window(deliver: Deliver, channel: Channel, contact: str = CONTACT) -> None:
    """The contact writes first, which opens the 24-hour service window."""
    if channel.service == "whatsapp":
        payload = wa_delivery(wa_change(channel.address, messages=[wa_text(contact, "hola")]))
    else:
        kind = "instagram" if channel.service == "instagram" else "page"
        payload = messaging_delivery(kind, channel.address, messaging_text(channel.address, contact, "hi"))
    response = deliver(payload)
    assert response.status_code == 200 and response.get_json()["messages_created"] == 1


def text_body(
    channel: Channel, contact: str = CONTACT, text: str = "Hello!", **content: Any
) -> dict[str, Any]:
    return {
        "organization_address": channel.address,
        "service": channel.service,
        "contact_address": contact,
        "direction": "outgoing",
        "content": {"kind": "text", "text": text, **content},
    }


def send(client: FlaskClient, channel: Channel, body: dict[str, Any], **headers: str) -> Any:
    return client.post(channel.path("/messages"), json=body, headers={**channel.org.headers(), **headers})


def get_message(client: FlaskClient, channel: Channel, message_id: str) -> dict[str, Any]:
    response = client.get(channel.path(f"/messages/{message_id}"), headers=channel.org.headers())
    assert response.status_code == 200
    return response.get_json()
