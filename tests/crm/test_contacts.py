"""Contacts with identities, accounts with linked contacts, and contact merge."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from blueprints.crm import hooks
from tests.crm.conftest import Crm, not_found_body


def test_create_contact_normalises_identities(crm: Crm) -> None:
    contact = crm.contact(
        name="Ana Pérez",
        job_title="CTO",
        identities=[
            {"kind": "phone", "value": "+52 1 55 1234 5678"},
            {"kind": "email", "value": "Ana@Example.COM"},
        ],
    )
    assert (contact["name"], contact["job_title"]) == ("Ana Pérez", "CTO")
    assert [(i["kind"], i["value"]) for i in contact["identities"]] == [
        ("phone", "+525512345678"),
        ("email", "ana@example.com"),
    ]
    assert crm.ok(crm.get(f"/contacts/{contact['id']}"))["identities"] == contact["identities"]


def test_duplicate_identity_in_the_organization_is_409(crm: Crm, other_crm: Crm) -> None:
    crm.contact(identities=[{"kind": "phone", "value": "+525512345678"}])
    response = crm.post(
        "/contacts", {"name": "Other", "identities": [{"kind": "phone", "value": "5215512345678"}]}
    )
    assert response.status_code == 409
    assert response.get_json()["error"] == {
        "message": "A contact with the phone +525512345678 already exists",
        "error": "Conflict",
        "statusCode": 409,
    }
    assert crm.ok(crm.get("/contacts"))["total"] == 1  # nothing half-created
    twice = crm.post(
        "/contacts",
        {
            "name": "X",
            "identities": [{"kind": "email", "value": "a@b.co"}, {"kind": "email", "value": "A@b.co"}],
        },
    )
    assert twice.status_code == 409
    # another organization may know the same person
    other_crm.contact(identities=[{"kind": "phone", "value": "+525512345678"}])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": "x", "identities": [{"kind": "fax", "value": "1"}]}, "identities.0.kind"),
        ({"name": "x", "identities": [{"kind": "phone", "value": "12"}]}, "identities.0.value"),
        ({"name": "x", "identities": [{"kind": "email", "value": "not-an-email"}]}, "identities.0.value"),
        ({"name": "x", "account_ids": ["a"]}, "account_ids.0"),
    ],
)
def test_contact_validation(crm: Crm, body: dict[str, Any], field: str) -> None:
    response = crm.post("/contacts", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_add_and_remove_identities(crm: Crm, other_crm: Crm) -> None:
    contact = crm.contact()
    with_email = crm.ok(
        crm.post(f"/contacts/{contact['id']}/identities", {"kind": "email", "value": "x@y.io"}), 201
    )
    [identity] = with_email["identities"]
    crm.contact(name="Bob", identities=[{"kind": "email", "value": "bob@y.io"}])
    assert (
        crm.post(f"/contacts/{contact['id']}/identities", {"kind": "email", "value": "BOB@y.io"}).status_code
        == 409
    )
    assert crm.ok(crm.delete(f"/contacts/{contact['id']}/identities/{identity['id']}"))["identities"] == []
    assert crm.delete(f"/contacts/{contact['id']}/identities/{identity['id']}").get_json() == not_found_body(
        "Identity"
    )
    foreign = other_crm.contact()
    assert crm.post(
        f"/contacts/{foreign['id']}/identities", {"kind": "email", "value": "z@y.io"}
    ).get_json() == (not_found_body("Contact"))


def test_search_by_name_phone_or_email(crm: Crm) -> None:
    crm.contact(name="Ana", identities=[{"kind": "phone", "value": "+525512345678"}])
    crm.contact(name="Bob", identities=[{"kind": "email", "value": "bob@acme.io"}])
    crm.contact(name="Carla")

    def names(search: str) -> set[str]:
        return {c["name"] for c in crm.ok(crm.get("/contacts", search=search))["data"]}

    assert names("an") == {"Ana"}
    assert names("+52 1 55 1234 5678") == {"Ana"}  # typed the WhatsApp way
    assert names("1234") == {"Ana"}
    assert names("ACME") == {"Bob"}
    assert names("zzz") == set()
    body = crm.ok(crm.get("/contacts", limit=2))
    assert (body["total"], body["limit"], len(body["data"])) == (3, 2, 2)


def test_update_and_delete_contact(crm: Crm, other_crm: Crm) -> None:
    contact = crm.contact(identities=[{"kind": "email", "value": "ana@x.io"}])
    ticket = crm.ticket(requester_id=contact["id"])
    task = crm.task(contact_id=contact["id"])
    updated = crm.ok(crm.patch(f"/contacts/{contact['id']}", {"name": "Ana B", "job_title": None}))
    assert updated["name"] == "Ana B" and updated["identities"] == contact["identities"]
    assert crm.patch(f"/contacts/{contact['id']}", {"name": ""}).status_code == 400
    foreign = other_crm.contact()
    for response in (
        crm.get(f"/contacts/{foreign['id']}"),
        crm.patch(f"/contacts/{foreign['id']}", {"name": "x"}),
        crm.delete(f"/contacts/{foreign['id']}"),
    ):
        assert response.get_json() == not_found_body("Contact")
    assert crm.ok(crm.delete(f"/contacts/{contact['id']}"))["deleted"] is True
    assert crm.get(f"/contacts/{contact['id']}").get_json() == not_found_body("Contact")
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["requester_id"] is None
    assert crm.ok(crm.get(f"/tasks/{task['id']}"))["contact_id"] is None
    # the identity is free again
    crm.contact(identities=[{"kind": "email", "value": "ana@x.io"}])


@pytest.fixture
def moved_conversations() -> Iterator[list[tuple[uuid.UUID, uuid.UUID, uuid.UUID]]]:
    calls: list[tuple[uuid.UUID, uuid.UUID, uuid.UUID]] = []

    def hook(*, organization_id: uuid.UUID, source_id: uuid.UUID, target_id: uuid.UUID) -> int:
        calls.append((organization_id, source_id, target_id))
        return 3

    # the messaging area's receiver is replaced for the test: only this one answers
    with hooks.contact_merged.only(hook):
        yield calls


def test_merge_moves_everything_to_the_survivor(crm: Crm, moved_conversations: list[Any]) -> None:
    keep = crm.contact(name="Ana", identities=[{"kind": "email", "value": "ana@x.io"}])
    gone = crm.contact(name="Ana P", identities=[{"kind": "phone", "value": "+525512345678"}])
    acme, initech = crm.account(name="Acme"), crm.account(name="Initech")
    crm.ok(crm.post(f"/accounts/{acme['id']}/contacts", {"contact_id": keep["id"]}))
    crm.ok(crm.post(f"/accounts/{acme['id']}/contacts", {"contact_id": gone["id"]}))
    crm.ok(crm.post(f"/accounts/{initech['id']}/contacts", {"contact_id": gone["id"], "role": "buyer"}))
    shared = crm.deal(
        contacts=[
            {"contact_id": keep["id"]},
            {"contact_id": gone["id"], "is_primary": True, "role": "champion"},
        ]
    )
    only_gone = crm.deal(contacts=[{"contact_id": gone["id"], "role": "user"}])
    ticket = crm.ticket(requester_id=gone["id"])
    task = crm.task(contact_id=gone["id"])

    result = crm.ok(crm.post(f"/contacts/{keep['id']}/merge", {"source_contact_id": gone["id"]}))
    assert result["merged_contact_id"] == gone["id"]
    assert result["moved"] == {
        "identities": 1,
        "deals": 2,
        "tickets": 1,
        "tasks": 1,
        "accounts": 1,
        "conversations": 3,
    }
    survivor = result["contact"]
    assert {i["value"] for i in survivor["identities"]} == {"ana@x.io", "+525512345678"}
    assert {(a["name"], a["role"]) for a in survivor["accounts"]} == {("Acme", None), ("Initech", "buyer")}
    assert crm.get(f"/contacts/{gone['id']}").get_json() == not_found_body("Contact")
    assert crm.ok(crm.get(f"/deals/{shared['id']}"))["contacts"] == [
        {"contact_id": keep["id"], "role": "champion", "is_primary": True}
    ]
    assert crm.ok(crm.get(f"/deals/{only_gone['id']}"))["contacts"] == [
        {"contact_id": keep["id"], "role": "user", "is_primary": False}
    ]
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["requester_id"] == keep["id"]
    assert crm.ok(crm.get(f"/tasks/{task['id']}"))["contact_id"] == keep["id"]
    assert [(str(s), str(t)) for _, s, t in moved_conversations] == [(gone["id"], keep["id"])]


def test_merge_errors(crm: Crm, other_crm: Crm) -> None:
    keep = crm.contact()
    same = crm.post(f"/contacts/{keep['id']}/merge", {"source_contact_id": keep["id"]})
    assert same.status_code == 400
    foreign = other_crm.contact()
    assert crm.post(
        f"/contacts/{keep['id']}/merge", {"source_contact_id": foreign["id"]}
    ).get_json() == not_found_body("Contact")
    assert crm.post(
        f"/contacts/{foreign['id']}/merge", {"source_contact_id": keep["id"]}
    ).get_json() == not_found_body("Contact")
    missing = crm.post(f"/contacts/{keep['id']}/merge", {})
    assert missing.status_code == 400 and missing.get_json()["error"]["message"].startswith(
        "source_contact_id:"
    )


def test_account_crud_and_contact_links(crm: Crm, other_crm: Crm) -> None:
    account = crm.account(name="Acme", domain="acme.io", industry="Retail", phone="+5255", notes="key")
    assert (account["domain"], account["industry"], account["contacts"]) == ("acme.io", "Retail", [])
    ana = crm.contact(name="Ana")
    linked = crm.ok(crm.post(f"/accounts/{account['id']}/contacts", {"contact_id": ana["id"], "role": "CEO"}))
    assert linked["contacts"] == [{"id": ana["id"], "name": "Ana", "role": "CEO"}]
    relinked = crm.ok(
        crm.post(f"/accounts/{account['id']}/contacts", {"contact_id": ana["id"], "role": "CFO"})
    )
    assert relinked["contacts"] == [{"id": ana["id"], "name": "Ana", "role": "CFO"}]
    assert crm.ok(crm.get(f"/contacts/{ana['id']}"))["accounts"] == [
        {"id": account["id"], "name": "Acme", "role": "CFO"}
    ]
    assert {c["name"] for c in crm.ok(crm.get("/contacts", account_id=account["id"]))["data"]} == {"Ana"}
    assert (
        crm.ok(crm.patch(f"/accounts/{account['id']}", {"name": "Acme Inc", "notes": None}))["name"]
        == "Acme Inc"
    )
    crm.account(name="Initech")
    assert {a["name"] for a in crm.ok(crm.get("/accounts", search="acme"))["data"]} == {"Acme Inc"}
    assert crm.ok(crm.get("/accounts"))["total"] == 2
    unlinked = crm.ok(crm.delete(f"/accounts/{account['id']}/contacts/{ana['id']}"))
    assert unlinked["contacts"] == []
    assert crm.delete(f"/accounts/{account['id']}/contacts/{ana['id']}").get_json() == not_found_body(
        "Contact"
    )
    foreign = other_crm.contact()
    assert crm.post(
        f"/accounts/{account['id']}/contacts", {"contact_id": foreign["id"]}
    ).get_json() == not_found_body("Contact")
    deal = crm.deal(account_id=account["id"])
    assert crm.ok(crm.delete(f"/accounts/{account['id']}"))["deleted"] is True
    assert crm.get(f"/accounts/{account['id']}").get_json() == not_found_body("Account")
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["account_id"] is None
    assert crm.ok(crm.get(f"/contacts/{ana['id']}"))["name"] == "Ana"  # contacts stay


def test_account_validation_and_404s(crm: Crm, other_crm: Crm) -> None:
    assert crm.post("/accounts", {}).get_json()["error"]["message"].startswith("name:")
    assert crm.post("/accounts", {"name": "x" * 201}).status_code == 400
    foreign = other_crm.account()
    for response in (
        crm.get(f"/accounts/{foreign['id']}"),
        crm.patch(f"/accounts/{foreign['id']}", {"name": "x"}),
        crm.delete(f"/accounts/{foreign['id']}"),
        crm.post(f"/accounts/{foreign['id']}/contacts", {"contact_id": str(uuid.uuid4())}),
        crm.get(f"/accounts/{uuid.uuid4()}"),
    ):
        assert response.get_json() == not_found_body("Account")
