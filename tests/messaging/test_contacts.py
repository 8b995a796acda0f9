"""``{msg}/contacts``: CRUD and search, each contact with its channel addresses and CRM link."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from core.environments import in_environment
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Deliver, msg
from tests.messaging.helpers import open_window

NOT_FOUND = {"statusCode": 404, "message": "Contact not found"}


def create(client: FlaskClient, org: Org, **body: Any) -> Any:
    return client.post(msg(org, "/contacts"), json=body, headers=org.headers())


def test_create_normalises_phone_addresses_and_reads_back(client: FlaskClient, org: Org) -> None:
    response = create(
        client,
        org,
        name="Jessica",
        addresses=[
            {"service": "whatsapp", "address": "+52 1 55 1234 5678"},
            {"service": "instagram", "address": "1784"},
        ],
        extra={"source": "import"},
    )
    assert response.status_code == 201
    contact = response.get_json()
    assert contact["addresses"] == [
        {"service": "whatsapp", "address": "+525512345678"},
        {"service": "instagram", "address": "1784"},
    ]
    assert contact["extra"] == {"source": "import"} and contact["crm_contact_id"] is None
    assert client.get(msg(org, f"/contacts/{contact['id']}"), headers=org.headers()).get_json() == contact


def test_validation_and_duplicates(client: FlaskClient, org: Org) -> None:
    bad_phone = create(client, org, addresses=[{"service": "whatsapp", "address": "12"}])
    assert bad_phone.get_json() == {
        "statusCode": 400,
        "message": "addresses.0.address: not a valid phone number",
    }
    bad_service = create(client, org, addresses=[{"service": "sms", "address": "1"}])
    assert bad_service.status_code == 400 and bad_service.get_json()["message"].startswith(
        "addresses.0.service:"
    )
    repeated = create(
        client,
        org,
        addresses=[
            {"service": "whatsapp", "address": "+525512345678"},
            {"service": "whatsapp", "address": "5215512345678"},
        ],
    )
    assert repeated.status_code == 400 and repeated.get_json()["message"].startswith("addresses.1")
    assert (
        create(client, org, addresses=[{"service": "whatsapp", "address": "+525512345678"}]).status_code
        == 201
    )
    taken = create(client, org, addresses=[{"service": "whatsapp", "address": "5215512345678"}])
    assert taken.status_code == 409
    assert taken.get_json() == {
        "statusCode": 409,
        "message": "Contact address whatsapp:+525512345678 already belongs to another contact",
    }


def test_search_filters_and_pagination(client: FlaskClient, org: Org, queries) -> None:
    create(client, org, name="Ana López", addresses=[{"service": "whatsapp", "address": "+525511112222"}])
    create(
        client,
        org,
        name="Bruno",
        addresses=[{"service": "messenger", "address": "2468"}],
        crm_contact_id="crm-1",
    )
    create(client, org, name="Carla", addresses=[{"service": "whatsapp", "address": "+525533334444"}])
    headers = org.headers()

    def names(**query: Any) -> list[str]:
        return [
            c["name"]
            for c in client.get(msg(org, "/contacts"), headers=headers, query_string=query).get_json()["data"]
        ]

    assert names(search="ana") == ["Ana López"]
    assert names(search="3333") == ["Carla"]
    assert sorted(names(service="whatsapp")) == ["Ana López", "Carla"]
    assert names(crm_contact_id="crm-1") == ["Bruno"]
    page = client.get(msg(org, "/contacts"), headers=headers, query_string={"take": 2}).get_json()
    assert (len(page["data"]), page["total"], page["take"]) == (2, 3, 2)
    with queries() as counted:
        client.get(msg(org, "/contacts"), headers=headers, query_string={"take": 200})
    assert counted.count <= 6  # key, touch, page, addresses (selectin): not one per contact
    assert client.get(msg(org, "/contacts"), headers=headers, query_string={"take": 500}).status_code == 400


def test_patch_changes_only_what_is_sent(client: FlaskClient, org: Org) -> None:
    contact = create(
        client,
        org,
        name="Ana",
        addresses=[{"service": "whatsapp", "address": "+525511112222"}],
        extra={"a": 1},
    ).get_json()
    path = msg(org, f"/contacts/{contact['id']}")
    changed = client.patch(
        path, json={"extra": {"b": 2}, "crm_contact_id": "crm-9"}, headers=org.headers()
    ).get_json()
    assert (
        changed["name"] == "Ana"
        and changed["extra"] == {"a": 1, "b": 2}
        and changed["crm_contact_id"] == "crm-9"
    )
    assert changed["addresses"] == contact["addresses"]
    replaced = client.patch(
        path,
        json={"addresses": [{"service": "instagram", "address": "99"}], "name": None},
        headers=org.headers(),
    ).get_json()
    assert replaced["addresses"] == [{"service": "instagram", "address": "99"}] and replaced["name"] is None
    bad = client.patch(path, json={"name": "x" * 201}, headers=org.headers())
    assert bad.status_code == 400 and bad.get_json()["message"].startswith("name:")


def test_delete_and_not_found(client: FlaskClient, org: Org, other_org: Org) -> None:
    contact = create(client, org, name="Temp").get_json()
    path = msg(org, f"/contacts/{contact['id']}")
    assert (
        client.get(msg(other_org, f"/contacts/{contact['id']}"), headers=other_org.headers()).get_json()
        == NOT_FOUND
    )
    assert (
        client.delete(msg(other_org, f"/contacts/{contact['id']}"), headers=other_org.headers()).status_code
        == 404
    )
    assert (
        client.patch(
            msg(other_org, f"/contacts/{contact['id']}"), json={}, headers=other_org.headers()
        ).status_code
        == 404
    )
    assert client.get(path, headers=other_org.headers()).status_code == 403
    assert client.delete(path, headers=org.headers()).status_code == 204
    for method in (client.get, client.delete):
        response = method(path, headers=org.headers())
        assert response.status_code == 404 and response.get_json() == NOT_FOUND
    assert client.get(msg(org, f"/contacts/{uuid.uuid4()}"), headers=org.headers()).get_json() == NOT_FOUND


def test_a_contact_with_conversations_cannot_be_deleted(
    client: FlaskClient, wa: Channel, deliver: Deliver
) -> None:
    open_window(deliver, wa)
    [contact] = client.get(wa.path("/contacts"), headers=wa.org.headers()).get_json()["data"]
    response = client.delete(wa.path(f"/contacts/{contact['id']}"), headers=wa.org.headers())
    assert response.status_code == 409


@pytest.fixture
def crm_resolver() -> Any:
    from blueprints.messaging.services import crm_contacts_for_phones

    seen: list[tuple[str, str]] = []

    def resolve(*, organization_id: uuid.UUID, phones: list[str]) -> dict[str, str]:
        seen.extend((str(organization_id), phone) for phone in phones)
        return {phone: "crm-" + phone[-4:] for phone in phones if phone == "+525512345678"}

    with crm_contacts_for_phones.only(resolve):
        yield seen


def test_crm_link_by_normalised_phone(
    app: Flask, client: FlaskClient, wa: Channel, deliver: Deliver, crm_resolver: list
) -> None:
    from blueprints.messaging.services import link_crm_contact

    open_window(deliver, wa)  # the WhatsApp id 5215512345678 is the CRM's +52 55 1234 5678
    [contact] = client.get(wa.path("/contacts"), headers=wa.org.headers()).get_json()["data"]
    assert contact["crm_contact_id"] == "crm-5678"
    assert crm_resolver == [(wa.org.id, "+525512345678")]
    other = create(client, wa.org, addresses=[{"service": "whatsapp", "address": "+525599990000"}]).get_json()
    assert other["crm_contact_id"] is None
    with in_environment(app, "live"):  # one unit of work: it commits on exit
        assert link_crm_contact(uuid.UUID(wa.org.id), "+52 1 55 9999 0000", "crm-new") == 1
    assert (
        client.get(wa.path(f"/contacts/{other['id']}"), headers=wa.org.headers()).get_json()["crm_contact_id"]
        == "crm-new"
    )


def test_search_takes_like_wildcards_literally(client: FlaskClient, org: Org) -> None:
    for name in ("100% real", "100 percent", "a_b", "axb"):
        assert create(client, org, name=name).status_code == 201

    def found(search: str) -> list[str]:
        response = client.get(msg(org, "/contacts"), headers=org.headers(), query_string={"search": search})
        return sorted(c["name"] for c in response.get_json()["data"])

    assert found("100%") == ["100% real"]
    assert found("a_b") == ["a_b"]
    assert found("%") == ["100% real"]
    assert found("_") == ["a_b"]
