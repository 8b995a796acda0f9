"""``POST {msg}/messages``: free text and media inside the window, every spec error, Meta's error codes
mapped, Instagram and Messenger, and ``Idempotency-Key``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from blueprints.messaging.models import Contact, Conversation, Message
from core.db import db
from tests.conftest import Org
from tests.fakes.fixtures import TOKEN, Channel, Connect, Deliver, msg
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.messaging.helpers import CONTACT, CONTACT_E164, get_message, open_window, send, text_body

FAILED = {"statusCode": 400, "message": "Message failed to send"}


def test_text_inside_the_window_is_sent_and_answers_201(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    response = send(client, wa, text_body(wa, contact="525512345678"))
    assert response.status_code == 201
    message = response.get_json()
    assert set(message["status"]) == {"pending", "accepted"}
    assert message["current_status"] == "accepted"
    assert message["external_id"].startswith("wamid.")
    assert message["direction"] == "outgoing" and message["contact_address"] == CONTACT_E164
    [request] = meta.sends()
    assert request.path == f"/v23.0/{wa.address}/messages"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    # replies go to the wa_id Meta gave us for this person
    assert request.body == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": CONTACT,
        "type": "text",
        "text": {"preview_url": False, "body": "Hello!"},
    }
    assert get_message(client, wa, message["id"]) == message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            {
                "kind": "image",
                "text": "The best succulent",
                "file": {"uri": "https://x.test/a.png", "mime_type": "image/png"},
            },
            {"type": "image", "image": {"link": "https://x.test/a.png", "caption": "The best succulent"}},
        ),
        (
            {
                "kind": "video",
                "text": "Demo",
                "file": {"uri": "https://x.test/v.mp4", "mime_type": "video/mp4"},
            },
            {"type": "video", "video": {"link": "https://x.test/v.mp4", "caption": "Demo"}},
        ),
        (
            {"kind": "audio", "file": {"uri": "https://x.test/n.ogg", "mime_type": "audio/ogg"}},
            {"type": "audio", "audio": {"link": "https://x.test/n.ogg"}},
        ),
        (
            {
                "kind": "document",
                "text": "Your invoice",
                "file": {
                    "uri": "https://x.test/i.pdf",
                    "mime_type": "application/pdf",
                    "filename": "invoice.pdf",
                },
            },
            {
                "type": "document",
                "document": {
                    "link": "https://x.test/i.pdf",
                    "caption": "Your invoice",
                    "filename": "invoice.pdf",
                },
            },
        ),
        (
            {"kind": "location", "location": {"latitude": 19.43, "longitude": -99.13, "name": "Zócalo"}},
            {"type": "location", "location": {"latitude": 19.43, "longitude": -99.13, "name": "Zócalo"}},
        ),
    ],
)
def test_each_media_kind_is_sent_in_metas_shape(
    client: FlaskClient,
    wa: Channel,
    deliver: Deliver,
    meta: FakeMetaGraph,
    content: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    open_window(deliver, wa)
    body = {**text_body(wa), "content": content}
    response = send(client, wa, body)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["content"]["kind"] == content["kind"]
    sent = meta.sends()[0].body
    assert {k: v for k, v in sent.items() if k in ("type", expected["type"])} == expected


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"content": None}, "content"),
        ({"content": {"kind": "text"}}, "content"),
        ({"content": {"kind": "sticker", "text": "x"}}, "content.kind"),
        ({"content": {"kind": "image", "text": "x"}}, "content"),
        (
            {
                "content": {
                    "kind": "audio",
                    "text": "no",
                    "file": {"uri": "https://x.test/a.ogg", "mime_type": "audio/ogg"},
                }
            },
            "content",
        ),
        (
            {"content": {"kind": "image", "file": {"uri": "ftp://x.test/a.png", "mime_type": "image/png"}}},
            "content.file.uri",
        ),
        (
            {
                "content": {
                    "kind": "image",
                    "file": {"uri": "https://x.test/a.pdf", "mime_type": "application/pdf"},
                }
            },
            "content",
        ),
        ({"content": {"kind": "text", "text": "x" * 4097}}, "content.text"),
        ({"direction": "incoming"}, "direction"),
        ({"service": "telegram"}, "service"),
        ({"organization_address": ""}, "organization_address"),
        ({"contact_address": None}, "contact_address"),
    ],
)
def test_invalid_bodies_are_400_naming_the_field(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, change: dict[str, Any], field: str
) -> None:
    body = {**text_body(wa), **change}
    if body.get("content") is None:
        del body["content"]
    if body.get("contact_address") is None:
        del body["contact_address"]
    response = send(client, wa, body)
    assert response.status_code == 400
    payload = response.get_json()
    assert set(payload) == {"statusCode", "message"} and payload["statusCode"] == 400
    assert payload["message"].startswith(f"{field}:"), payload
    assert meta.sends() == []


def test_an_invalid_phone_number_is_400(client: FlaskClient, wa: Channel, meta: FakeMetaGraph) -> None:
    response = send(client, wa, text_body(wa, contact="12"))
    assert response.get_json() == {"statusCode": 400, "message": "contact_address: not a valid phone number"}


def test_unknown_organization_address_is_404(client: FlaskClient, wa: Channel) -> None:
    body = {**text_body(wa), "organization_address": "000000"}
    response = send(client, wa, body)
    assert response.status_code == 404
    assert response.get_json() == {"statusCode": 404, "message": "Organization address not found"}


def test_another_organizations_address_is_404_and_its_path_403(
    client: FlaskClient, wa: Channel, other_org: Org
) -> None:
    theirs = Channel(other_org, "whatsapp", wa.address)
    assert send(client, theirs, text_body(wa)).status_code == 404
    forbidden = client.post(msg(wa.org, "/messages"), json=text_body(wa), headers=other_org.headers())
    assert forbidden.status_code == 403
    assert forbidden.get_json() == {
        "statusCode": 403,
        "message": "You do not have access to this organization",
    }


def test_address_without_access_token_is_400(
    client: FlaskClient, org: Org, connect: Connect, meta: FakeMetaGraph
) -> None:
    connect(org, "whatsapp", "555000", token=None)
    channel = Channel(org, "whatsapp", "555000")
    response = send(client, channel, text_body(channel))
    assert response.status_code == 400
    assert response.get_json() == {
        "statusCode": 400,
        "message": "Organization address does not have an access token",
    }
    assert meta.sends() == []


def test_service_must_match_the_address(client: FlaskClient, wa: Channel) -> None:
    response = send(client, wa, {**text_body(wa), "service": "instagram"})
    assert response.status_code == 400
    assert response.get_json()["message"].startswith("service:")


def _stored(app: Flask) -> dict[str, Any]:
    """What the stores hold: row counts and each conversation's last_message_at."""
    with app.app_context():
        return {
            "contacts": db.session.scalar(select(func.count()).select_from(Contact)),
            "messages": db.session.scalar(select(func.count()).select_from(Message)),
            "conversations": sorted(
                (str(c.id), str(c.last_message_at)) for c in db.session.scalars(select(Conversation))
            ),
        }


