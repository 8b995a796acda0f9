"""The product catalogue: CRUD in the CRM's format, exact prices, per-organization SKUs, search by words,
archive instead of delete while line items reference a product, and line items' product_id checked."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask

from blueprints.crm.services import products
from core.environments import in_environment
from tests.conftest import Org
from tests.crm.conftest import Crm, crm_error


@pytest.fixture
def crm(client: Any, org: Org) -> Crm:
    return Crm(client, org)


def product(crm: Crm, **fields: Any) -> dict[str, Any]:
    return crm.ok(crm.post("/products", {"name": "Agent seat", "price": 450, **fields}), 201)


def test_create_get_update_list(crm: Crm) -> None:
    created = product(
        crm,
        sku="SEAT-M",
        price="0.0125",
        currency="usd",
        description="Per agent and month",
        url="https://shop.example/seat",
    )
    assert created["price"] == "0.0125" and created["currency"] == "USD" and created["active"] is True
    assert crm.ok(crm.get(f"/products/{created['id']}")) == created

    updated = crm.ok(crm.patch(f"/products/{created['id']}", {"price": 10.5, "description": None}))
    assert updated["price"] == "10.50" and updated["description"] is None and updated["sku"] == "SEAT-M"

    product(crm, name="Minutes pack", price=49.9, active=False)
    listed = crm.ok(crm.get("/products"))
    assert [p["name"] for p in listed["data"]] == ["Agent seat", "Minutes pack"]
    assert (listed["total"], listed["limit"], listed["offset"]) == (2, 100, 0)
    assert [p["name"] for p in crm.ok(crm.get("/products", active="false"))["data"]] == ["Minutes pack"]


def test_sku_is_unique_per_organization(crm: Crm, client: Any, other_org: Org) -> None:
    product(crm, sku="SEAT-M")
    response = crm.post("/products", {"name": "Other", "price": 1, "sku": "SEAT-M"})
    assert response.status_code == 409
    assert response.get_json()["error"]["message"].startswith("sku:")
    Crm(client, other_org).ok(
        Crm(client, other_org).post("/products", {"name": "x", "price": 1, "sku": "SEAT-M"}), 201
    )
    # products without a SKU never collide
    product(crm, name="A")
    product(crm, name="B")


def test_validation_and_not_found(crm: Crm, client: Any, other_org: Org) -> None:
    assert crm.post("/products", {"name": "x", "price": -1}).status_code == 400
    bad_currency = crm.post("/products", {"name": "x", "price": 1, "currency": "XYZ"})
    assert bad_currency.status_code == 400 and "currency" in bad_currency.get_json()["error"]["message"]
    bad_url = crm.post("/products", {"name": "x", "price": 1, "url": "javascript:alert(1)"})
    assert bad_url.status_code == 400 and bad_url.get_json()["error"]["message"].startswith("url")
    theirs = Crm(client, other_org).ok(
        Crm(client, other_org).post("/products", {"name": "x", "price": 1}), 201
    )
    response = crm.get(f"/products/{theirs['id']}")
    assert response.status_code == 404 and response.get_json() == crm_error(404, "No Product found")
    assert crm.patch(f"/products/{uuid.uuid4()}", {"name": "y"}).status_code == 404


def test_search_matches_every_word_in_name_sku_or_description(crm: Crm, app: Flask, org: Org) -> None:
    product(crm, name="Shirt, red", sku="TS-RED", description="Cotton")
    product(crm, name="Shirt, blue", sku="TS-BLUE", description="Cotton 100%")
    product(crm, name="Red mug", sku="MUG-1")
    product(crm, name="Old red shirt", active=False)

    names = [p["name"] for p in crm.ok(crm.get("/products", q="red shirt"))["data"]]
    assert names == ["Old red shirt", "Shirt, red"]
    assert [p["name"] for p in crm.ok(crm.get("/products", q="ts-blue"))["data"]] == ["Shirt, blue"]
    assert [p["name"] for p in crm.ok(crm.get("/products", q="100%"))["data"]] == ["Shirt, blue"]
    assert crm.ok(crm.get("/products", q="10_%"))["data"] == []  # wildcards are literal

    with in_environment(app, "live"):
        found = products.search_products(uuid.UUID(org.id), "red", limit=5)
        # active only; a name holding the whole query first
        assert [p.name for p in found] == ["Red mug", "Shirt, red"]
        assert [p.name for p in products.search_products(uuid.UUID(org.id), "cotton", limit=1)] == [
            "Shirt, blue"
        ]
        assert products.search_products(uuid.UUID(org.id), "nothing like it") == []


def test_get_product_service_is_tenant_scoped(crm: Crm, app: Flask, org: Org, other_org: Org) -> None:
    mine = product(crm)
    with in_environment(app, "live"):
        assert products.get_product(uuid.UUID(org.id), uuid.UUID(mine["id"])).name == "Agent seat"
        with pytest.raises(Exception) as raised:
            products.get_product(uuid.UUID(other_org.id), uuid.UUID(mine["id"]))
        assert getattr(raised.value, "status", None) == 404


def test_line_items_name_a_product_of_the_organization(crm: Crm, client: Any, other_org: Org) -> None:
    seat = product(crm, sku="SEAT-M")
    theirs = Crm(client, other_org).ok(
        Crm(client, other_org).post("/products", {"name": "x", "price": 1}), 201
    )
    deal = crm.deal()
    item = {"name": "Seat", "quantity": 2, "unit_price": 450}

    refused = crm.post(f"/deals/{deal['id']}/line-items", {**item, "product_id": theirs["id"]})
    assert refused.status_code == 400
    assert refused.get_json()["error"]["message"].startswith("product_id: no product of the organization")

    added = crm.ok(crm.post(f"/deals/{deal['id']}/line-items", {**item, "product_id": seat["id"]}), 201)
    assert added["product_id"] == seat["id"]
    patch = crm.patch(f"/deals/{deal['id']}/line-items/{added['id']}", {"product_id": str(uuid.uuid4())})
    assert patch.status_code == 400
    listed = crm.ok(crm.get("/deals", product_id=seat["id"]))
    assert [d["id"] for d in listed["data"]] == [deal["id"]]


def test_delete_archives_a_referenced_product(crm: Crm) -> None:
    seat = product(crm)
    spare = product(crm, name="Spare")
    deal = crm.deal()
    crm.ok(
        crm.post(
            f"/deals/{deal['id']}/line-items",
            {"name": "Seat", "quantity": 1, "unit_price": 450, "product_id": seat["id"]},
        ),
        201,
    )
    assert crm.ok(crm.delete(f"/products/{seat['id']}")) == {
        "id": seat["id"],
        "deleted": False,
        "archived": True,
    }
    assert crm.ok(crm.get(f"/products/{seat['id']}"))["active"] is False
    assert crm.ok(crm.delete(f"/products/{spare['id']}")) == {
        "id": spare["id"],
        "deleted": True,
        "archived": False,
    }
    assert crm.get(f"/products/{spare['id']}").status_code == 404


def test_one_commit_per_write_none_per_read(crm: Crm, commits: Any) -> None:
    with commits() as counted:
        created = product(crm)
    assert counted.count == 1
    with commits() as counted:
        crm.ok(crm.get(f"/products/{created['id']}"))
        crm.ok(crm.get("/products", q="seat"))
    assert counted.count == 0
