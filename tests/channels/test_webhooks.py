"""``/webhooks/meta``: the verification handshake, signatures, batches, duplicates, out-of-order statuses
and every content kind, for WhatsApp, Instagram and Messenger."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, text

from blueprints.messaging.models import Conversation
from core.db import db, utcnow
from tests.conftest import Org
from tests.fakes.fixtures import (
    APP_SECRET,
    INSTAGRAM_ID,
    PAGE_ID,
    VERIFY_TOKEN,
    Channel,
    Deliver,
    msg,
)
from tests.fakes.meta_webhooks import (
    encode,
    messaging_attachment,
    messaging_delivery,
    messaging_text,
    now_seconds,
    sign,
    wa_change,
    wa_delivery,
    wa_location,
    wa_media,
    wa_status,
    wa_text,
    wamid,
)

SENDER = "5215512345678"


def messages(client: FlaskClient, org: Org, **query: Any) -> list[dict[str, Any]]:
    response = client.get(msg(org, "/messages"), headers=org.headers(), query_string={"take": 200, **query})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def count(app: Flask, table: str) -> int:
    with app.app_context():
        return int(db.session.scalar(text(f"SELECT count(*) FROM {table}")) or 0)


# ---- handshake ----


def test_handshake_echoes_the_challenge_when_the_token_matches(client: FlaskClient) -> None:
    response = client.get(
        "/webhooks/meta",
        query_string={
            "hub.mode": "subscribe",
            "hub.challenge": "1158201444",
            "hub.verify_token": VERIFY_TOKEN,
        },
    )
    assert response.status_code == 200
    assert response.get_data(as_text=True) == "1158201444"


def test_handshake_with_a_wrong_token_is_403(client: FlaskClient) -> None:
    response = client.get(
        "/webhooks/meta",
        query_string={"hub.mode": "subscribe", "hub.challenge": "1", "hub.verify_token": "guess"},
    )
    assert response.status_code == 403
    assert response.get_json() == {"statusCode": 403, "message": "Verification token mismatch"}


# ---- signatures ----


def test_unsigned_and_badly_signed_deliveries_are_401_and_store_nothing(
    app: Flask, wa: Channel, deliver: Deliver
) -> None:
    payload = wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "hola")]))
    body = encode(payload)
    refused = [
        deliver(payload, signed=False),
        deliver(payload, secret="another-secret"),
        deliver(payload, signature="sha256=" + "0" * 64),
        deliver(payload, signature=sign(body, APP_SECRET).replace("sha256=", "sha1=")),
        # a signature over re-serialised JSON is not a signature over the bytes received
        deliver(body.replace(b'","', b'", "'), signature=sign(body, APP_SECRET)),
    ]
    for response in refused:
        assert response.status_code == 401
        assert response.get_json() == {"statusCode": 401, "message": "Invalid signature"}
    assert count(app, "messages") == 0
    assert deliver(payload).status_code == 200
    assert count(app, "messages") == 1


def test_signature_vector_from_the_research_notes() -> None:
    from blueprints.channels.webhooks import signature_for

    expected = "sha256=0329a06b62cd16b33eb6792be8c60b158d89a2ee3a876fce9a881ebb488c0914"
    assert signature_for("secret", b"test") == expected


class TestWithoutAppSecret:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {**app_config, "META_APP_SECRET": None, "META_VERIFY_TOKEN": None}

    def test_every_delivery_is_refused(self, app: Flask, wa: Channel, deliver: Deliver) -> None:
        payload = wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "hola")]))
        assert deliver(payload).status_code == 401
        assert deliver(payload, secret="").status_code == 401
        assert count(app, "messages") == 0

    def test_the_handshake_is_refused(self, client: FlaskClient) -> None:
        query = {"hub.mode": "subscribe", "hub.challenge": "1", "hub.verify_token": ""}
        assert client.get("/webhooks/meta", query_string=query).status_code == 403


def test_a_signed_body_that_is_not_json_is_400(deliver: Deliver) -> None:
    response = deliver(b"not json")
    assert response.status_code == 400
    assert response.get_json() == {"statusCode": 400, "message": "Request body must be a JSON object"}


# ---- WhatsApp inbound ----


def test_inbound_text_creates_contact_conversation_and_message(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    sent_at = now_seconds(-60)
    message_id = wamid()
    payload = wa_delivery(
        wa_change(
            wa.address,
            messages=[wa_text(SENDER, "Does it come in another color?", id=message_id, timestamp=sent_at)],
            names={SENDER: "Sheena Nelson"},
        )
    )
    response = deliver(payload)
    assert response.status_code == 200
    assert response.get_json()["messages_created"] == 1
    [stored] = messages(client, org)
    assert stored["direction"] == "incoming"
    assert stored["external_id"] == message_id
    assert stored["content"] == {"kind": "text", "text": "Does it come in another color?"}
    assert stored["contact_address"] == "+525512345678"  # the 521 WhatsApp id folded to E.164
    assert stored["timestamp"].startswith(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(int(sent_at))))
    conversation = client.get(
        msg(org, f"/conversations/{stored['conversation_id']}"), headers=org.headers()
    ).get_json()
    assert conversation["organization_address"] == wa.address
    assert conversation["contact_address"] == "+525512345678"
    assert conversation["service"] == "whatsapp"
    assert conversation["status"] == "active"
    assert conversation["name"] == "Sheena Nelson"
    assert conversation["contact"]["name"] == "Sheena Nelson"
    assert conversation["last_message_at"] == stored["timestamp"]
    assert conversation["extra"] == {
        "member_id": None,
        "labels": [],
        "archived": None,
        "team_id": None,
        "team_name": None,
        "assignment": None,
        "flow_id": None,
        "flow_member_id": None,
    }
    contacts = client.get(msg(org, "/contacts"), headers=org.headers()).get_json()["data"]
    assert [(c["name"], c["addresses"]) for c in contacts] == [
        ("Sheena Nelson", [{"service": "whatsapp", "address": "+525512345678"}])
    ]


def test_mexican_521_and_52_forms_are_one_contact_and_one_conversation(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5215512345678", "uno")])))
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("525512345678", "dos")])))
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text("5491123456789", "tres")])))
    stored = messages(client, org)
    assert len(stored) == 3
    assert len({m["conversation_id"] for m in stored[:2]}) == 1
    assert stored[2]["contact_address"] == "+5491123456789"
    assert client.get(msg(org, "/contacts"), headers=org.headers()).get_json()["total"] == 2


def test_every_media_kind_and_location_keep_their_content(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    url = "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1"
    payload = wa_delivery(
        wa_change(
            wa.address,
            messages=[
                wa_media(SENDER, "image", caption="This one?", url=url, media_id="m1"),
                wa_media(SENDER, "video", mime_type="video/mp4", caption="Demo", media_id="m2"),
                wa_media(SENDER, "audio", mime_type="audio/ogg; codecs=opus", media_id="m3"),
                wa_media(
                    SENDER, "document", mime_type="application/pdf", filename="invoice.pdf", media_id="m4"
                ),
                wa_location(SENDER, 37.44216251868683, -122.16153582049394, name="Philz Coffee"),
            ],
        )
    )
    assert deliver(payload).get_json()["messages_created"] == 5
    by_kind = {m["content"]["kind"]: m["content"] for m in messages(client, org)}
    assert by_kind["image"] == {
        "kind": "image",
        "text": "This one?",
        "file": {"uri": url, "mime_type": "image/jpeg", "provider_id": "m1", "sha256": "4654+8g="},
    }
    assert by_kind["video"]["text"] == "Demo" and by_kind["video"]["file"]["mime_type"] == "video/mp4"
    assert by_kind["audio"]["file"]["provider_id"] == "m3" and by_kind["audio"]["text"] is None
    assert by_kind["document"]["file"]["filename"] == "invoice.pdf"
    assert by_kind["location"] == {
        "kind": "location",
        "location": {"latitude": 37.44216251868683, "longitude": -122.16153582049394, "name": "Philz Coffee"},
    }


def test_a_batch_of_entries_changes_messages_and_statuses_is_stored_whole(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    ids = [wamid() for _ in range(6)]
    changes = [
        wa_change(wa.address, messages=[wa_text(SENDER, "a", id=ids[0]), wa_text(SENDER, "b", id=ids[1])]),
        wa_change(wa.address, messages=[wa_text("5215587654321", "c", id=ids[2])]),
        wa_change(
            wa.address, messages=[wa_text(SENDER, "d", id=ids[3]), wa_text("525511112222", "e", id=ids[4])]
        ),
        wa_change(
            wa.address,
            messages=[wa_text(SENDER, "f", id=ids[5])],
            statuses=[wa_status(wamid(), "sent", SENDER)],
        ),
    ]
    response = deliver(wa_delivery(*changes, entries=2))
    assert response.status_code == 200
    body = response.get_json()
    assert body["messages_created"] == 6 and body["statuses_waiting"] == 1
    assert sorted(m["external_id"] for m in messages(client, org)) == sorted(ids)


def test_the_same_message_delivered_twice_is_one_message(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    message = wa_text(SENDER, "once", id=wamid())
    payload = wa_delivery(wa_change(wa.address, messages=[message, message]))
    first = deliver(payload).get_json()
    second = deliver(payload).get_json()
    assert (first["messages_created"], first["duplicates"]) == (1, 1)
    assert (second["messages_created"], second["duplicates"]) == (0, 2)
    assert len(messages(client, org)) == 1


def test_unknown_phone_number_ids_are_acknowledged_and_nothing_is_stored(
    app: Flask, wa: Channel, deliver: Deliver
) -> None:
    response = deliver(wa_delivery(wa_change("999999999", messages=[wa_text(SENDER, "who?")])))
    assert response.status_code == 200  # 200, or Meta would retry for seven days
    assert response.get_json()["unknown_addresses"] == ["whatsapp:999999999"]
    assert count(app, "messages") == 0 and count(app, "messaging_contacts") == 0


def test_unsupported_types_and_other_objects_are_acknowledged(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    reaction = {"from": SENDER, "id": wamid(), "timestamp": now_seconds(), "type": "reaction", "reaction": {}}
    response = deliver(wa_delivery(wa_change(wa.address, messages=[reaction, wa_text(SENDER, "ok")])))
    assert response.get_json()["messages_created"] == 1 and response.get_json()["ignored"] == 1
    other = deliver({"object": "user", "entry": []})
    assert other.status_code == 200 and other.get_json()["messages_created"] == 0


def test_an_inbound_message_unarchives_and_reopens_its_conversation(
    app: Flask, client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "first")])))
    with app.app_context():
        conversation = db.session.scalar(select(Conversation))
        assert conversation is not None
        conversation.archived_at = utcnow()
        conversation.status = "closed"
        conversation_id = str(conversation.id)
        db.session.commit()
    archived = client.get(msg(org, f"/conversations/{conversation_id}"), headers=org.headers()).get_json()
    assert archived["extra"]["archived"] is not None and archived["status"] == "closed"
    deliver(wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "again")])))
    back = client.get(msg(org, f"/conversations/{conversation_id}"), headers=org.headers()).get_json()
    assert back["extra"]["archived"] is None and back["status"] == "active"


def test_sandbox_deliveries_reach_the_sandbox_store(
    app: Flask, client: FlaskClient, org: Org, wa: Channel, deliver: Deliver
) -> None:
    assert (
        deliver(
            wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "hi")])), prefix="/sandbox"
        ).status_code
        == 200
    )
    sandbox = client.get("/sandbox" + msg(org, "/messages"), headers=org.headers("sandbox")).get_json()
    assert sandbox["total"] == 1
    assert messages(client, org) == []


# ---- Instagram and Messenger inbound ----


def test_instagram_inbound_text_and_attachment(
    client: FlaskClient, org: Org, ig: Channel, deliver: Deliver
) -> None:
    igsid = "1234567890123456"
    payload = messaging_delivery(
        "instagram",
        INSTAGRAM_ID,
        messaging_text(INSTAGRAM_ID, igsid, "Hi! Is this still available?"),
        messaging_attachment(INSTAGRAM_ID, igsid, "image", "https://cdn.example/ig.jpg"),
    )
    assert deliver(payload).get_json()["messages_created"] == 2
    stored = messages(client, org)
    assert {m["service"] for m in stored} == {"instagram"}
    assert [m["content"]["kind"] for m in stored] == ["text", "image"]
    assert stored[0]["contact_address"] == igsid
    assert stored[1]["content"]["file"]["uri"] == "https://cdn.example/ig.jpg"
    assert stored[0]["timestamp"].endswith("Z") and stored[0]["organization_address"] == INSTAGRAM_ID


def test_messenger_inbound_and_page_echo(
    client: FlaskClient, org: Org, fb: Channel, deliver: Deliver
) -> None:
    psid = "2468013579"
    echo_mid = "m_echo_1"
    payload = messaging_delivery(
        "page",
        PAGE_ID,
        messaging_text(PAGE_ID, psid, "hello, world!"),
        messaging_text(PAGE_ID, psid, "Reply typed in the Page inbox", mid=echo_mid, echo=True),
    )
    deliver(payload)
    deliver(payload)  # redelivered: still two messages
    stored = messages(client, org)
    assert [(m["direction"], m["content"]["text"]) for m in stored] == [
        ("incoming", "hello, world!"),
        ("outgoing", "Reply typed in the Page inbox"),
    ]
    assert stored[1]["external_id"] == echo_mid and stored[1]["contact_address"] == psid
    assert len({m["conversation_id"] for m in stored}) == 1


def test_two_deliveries_racing_on_one_message_store_it_once(
    client: FlaskClient, org: Org, wa: Channel, deliver: Deliver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blueprints.messaging import ingest

    payload = wa_delivery(wa_change(wa.address, messages=[wa_text(SENDER, "race", id=wamid())]))
    real = ingest.resolve_threads
    raced: list[Any] = []

    def resolve_after_a_rival_commits(requests: Any) -> Any:
        if not raced:
            raced.append(None)
            # Between this delivery's duplicate check and its insert, Meta's retry is stored first.
            raced[0] = deliver(payload).get_json()
        return real(requests)

    monkeypatch.setattr(ingest, "resolve_threads", resolve_after_a_rival_commits)
    response = deliver(payload)
    assert response.status_code == 200
    assert raced[0]["messages_created"] == 1
    assert (response.get_json()["messages_created"], response.get_json()["duplicates"]) == (0, 1)
    assert len(messages(client, org)) == 1