def test_a_send_refused_for_a_closed_window_leaves_nothing_behind(
    app: Flask, client: FlaskClient, wa: Channel, meta: FakeMetaGraph
) -> None:
    response = send(client, wa, text_body(wa))
    assert response.status_code == 400 and response.get_json() == FAILED
    assert "X-Message-Id" not in response.headers  # no message was kept to point at
    assert _stored(app) == {"contacts": 0, "messages": 0, "conversations": []}
    assert meta.sends() == []  # the desk knew: no call to Meta


def test_a_closed_window_keeps_the_existing_conversation_as_it_was(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    two_days_ago = str(int(time.time()) - 2 * 24 * 3600)
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text(CONTACT, "hola", timestamp=two_days_ago)])))
    before = _stored(app)
    assert before["messages"] == 1 and len(before["conversations"]) == 1
    response = send(client, wa, text_body(wa))
    assert response.status_code == 400 and response.get_json() == FAILED
    assert _stored(app) == before  # no failed message, last_message_at not moved
    assert meta.sends() == []


def test_a_send_refused_for_another_reason_leaves_nothing_behind(
    app: Flask, client: FlaskClient, wa: Channel, ig: Channel
) -> None:
    refused = [
        send(client, wa, text_body(wa, contact="12")),  # not a phone number
        send(client, wa, {**text_body(wa), "organization_address": "unknown"}),
        send(client, wa, {**text_body(wa), "service": "instagram"}),
        send(
            client,
            ig,
            {
                **text_body(ig, contact="1234"),
                "content": {"kind": "location", "location": {"latitude": 1, "longitude": 2}},
            },
        ),
    ]
    assert [r.status_code for r in refused] == [400, 404, 400, 400]
    assert _stored(app) == {"contacts": 0, "messages": 0, "conversations": []}


