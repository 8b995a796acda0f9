"""Deals: create, read, update, stage moves and status, soft delete, list filters and sorting."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask

from blueprints.crm.models import Deal
from core.db import db
from tests.crm.conftest import Crm, not_found_body


def _set_created(app: Flask, deal_id: str, when: datetime) -> None:
    with app.app_context():
        deal = db.session.get(Deal, uuid.UUID(deal_id))
        assert deal is not None
        deal.created_at = when
        db.session.commit()


def test_create_deal_with_defaults_and_references(crm: Crm) -> None:
    pipeline = crm.pipeline()
    first = crm.deal(name="Website")
    assert (first["number"], first["reference"]) == (1, "VNT-1")
    assert (first["amount"], first["currency"], first["status"]) == ("0.00", "MXN", "open")
    assert first["pipeline"] == {"id": pipeline["id"], "name": "General", "key": "VNT"}
    assert first["stage"]["id"] == pipeline["stages"][0]["id"]
    assert set(first["stage"]) >= {"id", "name", "stage_order"}
    assert first["created_at"].endswith("Z") and first["expected_close_date"] is None
    second = crm.deal(name="App", amount=1234.5, currency="usd", expected_close_date="2026-12-31")
    assert (second["number"], second["reference"]) == (2, "VNT-2")
    assert (second["amount"], second["currency"]) == ("1234.50", "USD")
    assert second["expected_close_date"] == "2026-12-31T00:00:00.000Z"
    assert crm.ok(crm.get("/pipelines"))["data"][0]["deal_counter"] == 2


def test_deal_numbers_are_per_pipeline(crm: Crm) -> None:
    crm.deal()
    other = crm.ok(crm.post("/pipelines", {"name": "Renewals", "key": "REN"}), 201)
    stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    renewal = crm.deal(pipeline_id=other["id"], stage_id=stage["id"])
    assert renewal["reference"] == "REN-1"


def test_create_with_owner_account_contacts_and_conversations(crm: Crm) -> None:
    account = crm.account()
    ana, bob = crm.contact(name="Ana"), crm.contact(name="Bob")
    owner = str(uuid.uuid4())
    deal = crm.deal(
        owner_id=owner,
        account_id=account["id"],
        contacts=[{"contact_id": ana["id"], "role": "buyer", "is_primary": True}, {"contact_id": bob["id"]}],
        conversation_ids=["conv-1", "conv-2"],
    )
    assert deal["owner_id"] == owner and deal["account_id"] == account["id"]
    assert deal["contacts"] == [
        {"contact_id": ana["id"], "role": "buyer", "is_primary": True},
        {"contact_id": bob["id"], "role": None, "is_primary": False},
    ]
    assert [c["conversation_id"] for c in deal["conversations"]] == ["conv-1", "conv-2"]
    fetched = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert fetched["contacts"] == deal["contacts"]


def test_creating_in_a_won_stage_makes_the_deal_won(crm: Crm) -> None:
    pipeline = crm.pipeline()
    deal = crm.deal(stage_id=crm.stage(pipeline, "Won")["id"])
    assert deal["status"] == "won" and deal["closed_at"] is not None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": None}, "name"),
        ({"name": ""}, "name"),
        ({"pipeline_id": None}, "pipeline_id"),
        ({"stage_id": "nope"}, "stage_id"),
        ({"amount": -1}, "amount"),
        ({"amount": "abc"}, "amount"),
        ({"currency": "JPY"}, "currency"),
        ({"status": "pending"}, "status"),
        ({"expected_close_date": "31/12/2026"}, "expected_close_date"),
        ({"owner_id": "x" * 65}, "owner_id"),  # member ids are at most 64 characters
        ({"contacts": [{"role": "x"}]}, "contacts.0.contact_id"),
    ],
)
def test_create_validation_names_the_field(crm: Crm, change: dict[str, Any], field: str) -> None:
    pipeline = crm.pipeline()
    body = {"name": "D", "pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"], **change}
    body = {k: v for k, v in body.items() if v is not None}
    response = crm.post("/deals", body)
    assert response.status_code == 400
    error = response.get_json()
    assert error["statusCode"] == 400 and error["error"]["statusCode"] == 400
    assert error["error"]["message"].startswith(f"{field}:"), error


def test_at_most_one_primary_contact(crm: Crm) -> None:
    ana, bob = crm.contact(name="Ana"), crm.contact(name="Bob")
    pipeline = crm.pipeline()
    response = crm.post(
        "/deals",
        {
            "name": "D",
            "pipeline_id": pipeline["id"],
            "stage_id": pipeline["stages"][0]["id"],
            "contacts": [
                {"contact_id": ana["id"], "is_primary": True},
                {"contact_id": bob["id"], "is_primary": True},
            ],
        },
    )
    assert response.status_code == 400
    assert "at most one contact can be primary" in response.get_json()["error"]["message"]


def test_create_refuses_foreign_or_mismatched_references(crm: Crm, other_crm: Crm) -> None:
    pipeline = crm.pipeline()
    foreign = other_crm.pipeline()
    foreign_contact = other_crm.contact()
    stage = pipeline["stages"][0]["id"]
    cases = [
        ({"pipeline_id": foreign["id"], "stage_id": stage}, 404, "No Pipeline found"),
        ({"pipeline_id": pipeline["id"], "stage_id": foreign["stages"][0]["id"]}, 404, "No Stage found"),
        (
            {"pipeline_id": pipeline["id"], "stage_id": stage, "account_id": str(uuid.uuid4())},
            404,
            "No Account found",
        ),
        (
            {
                "pipeline_id": pipeline["id"],
                "stage_id": stage,
                "contacts": [{"contact_id": foreign_contact["id"]}],
            },
            404,
            "No Contact found",
        ),
    ]
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    other_stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    cases.append(
        (
            {"pipeline_id": pipeline["id"], "stage_id": other_stage["id"]},
            400,
            "stage_id: the stage belongs to another pipeline",
        )
    )
    for body, status, message in cases:
        response = crm.post("/deals", {"name": "D", **body})
        assert response.status_code == status, body
        assert response.get_json()["error"]["message"] == message


def test_get_deal_404s(crm: Crm, other_crm: Crm) -> None:
    foreign = other_crm.deal()
    for deal_id in (foreign["id"], str(uuid.uuid4())):
        for response in (
            crm.get(f"/deals/{deal_id}"),
            crm.patch(f"/deals/{deal_id}", {"name": "x"}),
            crm.patch(f"/deals/{deal_id}/stage", {"stage_id": foreign["stage_id"]}),
            crm.delete(f"/deals/{deal_id}"),
            crm.get(f"/deals/{deal_id}/stage-times"),
            crm.get(f"/deals/{deal_id}/activities"),
        ):
            assert response.status_code == 404
            assert response.get_json() == not_found_body("Deal")
    malformed = crm.get("/deals/not-a-uuid")
    assert malformed.status_code == 400 and malformed.get_json()["error"]["message"].startswith("id:")


def test_update_deal_changes_only_sent_fields(crm: Crm) -> None:
    deal = crm.deal(name="Old", amount=10, owner_id=str(uuid.uuid4()))
    updated = crm.ok(crm.patch(f"/deals/{deal['id']}", {"name": "New", "amount": 99.999, "currency": "EUR"}))
    assert (updated["name"], updated["amount"], updated["currency"]) == ("New", "100.00", "EUR")
    assert updated["owner_id"] == deal["owner_id"]
    cleared = crm.ok(
        crm.patch(f"/deals/{deal['id']}", {"owner_id": None, "expected_close_date": "2027-01-15"})
    )
    assert cleared["owner_id"] is None and cleared["expected_close_date"] == "2027-01-15T00:00:00.000Z"
    assert crm.ok(crm.patch(f"/deals/{deal['id']}", {"status": "lost"}))["status"] == "lost"
    assert crm.patch(f"/deals/{deal['id']}", {"status": "maybe"}).status_code == 400
    assert crm.patch(f"/deals/{deal['id']}", {"amount": -5}).status_code == 400


def test_changing_to_a_zero_decimal_currency_rounds_half_up(crm: Crm) -> None:
    deal = crm.deal(amount="1500.50", currency="USD")
    assert crm.ok(crm.patch(f"/deals/{deal['id']}", {"currency": "CLP"}))["amount"] == "1501"


def test_move_to_won_lost_and_back_to_open(crm: Crm) -> None:
    pipeline = crm.pipeline()
    deal = crm.deal()
    won = crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, "Won")["id"]}))
    assert won["status"] == "won" and won["closed_at"] is not None
    assert won["stage"]["name"] == "Won"
    lost = crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, "Lost")["id"]}))
    assert lost["status"] == "lost"
    reopened = crm.ok(
        crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, "Proposal")["id"]})
    )
    assert reopened["status"] == "open" and reopened["closed_at"] is None


def test_stage_move_refuses_other_pipelines_and_unknown_stages(crm: Crm, other_crm: Crm) -> None:
    deal = crm.deal()
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    response = crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": stage["id"]})
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == "stage_id: the stage belongs to another pipeline"
    foreign = other_crm.pipeline()["stages"][1]["id"]
    assert crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": foreign}).get_json() == not_found_body(
        "Stage"
    )
    missing = crm.patch(f"/deals/{deal['id']}/stage", {})
    assert missing.status_code == 400 and missing.get_json()["error"]["message"].startswith("stage_id:")


def test_patch_moves_deal_to_another_pipeline_with_a_new_reference(crm: Crm) -> None:
    deal = crm.deal()
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    first = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "Start", "stage_order": 0}), 201)
    moved = crm.ok(crm.patch(f"/deals/{deal['id']}", {"pipeline_id": other["id"]}))
    assert (moved["pipeline_id"], moved["stage_id"], moved["reference"]) == (other["id"], first["id"], "BB-1")
    # a stage of the deal's (new) pipeline through PATCH works; one of another pipeline is 400
    vnt = crm.pipeline()
    assert crm.patch(f"/deals/{deal['id']}", {"stage_id": vnt["stages"][1]["id"]}).status_code == 400


def test_soft_delete_hides_the_deal(crm: Crm) -> None:
    deal = crm.deal()
    assert crm.ok(crm.delete(f"/deals/{deal['id']}")) == {"id": deal["id"], "deleted": True}
    assert crm.get(f"/deals/{deal['id']}").get_json() == not_found_body("Deal")
    assert crm.ok(crm.get("/deals"))["total"] == 0
    assert crm.delete(f"/deals/{deal['id']}").status_code == 404
    assert crm.deal()["number"] == 2  # numbers are never reused


def _names(body: dict[str, Any]) -> list[str]:
    return [d["name"] for d in body["data"]]


def test_list_wrapper_defaults_and_limits(crm: Crm) -> None:
    for index in range(3):
        crm.deal(name=f"D{index}")
    body = crm.ok(crm.get("/deals"))
    assert set(body) == {"data", "total", "limit", "offset"}
    assert (body["total"], body["limit"], body["offset"]) == (3, 100, 0)
    assert _names(body) == ["D2", "D1", "D0"]  # newest first by default
    page = crm.ok(crm.get("/deals", limit=2, offset=1))
    assert (_names(page), page["total"], page["limit"], page["offset"]) == (["D1", "D0"], 3, 2, 1)
    assert crm.ok(crm.get("/deals", limit=1))["total"] == 3
    for params, field in (({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"offset": -1}, "offset")):
        response = crm.get("/deals", **params)
        assert response.status_code == 400
        assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_list_filters(crm: Crm) -> None:
    pipeline = crm.pipeline()
    new, won = crm.stage(pipeline, "New"), crm.stage(pipeline, "Won")
    account = crm.account()
    owner = str(uuid.uuid4())
    product = crm.ok(crm.post("/products", {"name": "Hosting", "price": 1000}), 201)["id"]
    crm.deal(name="Alpha website", amount=100, owner_id=owner, account_id=account["id"])
    crm.deal(name="Beta app", amount=500, currency="USD", stage_id=won["id"])
    gamma = crm.deal(name="Gamma hosting", amount=1000, expected_close_date="2026-12-15")
    crm.ok(
        crm.post(
            f"/deals/{gamma['id']}/line-items",
            {"name": "Plan", "quantity": 1, "unit_price": 1000, "product_id": product},
        ),
        201,
    )
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    crm.deal(name="Delta", pipeline_id=other["id"], stage_id=stage["id"], expected_close_date="2027-02-01")

    def names(**params: Any) -> set[str]:
        return set(_names(crm.ok(crm.get("/deals", **params))))

    assert names(search="WEB") == {"Alpha website"}
    assert names(pipeline_id=other["id"]) == {"Delta"}
    assert names(stage_id=new["id"]) == {"Alpha website", "Gamma hosting"}
    assert names(owner_id=owner) == {"Alpha website"}
    assert names(status="won") == {"Beta app"}
    assert names(status="open") == {"Alpha website", "Gamma hosting", "Delta"}
    assert names(account_id=account["id"]) == {"Alpha website"}
    assert names(product_id=product) == {"Gamma hosting"}
    assert names(amount_min=500) == {"Beta app", "Gamma hosting"}
    assert names(amount_max=500) == {"Alpha website", "Beta app", "Delta"}
    assert names(amount_min=200, amount_max=600) == {"Beta app"}
    assert names(unassigned="true") == {"Beta app", "Gamma hosting", "Delta"}
    assert names(unassigned="false") == {"Alpha website"}
    assert names(currency="USD") == {"Beta app"}
    assert names(expected_close_after="2026-12-15") == {"Gamma hosting", "Delta"}
    assert names(expected_close_before="2026-12-15") == {"Gamma hosting"}
    assert names(expected_close_after="2026-12-16", expected_close_before="2027-02-01") == {"Delta"}
    assert crm.ok(crm.get("/deals", search="a", limit=1))["total"] == 4
    for params, field in (
        ({"status": "pending"}, "status"),
        ({"amount_min": "x"}, "amount_min"),
        ({"currency": "JPY"}, "currency"),
        ({"created_after": "2026-13-01"}, "created_after"),
        ({"timezone": "Mars/Base"}, "timezone"),
        ({"sort_by": "reference"}, "sort_by"),
        ({"sort_dir": "up"}, "sort_dir"),
        ({"pipeline_id": "x"}, "pipeline_id"),
    ):
        response = crm.get("/deals", **params)
        assert response.status_code == 400, params
        assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_created_date_filters_use_the_time_zone(app: Flask, crm: Crm) -> None:
    early = crm.deal(name="early")  # 2026-03-10 05:00Z = 2026-03-09 23:00 in Mexico City (UTC-6)
    late = crm.deal(name="late")  # 2026-03-10 07:00Z = 2026-03-10 01:00 in Mexico City
    _set_created(app, early["id"], datetime(2026, 3, 10, 5, 0, tzinfo=UTC))
    _set_created(app, late["id"], datetime(2026, 3, 10, 7, 0, tzinfo=UTC))

    def names(**params: Any) -> list[str]:
        return sorted(_names(crm.ok(crm.get("/deals", **params))))

    assert names(created_after="2026-03-10", created_before="2026-03-10") == ["early", "late"]  # UTC day
    mexico = {"timezone": "America/Mexico_City"}
    assert names(created_after="2026-03-10", created_before="2026-03-10", **mexico) == ["late"]
    assert names(created_before="2026-03-09", **mexico) == ["early"]
    assert names(created_after="2026-03-11") == []
    empty = crm.get("/deals", created_after="2026-03-12", created_before="2026-03-11")
    assert empty.status_code == 400


@pytest.mark.parametrize(
    ("sort_by", "ascending"),
    [
        ("amount", ["cheap", "mid", "dear"]),
        ("name", ["cheap", "dear", "mid"]),
        ("created_at", ["cheap", "mid", "dear"]),
        ("updated_at", ["mid", "dear", "cheap"]),
        ("expected_close_date", ["dear", "cheap", "mid"]),
    ],
)
def test_sorting(crm: Crm, sort_by: str, ascending: list[str]) -> None:
    cheap = crm.deal(name="cheap", amount=1, expected_close_date="2026-06-01")
    crm.deal(name="mid", amount=50, expected_close_date="2026-07-01")
    crm.deal(name="dear", amount=900, expected_close_date="2026-05-01")
    crm.ok(crm.patch(f"/deals/{cheap['id']}", {"owner_id": str(uuid.uuid4())}))  # touched last
    up = _names(crm.ok(crm.get("/deals", sort_by=sort_by, sort_dir="asc")))
    down = _names(crm.ok(crm.get("/deals", sort_by=sort_by, sort_dir="desc")))
    assert up == ascending
    assert down == list(reversed(ascending))
