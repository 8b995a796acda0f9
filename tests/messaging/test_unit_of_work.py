"""COMMITs per request (a unit of work per request; checkpoints only where docs/messaging.md says), and
the contract fixes of issue 9 that the unit of work makes possible."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.messaging.models import Conversation
from core.db import db
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.messaging.helpers import CONTACT, open_window, send, text_body
from tests.messaging.test_simulator import inbound, sim, text  # noqa: F401  (sim: a fixture)

# A plain send: send.pending (stored before the provider is called), send.accepted (the provider's id
# stored before racing statuses are applied) and the request's own commit (those statuses, the events).
SEND_COMMITS = 3
# The simulator then delivers sent, delivered and read, each an inbound item (webhook.item) run inline
# in tests right after the request's commit.
SIMULATED_STATUS_COMMITS = 3


def test_a_plain_send_through_the_simulator_commits_at_its_checkpoints(
    client: FlaskClient,
    runner: FlaskCliRunner,
    sim: Org,  # noqa: F811  (the fixture imported above)
    commits: Any,
) -> None:
    inbound(runner, sim, "525511112222", env="live")
    with commits() as counted:
        response = client.post(
            f"/v2/messages/organizations/{sim.id}/messages", json=text("525511112222"), headers=sim.headers()
        )
    assert response.status_code == 201, response.get_json()
    assert counted.count == SEND_COMMITS + SIMULATED_STATUS_COMMITS


def test_a_send_with_an_idempotency_key_adds_the_claim(
    client: FlaskClient, wa: Channel, deliver: Deliver, commits: Any
) -> None:
    open_window(deliver, wa)
    with commits() as counted:
        response = send(client, wa, text_body(wa), **{"Idempotency-Key": "uow-1"})
    assert response.status_code == 201
    assert counted.count == 1 + SEND_COMMITS  # idempotency.claim; the answer is kept in the last commit
    with commits() as counted:
        replay = send(client, wa, text_body(wa), **{"Idempotency-Key": "uow-1"})
    assert replay.headers["Idempotent-Replayed"] == "true" and counted.count == 0


def test_a_refused_send_commits_nothing(client: FlaskClient, wa: Channel, commits: Any) -> None:
    with commits() as counted:
        assert send(client, wa, text_body(wa)).status_code == 400  # closed window
    assert counted.count == 0


def test_a_contact_create_is_one_commit(client: FlaskClient, org: Org, commits: Any) -> None:
    with commits() as counted:
        response = client.post(
            f"/v2/messages/organizations/{org.id}/contacts",
            json={"name": "Ana", "addresses": [{"service": "whatsapp", "address": "+525512345678"}]},
            headers=org.headers(),
        )
    assert response.status_code == 201 and counted.count == 1


def test_reads_commit_nothing(client: FlaskClient, wa: Channel, deliver: Deliver, commits: Any) -> None:
    open_window(deliver, wa)
    message = send(client, wa, text_body(wa)).get_json()
    headers = wa.org.headers()
    with commits() as counted:
        assert (
            client.get(wa.path(f"/conversations/{message['conversation_id']}"), headers=headers).status_code
            == 200
        )
        assert client.get(wa.path("/messages"), headers=headers).status_code == 200
        assert client.get(wa.path(f"/messages/{message['id']}"), headers=headers).status_code == 200
        window = client.get(
            wa.path(f"/contacts/addresses/{CONTACT}/service-window"),
            headers=headers,
            query_string={"organization_address": wa.address},
        )
        assert window.status_code == 200 and window.get_json()["status"] == "open"
        assert client.get(wa.path("/contacts"), headers=headers).status_code == 200
    assert counted.count == 0


def test_a_webhook_delivery_commits_once_per_item(wa: Channel, deliver: Deliver, commits: Any) -> None:
    three = [wa_text(CONTACT, "a"), wa_text(CONTACT, "b"), wa_text("5215587654321", "c")]
    with commits() as counted:
        response = deliver(wa_delivery(wa_change(wa.address, messages=three)))
    assert response.get_json()["messages_created"] == 3
    assert counted.count == 1  # one entry: one item, one webhook.item checkpoint, nothing at the boundary
    with commits() as counted:
        response = deliver(
            wa_delivery(
                wa_change(wa.address, messages=[wa_text(CONTACT, "d")]),
                wa_change(wa.address, messages=[wa_text(CONTACT, "e")]),
                entries=2,
            )
        )
    assert response.get_json()["messages_created"] == 2
    assert counted.count == 2  # two entries: each item durable on its own


def _two_items(wa: Channel) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    first, second = wa_text(CONTACT, "kept"), wa_text(CONTACT, "lost")
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            wa_delivery(wa_change(wa.address, messages=[first]))["entry"][0],
            wa_delivery(wa_change(wa.address, messages=[second]))["entry"][0],
        ],
    }
    return payload, first, second


def _fail_the_second_item(monkeypatch: Any, error: Exception) -> None:
    from blueprints.messaging import ingest

    real = ingest._store_messages
    calls: list[int] = []

    def fail_the_second_item(items: Any, result: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise error
        real(items, result)

    monkeypatch.setattr(ingest, "_store_messages", fail_the_second_item)


def test_an_item_that_fails_is_a_dead_letter_and_the_items_before_it_are_kept(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, monkeypatch: Any
) -> None:
    _fail_the_second_item(monkeypatch, RuntimeError("storage failed"))
    payload, first, _ = _two_items(wa)
    response = deliver(payload)
    assert response.status_code == 200  # Meta would retry a 5xx for a week: recorded instead
    assert response.get_json()["dead_letters"] == 1
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert [m["external_id"] for m in listed["data"]] == [first["id"]]
    letters = client.get(wa.path("/dead-letters"), headers=wa.org.headers()).get_json()
    assert [letter["reason"] for letter in letters["data"]] == ["not stored: RuntimeError: storage failed"]


def test_a_database_that_fails_fails_the_delivery_and_keeps_the_items_before_it(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, monkeypatch: Any
) -> None:
    from sqlalchemy.exc import OperationalError

    _fail_the_second_item(monkeypatch, OperationalError("INSERT", {}, Exception("server closed")))
    app.config["PROPAGATE_EXCEPTIONS"] = False
    payload, first, _ = _two_items(wa)
    response = deliver(payload)
    assert response.status_code == 500  # Meta redelivers; the first item is then a duplicate
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()
    assert [m["external_id"] for m in listed["data"]] == [first["id"]]


# ---- conversation extra: unknown keys are returned like the known ones ----


def test_unknown_extra_keys_are_returned_with_the_known_ones(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    open_window(deliver, wa)
    with app.app_context():
        conversation = db.session.query(Conversation).one()
        conversation.extra = {**conversation.extra, "crm_stage": "qualified", "score": {"value": 7}}
        conversation_id = str(conversation.id)
        db.session.commit()
    body = client.get(wa.path(f"/conversations/{conversation_id}"), headers=wa.org.headers()).get_json()
    assert body["extra"] == {
        "member_id": None,
        "labels": [],
        "archived": None,
        "team_id": None,
        "team_name": None,
        "assignment": None,
        "flow_id": None,
        "flow_member_id": None,
        "crm_stage": "qualified",
        "score": {"value": 7},
    }


def test_extra_bounds_name_the_field() -> None:
    from blueprints.messaging.extra import MAX_KEYS, MAX_VALUE_BYTES, check_extra
    from core.errors import ApiError

    check_extra({}, {"note": "x" * (MAX_VALUE_BYTES - 2)})  # a 2,048-byte JSON string fits
    with pytest.raises(ApiError) as too_big:
        check_extra({}, {"note": "x" * MAX_VALUE_BYTES})
    assert (too_big.value.status, too_big.value.param) == (400, "extra.note")
    assert too_big.value.message == f"extra.note: at most {MAX_VALUE_BYTES} bytes as JSON"
    stored = {f"k{n}": n for n in range(MAX_KEYS - 8)}  # with the 8 spec fields: 50 keys
    check_extra(stored, {"k0": 1})
    with pytest.raises(ApiError) as too_many:
        check_extra(stored, {"one_more": 1})
    assert too_many.value.message == f"extra: at most {MAX_KEYS} keys"


# ---- the demo organization follows the access-token rule of every organization ----


def test_the_demo_organizations_meta_address_without_a_token_cannot_send(
    client: FlaskClient, runner: FlaskCliRunner, connect: Connect
) -> None:
    from core.demo import DEMO_ORGANIZATION_ID

    seeded = runner.invoke(args=["demo", "seed"])
    assert seeded.exit_code == 0, seeded.output
    key = next(line.split(": ")[1] for line in seeded.output.splitlines() if "live API key" in line)
    demo = Org(str(DEMO_ORGANIZATION_ID), "demo", [], key, key)
    connect(demo, "whatsapp", "100000000000077", token=None)  # a Meta address, no token
    response = client.post(
        f"/v2/messages/organizations/{DEMO_ORGANIZATION_ID}/messages",
        json={
            "organization_address": "100000000000077",
            "service": "whatsapp",
            "contact_address": "525512345678",
            "direction": "outgoing",
            "content": {"kind": "text", "text": "hi"},
        },
        headers={"X-API-Key": key},
    )
    assert response.status_code == 400
    assert response.get_json()["message"] == "Organization address does not have an access token"


def test_existing_conversation_ids_answers_in_one_query(
    app: Flask, wa: Channel, deliver: Deliver, other_org: Org, queries: Any
) -> None:
    from blueprints.messaging.services import existing_conversation_ids

    open_window(deliver, wa)
    with app.app_context():
        conversation_id = str(db.session.query(Conversation.id).scalar())
        with queries() as counted:
            found = existing_conversation_ids(
                uuid.UUID(wa.org.id), [conversation_id, str(uuid.uuid4()), "not-a-uuid"]
            )
        assert found == {conversation_id} and counted.count == 1
        assert existing_conversation_ids(uuid.UUID(other_org.id), [conversation_id]) == set()