def _failed_send(client: FlaskClient, channel: Channel, status: int = 400) -> dict[str, Any]:
    response = send(client, channel, text_body(channel))
    assert response.status_code == status, response.get_json()
    assert response.get_json()["message"] == "Message failed to send"
    return get_message(client, channel, response.headers["X-Message-Id"])


def test_meta_131047_is_mapped(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    meta.outside_window.add(CONTACT)  # Meta sees the window closed although the desk does not
    error = _failed_send(client, wa)["status"]["error"]
    assert error["code"] == 131047 and error["title"] == "Re-engagement message"
    assert "24 hours" in error["details"] and error["provider"] == "meta"


def test_meta_130429_is_429_with_retry_after(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    meta.rate_limited.add(CONTACT)
    response = send(client, wa, text_body(wa))
    assert response.status_code == 429
    assert response.get_json() == {"statusCode": 429, "message": "Message failed to send"}
    assert int(response.headers["Retry-After"]) > 0
    assert get_message(client, wa, response.headers["X-Message-Id"])["status"]["error"]["code"] == 130429


def test_meta_131026_is_mapped(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    meta.undeliverable.add(CONTACT)
    assert _failed_send(client, wa)["status"]["error"]["code"] == 131026


def test_meta_190_marks_the_address_for_reauthentication(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph, connect: Connect
) -> None:
    open_window(deliver, wa)
    meta.tokens.clear()
    meta.expired_tokens.add(TOKEN)
    error = _failed_send(client, wa)["status"]["error"]
    assert error["code"] == 190 and error["subcode"] == 463
    [address] = client.get(wa.path("/addresses"), headers=wa.org.headers()).get_json()
    assert address["status"] == "reauth_required"
    blocked = send(client, wa, text_body(wa))
    assert blocked.status_code == 400
    assert blocked.get_json()["message"] == "Organization address is not connected (status reauth_required)"
    assert len(meta.sends()) == 1
    meta.tokens.add("EAAfresh")
    connect(wa.org, "whatsapp", wa.address, token="EAAfresh")
    assert send(client, wa, text_body(wa)).status_code == 201


def test_meta_server_error_is_502_and_a_send_is_not_repeated(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    meta.server_errors = 1
    response = send(client, wa, text_body(wa))
    assert response.status_code == 502
    assert response.get_json() == {"statusCode": 502, "message": "Message failed to send"}
    assert len(meta.sends()) == 1  # Meta may have sent it: never retried


def test_unreachable_provider_is_retried_then_502(
    client: FlaskClient, wa: Channel, deliver: Deliver, app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blueprints.channels import meta as meta_module

    open_window(deliver, wa)
    monkeypatch.setattr(meta_module, "RETRY_PAUSES", (0.0, 0.0))
    app.config["META_GRAPH_URL"] = "http://127.0.0.1:9/v23.0"  # nothing listens on port 9
    response = send(client, wa, text_body(wa))
    assert response.status_code == 502
    assert get_message(client, wa, response.headers["X-Message-Id"])["status"]["error"]["code"] == "network"


# ---- Idempotency-Key ----


def test_same_key_and_body_replays_the_first_result(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    first = send(client, wa, text_body(wa), **{"Idempotency-Key": "order-42"})
    again = send(client, wa, text_body(wa), **{"Idempotency-Key": "order-42"})
    assert first.status_code == again.status_code == 201
    assert again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert len(meta.sends()) == 1
    listed = client.get(
        wa.path("/messages"), headers=wa.org.headers(), query_string={"direction": "outgoing"}
    )
    assert listed.get_json()["total"] == 1


def test_same_key_with_another_body_is_409(client: FlaskClient, wa: Channel, deliver: Deliver) -> None:
    open_window(deliver, wa)
    assert send(client, wa, text_body(wa), **{"Idempotency-Key": "k1"}).status_code == 201
    response = send(client, wa, text_body(wa, text="Different"), **{"Idempotency-Key": "k1"})
    assert response.status_code == 409
    assert response.get_json() == {
        "statusCode": 409,
        "message": "Idempotency-Key was already used with a different request",
    }


def test_errors_replay_and_keys_are_per_organization(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph, make_org: Any, connect: Connect
) -> None:
    first = send(client, wa, text_body(wa), **{"Idempotency-Key": "k2"})  # outside the window
    again = send(client, wa, text_body(wa), **{"Idempotency-Key": "k2"})
    assert first.status_code == again.status_code == 400
    assert again.get_json() == FAILED and again.headers["Idempotent-Replayed"] == "true"
    open_window(deliver, wa)
    # the answer was kept: the same key still says 400 although the window is open now
    assert send(client, wa, text_body(wa), **{"Idempotency-Key": "k2"}).status_code == 400
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert listed["total"] == 1  # only the contact's message
    # a provider refusal is kept with its message id
    meta.undeliverable.add(CONTACT)
    failed = send(client, wa, text_body(wa, text="x"), **{"Idempotency-Key": "k4"})
    replay = send(client, wa, text_body(wa, text="x"), **{"Idempotency-Key": "k4"})
    assert failed.status_code == replay.status_code == 400
    assert replay.headers["X-Message-Id"] == failed.headers["X-Message-Id"]
    meta.undeliverable.clear()
    other = make_org()
    connect(other, "whatsapp", "106540352240000")
    other_channel = Channel(other, "whatsapp", "106540352240000")
    open_window(deliver, other_channel)
    # another organization's k2 is its own key
    assert (
        send(client, other_channel, text_body(other_channel), **{"Idempotency-Key": "k2"}).status_code == 201
    )


def test_retryable_errors_are_not_kept(
    client: FlaskClient, wa: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    open_window(deliver, wa)
    meta.rate_limited.add(CONTACT)
    assert send(client, wa, text_body(wa), **{"Idempotency-Key": "k3"}).status_code == 429
    meta.rate_limited.clear()
    assert send(client, wa, text_body(wa), **{"Idempotency-Key": "k3"}).status_code == 201


# ---- Instagram and Messenger outbound ----


def test_instagram_text_and_image_use_the_send_api(
    client: FlaskClient, ig: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    igsid = "1234567890123456"
    open_window(deliver, ig, igsid)
    text = send(client, ig, text_body(ig, contact=igsid, text="Yes, it is!"))
    assert text.status_code == 201, text.get_json()
    image = send(
        client,
        ig,
        {
            **text_body(ig, contact=igsid),
            "content": {"kind": "image", "file": {"uri": "https://x.test/p.jpg", "mime_type": "image/jpeg"}},
        },
    )
    assert image.status_code == 201
    bodies = [r.body for r in meta.sends()]
    assert bodies[0] == {
        "recipient": {"id": igsid},
        "messaging_type": "RESPONSE",
        "message": {"text": "Yes, it is!"},
    }
    assert bodies[1]["message"] == {
        "attachment": {"type": "image", "payload": {"url": "https://x.test/p.jpg", "is_reusable": True}}
    }
    assert text.get_json()["external_id"].startswith("m_")
    assert meta.sends()[0].path == f"/v23.0/{ig.address}/messages"


def test_instagram_limits(client: FlaskClient, ig: Channel, deliver: Deliver) -> None:
    igsid = "1234567890123456"
    open_window(deliver, ig, igsid)
    too_long = send(client, ig, text_body(ig, contact=igsid, text="ñ" * 600))
    assert too_long.status_code == 400 and too_long.get_json()["message"].startswith("content.text:")
    caption = {
        **text_body(ig, contact=igsid),
        "content": {
            "kind": "image",
            "text": "c",
            "file": {"uri": "https://x.test/p.jpg", "mime_type": "image/jpeg"},
        },
    }
    assert send(client, ig, caption).get_json()["message"].startswith("content.text:")


def test_messenger_outside_window_code_10_is_mapped(
    client: FlaskClient, fb: Channel, deliver: Deliver, meta: FakeMetaGraph
) -> None:
    psid = "2468013579"
    open_window(deliver, fb, psid)
    assert send(client, fb, text_body(fb, contact=psid)).status_code == 201
    meta.outside_window.add(psid)
    response = send(client, fb, text_body(fb, contact=psid))
    assert response.status_code == 400 and response.get_json() == FAILED
    assert get_message(client, fb, response.headers["X-Message-Id"])["status"]["error"]["code"] == 10


def test_a_key_still_in_use_is_409(app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver) -> None:
    from sqlalchemy import update

    from core.idempotency import IdempotencyKey

    open_window(deliver, wa)
    body = text_body(wa)
    assert send(client, wa, body, **{"Idempotency-Key": "busy"}).status_code == 201
    with app.app_context():
        # what a concurrent request holding the key looks like: claimed, no response yet
        db.session.execute(update(IdempotencyKey).values(response_status=None, response=None))
        db.session.commit()
    response = send(client, wa, body, **{"Idempotency-Key": "busy"})
    assert response.status_code == 409
    assert response.get_json() == {
        "statusCode": 409,
        "message": "A request with this Idempotency-Key is in progress",
    }
    assert send(client, wa, body, **{"Idempotency-Key": " "}).status_code == 400
