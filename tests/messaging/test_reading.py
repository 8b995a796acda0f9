"""Reading: one message, the message list (latest N, oldest first), one conversation, the service window,
and the transcript other areas read."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import Channel, Deliver, msg
from tests.fakes.meta_webhooks import now_seconds, wa_change, wa_delivery, wa_text
from tests.messaging.helpers import CONTACT, open_window, send, text_body

NOT_FOUND = {"statusCode": 404, "message": "Message not found"}


def _conversation_of_many(client: FlaskClient, wa: Channel, deliver: Deliver, count: int) -> list[str]:
    texts = [f"message {n}" for n in range(count)]
    items = [wa_text(CONTACT, t, timestamp=now_seconds(-1000 + n)) for n, t in enumerate(texts)]
    deliver(wa_delivery(wa_change(wa.address, messages=items[::-1])))  # out of order on purpose
    return texts


def test_get_message_404_for_unknown_malformed_and_other_organizations_ids(
    client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    open_window(deliver, wa)
    [message] = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"]
    for missing in (str(uuid.uuid4()), "not-a-uuid"):
        response = client.get(wa.path(f"/messages/{missing}"), headers=wa.org.headers())
        assert response.status_code == 404 and response.get_json() == NOT_FOUND
    theirs = client.get(msg(other_org, f"/messages/{message['id']}"), headers=other_org.headers())
    assert theirs.status_code == 404 and theirs.get_json() == NOT_FOUND
    forbidden = client.get(wa.path(f"/messages/{message['id']}"), headers=other_org.headers())
    assert forbidden.status_code == 403


def test_take_returns_the_latest_n_oldest_first(client: FlaskClient, wa: Channel, deliver: Deliver) -> None:
    texts = _conversation_of_many(client, wa, deliver, 7)
    page = client.get(wa.path("/messages"), headers=wa.org.headers(), query_string={"take": 3}).get_json()
    assert [m["content"]["text"] for m in page["data"]] == texts[-3:]
    assert (page["total"], page["skip"], page["take"]) == (7, 0, 3)
    earlier = client.get(wa.path("/messages"), headers=wa.org.headers(), query_string={"take": 3, "skip": 3})
    assert [m["content"]["text"] for m in earlier.get_json()["data"]] == texts[1:4]


def test_filters_by_conversation_direction_and_dates(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    open_window(deliver, wa)
    open_window(deliver, wa, "5215599998888")
    reply = send(client, wa, text_body(wa)).get_json()
    headers = wa.org.headers()
    mine = client.get(
        wa.path("/messages"), headers=headers, query_string={"conversation_id": reply["conversation_id"]}
    )
    assert [m["direction"] for m in mine.get_json()["data"]] == ["incoming", "outgoing"]
    outgoing = client.get(
        wa.path("/messages"), headers=headers, query_string={"direction": "outgoing"}
    ).get_json()
    assert [m["id"] for m in outgoing["data"]] == [reply["id"]]
    today = datetime.now(UTC).date().isoformat()
    assert (
        client.get(
            wa.path("/messages"), headers=headers, query_string={"start_date": today, "end_date": today}
        ).get_json()["total"]
        == 3
    )
    assert (
        client.get(wa.path("/messages"), headers=headers, query_string={"end_date": "2020-01-01"}).get_json()[
            "total"
        ]
        == 0
    )
    assert (
        client.get(
            wa.path("/messages"), headers=headers, query_string={"start_date": "2999-01-01T00:00:00Z"}
        ).get_json()["total"]
        == 0
    )


def test_list_validation_names_the_parameter(client: FlaskClient, wa: Channel) -> None:
    for query, field in (
        ({"take": 0}, "take"),
        ({"take": 201}, "take"),
        ({"direction": "sideways"}, "direction"),
        ({"conversation_id": "x"}, "conversation_id"),
        ({"start_date": "yesterday"}, "start_date"),
    ):
        response = client.get(wa.path("/messages"), headers=wa.org.headers(), query_string=query)
        assert response.status_code == 400
        assert response.get_json()["message"].startswith(f"{field}:"), response.get_json()


def test_the_list_costs_the_same_queries_for_5_or_50_messages(
    client: FlaskClient, wa: Channel, deliver: Deliver, queries
) -> None:
    _conversation_of_many(client, wa, deliver, 5)
    with queries() as few:
        client.get(wa.path("/messages"), headers=wa.org.headers(), query_string={"take": 200})
    _conversation_of_many(client, wa, deliver, 45)
    with queries() as many:
        client.get(wa.path("/messages"), headers=wa.org.headers(), query_string={"take": 200})
    assert few.count == many.count <= 5  # key lookup + last-used touch, then one page query


def test_other_organizations_see_none_of_the_messages(
    client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    open_window(deliver, wa)
    assert client.get(msg(other_org, "/messages"), headers=other_org.headers()).get_json()["total"] == 0


def test_conversation_404_and_other_organization(
    client: FlaskClient, wa: Channel, deliver: Deliver, other_org: Org
) -> None:
    open_window(deliver, wa)
    [message] = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"]
    conversation_id = message["conversation_id"]
    assert (
        client.get(wa.path(f"/conversations/{conversation_id}"), headers=wa.org.headers()).status_code == 200
    )
    for path, headers in (
        (wa.path(f"/conversations/{uuid.uuid4()}"), wa.org.headers()),
        (wa.path("/conversations/nope"), wa.org.headers()),
        (msg(other_org, f"/conversations/{conversation_id}"), other_org.headers()),
    ):
        response = client.get(path, headers=headers)
        assert response.status_code == 404
        assert response.get_json() == {"statusCode": 404, "message": "Conversation not found"}


# ---- service window ----


def window(client: FlaskClient, channel: Channel, address: str, organization_address: str | None = None):
    return client.get(
        channel.path(f"/contacts/addresses/{address}/service-window"),
        headers=channel.org.headers(),
        query_string={"organization_address": organization_address or channel.address},
    )


def test_window_is_closed_before_any_message_and_open_after_one(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    assert window(client, wa, "525512345678").get_json() == {"status": "closed", "expires_at": None}
    open_window(deliver, wa)
    for form in ("525512345678", "5215512345678", "+525512345678"):
        response = window(client, wa, form)
        assert response.status_code == 200
        assert response.get_json()["status"] == "open"


def test_window_counts_from_the_providers_timestamp(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    # delivered now, written 25 hours ago (Meta retried for a day): the window is already closed
    old = wa_text(CONTACT, "hola", timestamp=now_seconds(-25 * 3600))
    deliver(wa_delivery(wa_change(wa.address, messages=[old])))
    assert window(client, wa, CONTACT).get_json()["status"] == "closed"
    recent = wa_text(CONTACT, "sigo aquí", timestamp=now_seconds(-23 * 3600))
    deliver(wa_delivery(wa_change(wa.address, messages=[recent])))
    opened = window(client, wa, CONTACT).get_json()
    assert opened["status"] == "open"
    expires = datetime.fromisoformat(opened["expires_at"].replace("Z", "+00:00"))
    assert 0 < (expires - datetime.now(UTC)).total_seconds() <= 3600 + 5
    # a late delivery of the old message does not shorten the window
    deliver(
        wa_delivery(
            wa_change(wa.address, messages=[wa_text(CONTACT, "x", timestamp=now_seconds(-30 * 3600))])
        )
    )
    assert window(client, wa, CONTACT).get_json() == opened


def test_window_errors(client: FlaskClient, wa: Channel) -> None:
    unknown = window(client, wa, CONTACT, organization_address="000")
    assert unknown.status_code == 404
    assert unknown.get_json() == {"statusCode": 404, "message": "Organization address not found"}
    missing = client.get(wa.path(f"/contacts/addresses/{CONTACT}/service-window"), headers=wa.org.headers())
    assert missing.status_code == 400 and missing.get_json()["message"].startswith("organization_address:")
    invalid = window(client, wa, "12")
    assert invalid.get_json() == {"statusCode": 400, "message": "address: not a valid phone number"}


def test_window_of_instagram_contacts(client: FlaskClient, ig: Channel, deliver: Deliver) -> None:
    igsid = "1234567890123456"
    assert window(client, ig, igsid).get_json()["status"] == "closed"
    open_window(deliver, ig, igsid)
    assert window(client, ig, igsid).get_json()["status"] == "open"


# ---- transcript ----


def test_transcript_for_the_crm_summarizer(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    from blueprints.messaging.services import conversation_transcript

    open_window(deliver, wa)
    reply = send(client, wa, text_body(wa, text="¿En qué te ayudo?")).get_json()
    with app.app_context():
        transcript = conversation_transcript(wa.org.id, reply["conversation_id"])
        assert transcript is not None
        assert [(d, t) for d, t, _ in transcript] == [("incoming", "hola"), ("outgoing", "¿En qué te ayudo?")]
        assert all(isinstance(ts, datetime) and ts.tzinfo for _, _, ts in transcript)
        assert conversation_transcript(str(uuid.uuid4()), reply["conversation_id"]) is None
        assert conversation_transcript(wa.org.id, "nope") is None


def test_every_messaging_route_is_403_for_another_organizations_path(
    client: FlaskClient, org: Org, other_org: Org
) -> None:
    some_id = str(uuid.uuid4())
    routes = [
        ("get", "/addresses"),
        ("get", "/contacts/addresses/525512345678/service-window?organization_address=1"),
        ("post", "/messages"),
        ("post", "/messages/send-template"),
        ("get", "/messages"),
        ("get", f"/messages/{some_id}"),
        ("get", f"/conversations/{some_id}"),
        ("get", "/contacts"),
        ("post", "/contacts"),
        ("get", f"/contacts/{some_id}"),
        ("patch", f"/contacts/{some_id}"),
        ("delete", f"/contacts/{some_id}"),
    ]
    for method, suffix in routes:
        response = getattr(client, method)(msg(other_org, suffix), json={}, headers=org.headers())
        assert response.status_code == 403, (method, suffix)
        assert response.get_json() == {
            "statusCode": 403,
            "message": "You do not have access to this organization",
        }
        unauthenticated = getattr(client, method)(msg(org, suffix), json={})
        assert unauthenticated.status_code == 401, (method, suffix)
