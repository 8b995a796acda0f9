"""GET conversations and GET messages: search through the text indexes finds exactly what a substring
match finds (and keeps finding it after renames and deletes, which the SQLite triggers must follow), and
keyset pages (``cursor``) walk every row once while rows are being added."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, update

from blueprints.inbox.services import conversations as conversations_service
from blueprints.messaging import services as messaging_service
from blueprints.messaging.models import Contact, Conversation
from core.db import db
from tests.conftest import Org
from tests.inbox.conftest import T0, MakeConversation, msg


def found(client: FlaskClient, org: Org, search: str) -> set[str]:
    response = client.get(msg(org, "/conversations"), query_string={"search": search}, headers=org.headers())
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["total"] == len(body["data"])
    return {c["id"] for c in body["data"]}


def test_search_is_a_case_insensitive_substring_of_name_address_or_contact(
    client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation
) -> None:
    ana = make_conversation(org, contact_name="Ana Lucía Bermúdez", address="+525511112222")
    named = make_conversation(org, name="Pedido 50%_off", contact_name="Bruno", address="+525533334444")
    other = make_conversation(other_org, contact_name="Ana Bermúdez", address="+525511112222")
    assert found(client, org, "bermú") == {ana}  # the middle of a word, accents as typed
    assert found(client, org, "ANA LUC") == {ana}  # case and a space inside the phrase
    assert found(client, org, "1111") == {ana}  # the contact address
    assert found(client, org, "pedido") == {named}  # the conversation's name
    assert found(client, org, "50%_") == {named}  # % and _ are literal characters
    assert found(client, org, "0%") == {named}
    assert found(client, org, "%") == {named}
    assert found(client, org, "_") == {named}
    assert found(client, org, "5%5") == set()  # a literal %, not a wildcard
    assert found(client, org, 'ana"') == set()  # a quote does not break the index query
    assert found(client, org, "an") == {ana}  # two characters: no trigram, still a substring match
    assert found(client, org, "u") == {ana, named}  # one character: Lucía / Bruno
    assert other not in found(client, org, "ana")
    assert found(client, org, "  bruno  ") == {named}  # surrounding spaces ignored


def test_search_follows_renames_and_deletes(
    app: Flask, client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    first = make_conversation(org, contact_name="Rodrigo Canul", name="Reclamo")
    second = make_conversation(org, contact_name="Marco Díaz")
    assert found(client, org, "canul") == {first}
    with app.app_context():
        conversation = db.session.get(Conversation, uuid.UUID(first))
        db.session.execute(
            update(Contact).where(Contact.id == conversation.contact_id).values(name="Rodrigo Pat")
        )
        db.session.execute(
            update(Conversation).where(Conversation.id == conversation.id).values(name="Factura")
        )
        # a change of another column must leave the text index as it is
        db.session.execute(
            update(Conversation).where(Conversation.id == uuid.UUID(second)).values(status="closed")
        )
        db.session.commit()
    assert found(client, org, "canul") == set()
    assert found(client, org, "rodrigo pat") == {first}
    assert found(client, org, "reclamo") == set()
    assert found(client, org, "factura") == {first}
    assert found(client, org, "marco") == {second}
    response = client.delete(msg(org, f"/conversations/{second}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    assert found(client, org, "marco") == set()
    with app.app_context():
        db.session.execute(delete(Contact).where(Contact.name == "Marco Díaz"))
        db.session.commit()
    replacement = make_conversation(org, contact_name="Marcos Díaz")  # may reuse the freed rowid
    assert found(client, org, "marco") == {replacement}


def _page(client: FlaskClient, org: Org, query: dict[str, object], path: str = "/conversations") -> dict:
    response = client.get(msg(org, path), query_string=query, headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_cursor_walks_every_conversation_once_while_new_ones_arrive(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    # pairs with the same last message time (the id breaks the tie), two without messages (sorted last)
    for i in range(9):
        make_conversation(org, last_message_at=T0 + timedelta(minutes=i // 2), messages=1)
    for _ in range(2):
        make_conversation(org)
    expected = [c["id"] for c in _page(client, org, {"take": 200})["data"]]
    plain = _page(client, org, {"take": 3})
    assert "next_cursor" not in plain  # offset pages keep the spec's shape
    seen: list[str] = []
    body = _page(client, org, {"take": 3, "cursor": ""})
    while True:
        assert body["total"] >= 11 and body["skip"] == 0 and body["take"] == 3
        seen += [c["id"] for c in body["data"]]
        if body["next_cursor"] is None:
            break
        # a conversation that starts now sorts first: already behind the cursor, it must not shift pages
        make_conversation(org, last_message_at=T0 + timedelta(days=1), messages=1)
        body = _page(client, org, {"take": 3, "cursor": body["next_cursor"]})
    assert seen == expected  # the offset order, nothing repeated, nothing skipped, nothing new


def test_cursor_in_ascending_order_and_other_orders(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    made = [make_conversation(org, created_at=T0 + timedelta(minutes=i)) for i in range(5)]
    seen: list[str] = []
    cursor = ""
    while cursor is not None:
        body = _page(client, org, {"take": 2, "order_by": "created_at", "order": "asc", "cursor": cursor})
        seen += [c["id"] for c in body["data"]]
        cursor = body["next_cursor"]
    assert seen == made
    last_page = _page(client, org, {"take": 5, "order_by": "created_at", "order": "asc", "cursor": ""})
    assert last_page["next_cursor"] is None and last_page["total"] == 5  # exact page: no empty extra page


def test_bad_cursors_are_400(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    for _ in range(3):
        make_conversation(org, messages=1)
    cursor = _page(client, org, {"take": 1, "cursor": ""})["next_cursor"]

    def status(query: dict[str, object]) -> tuple[int, str]:
        response = client.get(msg(org, "/conversations"), query_string=query, headers=org.headers())
        return response.status_code, response.get_json().get("message", "")

    code, message = status({"cursor": "not-a-cursor"})
    assert code == 400 and message.startswith("cursor:")
    code, message = status({"cursor": cursor, "order": "asc"})  # made for desc
    assert code == 400 and message.startswith("cursor:")
    code, message = status({"cursor": cursor, "skip": 1})
    assert code == 400 and message.startswith("cursor:")
    assert status({"cursor": "x" * 600})[0] == 400


def test_message_cursor_pages_back_in_time(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    conversation = make_conversation(org, messages=7)
    everything = _page(client, org, {"conversation_id": conversation, "take": 50}, "/messages")["data"]
    assert "next_cursor" not in _page(client, org, {"take": 2}, "/messages")
    pages: list[list[str]] = []
    cursor: str | None = ""
    while cursor is not None:
        body = _page(client, org, {"conversation_id": conversation, "take": 3, "cursor": cursor}, "/messages")
        assert body["total"] == 7
        pages.append([m["id"] for m in body["data"]])  # each page oldest first, pages newest first
        cursor = body["next_cursor"]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for page in reversed(pages) for i in page] == [m["id"] for m in everything]
    response = client.get(
        msg(org, "/messages"), query_string={"cursor": "", "skip": 2}, headers=org.headers()
    )
    assert response.status_code == 400 and response.get_json()["message"].startswith("cursor:")


def test_total_is_exact_up_to_its_cap_then_a_lower_bound_said_in_a_header(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = make_conversation(org, messages=5)
    for _ in range(4):
        make_conversation(org, messages=1)

    def get(path: str, **query: object) -> tuple[int, str | None]:
        response = client.get(msg(org, path), query_string=query, headers=org.headers())
        assert response.status_code == 200, response.get_json()
        return response.get_json()["total"], response.headers.get("X-Total-Relation")

    assert get("/conversations", take=2) == (5, None)  # under the cap: exact, the spec's meaning
    monkeypatch.setattr(conversations_service, "TOTAL_COUNT_CAP", 3)
    monkeypatch.setattr(messaging_service, "TOTAL_COUNT_CAP", 3)
    assert get("/conversations", take=2) == (3, "gte")  # counted up to the cap only
    assert get("/conversations", take=2, skip=2) == (4, "gte")  # at least to the end of the page asked
    assert get("/conversations", take=2, skip=4) == (5, None)  # a last page tells the total exactly
    assert get("/conversations", take=2, cursor="") == (3, "gte")
    assert get("/conversations", take=2, status="archived") == (0, None)
    assert get("/messages", take=2) == (3, "gte")
    assert get("/messages", take=2, conversation_id=conversation) == (3, "gte")
    assert get("/messages", take=20) == (9, None)


def test_a_filtered_total_stops_at_its_own_lower_cap(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A label or a search probes a second index per counted row, so its total stops earlier than the
    plain list's (FILTERED_TOTAL_COUNT_CAP) and says so with ``X-Total-Relation: gte``."""
    for _ in range(5):
        conversation = make_conversation(org, messages=1)
        labelled = client.patch(
            msg(org, f"/conversations/{conversation}"),
            json={"extra": {"labels": ["vip"]}},
            headers=org.headers(),
        )
        assert labelled.status_code == 200, labelled.get_json()
    monkeypatch.setattr(conversations_service, "FILTERED_TOTAL_COUNT_CAP", 3)

    def get(**query: object) -> tuple[int, str | None]:
        response = client.get(msg(org, "/conversations"), query_string=query, headers=org.headers())
        assert response.status_code == 200, response.get_json()
        return response.get_json()["total"], response.headers.get("X-Total-Relation")

    assert get(take=2) == (5, None)  # the plain list keeps its own cap
    assert get(take=2, labels="vip") == (3, "gte")
    assert get(take=2, labels="vip", skip=4) == (5, None)
