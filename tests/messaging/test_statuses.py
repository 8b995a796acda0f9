"""Status webhooks for sent messages: forward only, every timestamp kept, failures detailed, statuses that
outrun the send, Messenger read watermarks."""

from __future__ import annotations

import time

from flask.testing import FlaskClient

from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import (
    messaging_delivered,
    messaging_delivery,
    messaging_read,
    messaging_text,
    now_seconds,
    wa_change,
    wa_delivery,
    wa_status,
)
from tests.messaging.helpers import CONTACT, get_message, open_window, send, text_body


def _sent(client: FlaskClient, channel: Channel, deliver: Deliver, contact: str = CONTACT) -> dict:
    open_window(deliver, channel, contact)
    response = send(client, channel, text_body(channel, contact=contact))
    assert response.status_code == 201
    return response.get_json()


def test_read_then_a_late_delivered_keeps_read_and_both_timestamps(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    message = _sent(client, wa, deliver)
    wamid = message["external_id"]
    deliver(
        wa_delivery(
            wa_change(wa.address, statuses=[wa_status(wamid, "read", CONTACT, timestamp=now_seconds(20))])
        )
    )
    deliver(
        wa_delivery(
            wa_change(
                wa.address, statuses=[wa_status(wamid, "delivered", CONTACT, timestamp=now_seconds(10))]
            )
        )
    )
    deliver(
        wa_delivery(
            wa_change(wa.address, statuses=[wa_status(wamid, "sent", CONTACT, timestamp=now_seconds(5))])
        )
    )
    stored = get_message(client, wa, message["id"])
    assert stored["current_status"] == "read"
    assert set(stored["status"]) == {"pending", "accepted", "sent", "delivered", "read"}
    assert stored["status"]["read"] > stored["status"]["delivered"] > stored["status"]["sent"]


def test_a_duplicated_status_changes_nothing(client: FlaskClient, wa: Channel, deliver: Deliver) -> None:
    message = _sent(client, wa, deliver)
    payload = wa_delivery(
        wa_change(wa.address, statuses=[wa_status(message["external_id"], "delivered", CONTACT)])
    )
    assert deliver(payload).get_json()["statuses_applied"] == 1
    before = get_message(client, wa, message["id"])
    assert deliver(payload).get_json()["statuses_applied"] == 0
    assert get_message(client, wa, message["id"]) == before


def test_a_failed_status_carries_metas_error(client: FlaskClient, wa: Channel, deliver: Deliver) -> None:
    message = _sent(client, wa, deliver)
    error = {
        "code": 131047,
        "title": "Re-engagement message",
        "message": "Re-engagement message",
        "error_data": {"details": "Message failed to send because more than 24 hours have passed."},
        "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
    }
    payload = wa_delivery(
        wa_change(wa.address, statuses=[wa_status(message["external_id"], "failed", CONTACT, error=error)])
    )
    deliver(payload)
    stored = get_message(client, wa, message["id"])
    assert stored["current_status"] == "failed"
    assert stored["status"]["error"] == {
        "code": 131047,
        "title": "Re-engagement message",
        "details": "Message failed to send because more than 24 hours have passed.",
        "provider": "meta",
    }


def test_a_status_that_arrives_before_the_send_is_stored_is_applied_later(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph, monkeypatch
) -> None:
    from tests.fakes import meta_graph

    open_window(deliver, wa)
    early_id = "wamid.EARLY0000000000000001"
    waiting = deliver(
        wa_delivery(wa_change(wa.address, statuses=[wa_status(early_id, "delivered", CONTACT)]))
    )
    assert waiting.get_json()["statuses_waiting"] == 1
    monkeypatch.setattr(meta_graph, "new_wamid", lambda: early_id)
    response = send(client, wa, text_body(wa))
    assert response.status_code == 201
    stored = response.get_json()
    assert stored["external_id"] == early_id
    assert stored["current_status"] == "delivered" and "delivered" in stored["status"]


def test_messenger_delivery_and_read_watermarks(client: FlaskClient, fb: Channel, deliver: Deliver) -> None:
    psid = "2468013579"
    first = _sent(client, fb, deliver, psid)
    second = send(client, fb, text_body(fb, contact=psid, text="Second")).get_json()
    later_ms = int(time.time() * 1000) + 60_000
    deliver(
        messaging_delivery(
            "page", fb.address, messaging_delivered(fb.address, psid, [first["external_id"]], later_ms)
        )
    )
    assert get_message(client, fb, first["id"])["current_status"] == "delivered"
    deliver(messaging_delivery("page", fb.address, messaging_read(fb.address, psid, later_ms)))
    assert get_message(client, fb, first["id"])["current_status"] == "read"
    assert get_message(client, fb, second["id"])["current_status"] == "read"


def test_an_echo_of_a_desk_send_marks_it_sent(client: FlaskClient, fb: Channel, deliver: Deliver) -> None:
    psid = "2468013579"
    message = _sent(client, fb, deliver, psid)
    echo = messaging_text(fb.address, psid, "Hello!", mid=message["external_id"], echo=True)
    result = deliver(messaging_delivery("page", fb.address, echo)).get_json()
    assert (result["messages_created"], result["duplicates"]) == (0, 1)
    stored = get_message(client, fb, message["id"])
    assert stored["current_status"] == "sent" and "sent" in stored["status"]


def test_an_echo_that_outruns_the_send_is_merged_into_it(
    client: FlaskClient, fb: Channel, deliver: Deliver, meta: FakeMetaGraph, monkeypatch
) -> None:
    import secrets as secrets_module

    psid = "2468013579"
    open_window(deliver, fb, psid)
    deliver(
        messaging_delivery(
            "page", fb.address, messaging_text(fb.address, psid, "Hello!", mid="m_RACE", echo=True)
        )
    )
    monkeypatch.setattr(secrets_module, "token_urlsafe", lambda n=None: "RACE")
    response = send(client, fb, text_body(fb, contact=psid))
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["external_id"] == "m_RACE"
    assert response.get_json()["current_status"] == "sent"
    outgoing = client.get(
        fb.path("/messages"), headers=fb.org.headers(), query_string={"direction": "outgoing"}
    )
    assert outgoing.get_json()["total"] == 1
