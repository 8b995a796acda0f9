"""Line items and the computed amount; linked conversations and their summaries; the activity timeline;
time in stage."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from blueprints.crm import hooks
from blueprints.crm.services import deals as deal_services
from tests.crm.conftest import Crm, not_found_body


def _item(crm: Crm, deal: dict[str, Any], status: int = 201, **fields: Any) -> Any:
    response = crm.post(
        f"/deals/{deal['id']}/line-items", {"name": "Item", "quantity": 1, "unit_price": 1, **fields}
    )
    assert response.status_code == status, response.get_json()
    return response.get_json()


def test_line_item_total_and_deal_amount(crm: Crm) -> None:
    deal = crm.deal(amount=999, currency="USD")
    first = _item(crm, deal, name="Licences", quantity=3, unit_price="0.335", sku="LIC", notes="per seat")
    # 3 x 0.335 = 1.005 -> 1.01 half-up (banker's rounding would say 1.00)
    assert (first["total"], first["unit_price"], first["discount"], first["currency"]) == (
        "1.01",
        "0.335",
        "0.00",
        "USD",
    )
    assert (first["sku"], first["notes"], first["quantity"]) == ("LIC", "per seat", 3)
    hours = crm.ok(crm.post("/products", {"name": "Hours", "price": 40, "currency": "USD"}), 201)["id"]
    second = _item(crm, deal, name="Hours", quantity=2.5, unit_price=40, discount=10, product_id=hours)
    assert (second["total"], second["quantity"]) == ("90.00", 2.5)  # 2.5 x 40 - 10
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "91.01"
    # a discount larger than the price floors the total at zero
    free = _item(crm, deal, name="Gift", quantity=1, unit_price=5, discount=8)
    assert free["total"] == "0.00"
    fetched = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert fetched["amount"] == "91.01" and len(fetched["line_items"]) == 3


def test_line_items_in_a_zero_decimal_currency(crm: Crm) -> None:
    deal = crm.deal(currency="CLP")
    item = _item(crm, deal, quantity=3, unit_price="333.5")
    assert (item["total"], item["unit_price"]) == ("1001", "333.5")  # 1000.5 -> 1001
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "1001"


def test_line_item_currency_must_be_the_deals(crm: Crm) -> None:
    deal = crm.deal(currency="EUR")
    assert _item(crm, deal)["currency"] == "EUR"  # defaults to the deal's
    response = crm.post(
        f"/deals/{deal['id']}/line-items", {"name": "X", "quantity": 1, "unit_price": 1, "currency": "MXN"}
    )
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == "currency: must be the deal's currency (EUR)"


def test_update_and_delete_line_items_recalculate_the_amount(crm: Crm) -> None:
    deal = crm.deal()
    item = _item(crm, deal, quantity=2, unit_price=100)
    other = _item(crm, deal, quantity=1, unit_price=50)
    updated = crm.ok(
        crm.patch(f"/deals/{deal['id']}/line-items/{item['id']}", {"quantity": 3, "discount": 25})
    )
    assert (updated["total"], updated["unit_price"], updated["name"]) == ("275.00", "100.00", "Item")
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "325.00"
    # while line items exist the amount is theirs
    refused = crm.patch(f"/deals/{deal['id']}", {"amount": 1})
    assert refused.status_code == 409
    assert crm.patch(f"/deals/{deal['id']}", {"currency": "USD"}).status_code == 409
    assert crm.ok(crm.delete(f"/deals/{deal['id']}/line-items/{item['id']}"))["deleted"] is True
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "50.00"
    crm.ok(crm.delete(f"/deals/{deal['id']}/line-items/{other['id']}"))
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["amount"] == "0.00"
    assert crm.ok(crm.patch(f"/deals/{deal['id']}", {"amount": 12}))["amount"] == "12.00"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"quantity": 1, "unit_price": 1}, "name"),
        ({"name": "x", "unit_price": 1}, "quantity"),
        ({"name": "x", "quantity": 0, "unit_price": 1}, "quantity"),
        ({"name": "x", "quantity": 1}, "unit_price"),
        ({"name": "x", "quantity": 1, "unit_price": -1}, "unit_price"),
        ({"name": "x", "quantity": 1, "unit_price": 1, "discount": -1}, "discount"),
        ({"name": "x", "quantity": 1, "unit_price": 1, "product_id": "p"}, "product_id"),
    ],
)
def test_line_item_validation(crm: Crm, body: dict[str, Any], field: str) -> None:
    deal = crm.deal()
    response = crm.post(f"/deals/{deal['id']}/line-items", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_line_item_404s(crm: Crm, other_crm: Crm) -> None:
    deal = crm.deal()
    foreign = other_crm.deal()
    foreign_item = _item(other_crm, foreign)
    response = crm.patch(f"/deals/{deal['id']}/line-items/{foreign_item['id']}", {"quantity": 2})
    assert response.get_json() == not_found_body("Line item")
    assert crm.delete(f"/deals/{deal['id']}/line-items/{uuid.uuid4()}").get_json() == not_found_body(
        "Line item"
    )
    assert crm.post(
        f"/deals/{foreign['id']}/line-items", {"name": "x", "quantity": 1, "unit_price": 1}
    ).get_json() == (not_found_body("Deal"))
    assert crm.delete(f"/deals/{foreign['id']}/line-items/{foreign_item['id']}").get_json() == not_found_body(
        "Deal"
    )


@pytest.fixture
def transcript() -> Iterator[dict[str, list[tuple[str, str, str]]]]:
    """A conversation reader as the messaging area would register it."""
    store: dict[str, list[tuple[str, str, str]]] = {}

    def reader(*, organization_id: uuid.UUID, conversation_id: str) -> list[tuple[str, str, str]] | None:
        return store.get(conversation_id)

    with hooks.conversation_transcript.connected(reader):
        yield store


def test_link_without_a_transcript_records_that_none_exists(crm: Crm) -> None:
    deal = crm.deal()
    link = crm.ok(
        crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "call-9", "channel": "voice"}), 201
    )
    assert (link["conversation_id"], link["channel"], link["linked_by"]) == ("call-9", "voice", None)
    assert link["summary"] == hooks.NO_TRANSCRIPT
    [activity] = [
        a
        for a in crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["data"]
        if a["type"] == "conversation_linked"
    ]
    assert activity["summary"] == hooks.NO_TRANSCRIPT
    assert activity["data"]["summary_method"] == "none"


def test_link_captures_an_extractive_summary(crm: Crm, transcript: dict[str, Any]) -> None:
    transcript["wa-1"] = [
        (
            "inbound",
            "Hola. I need a quote for 20 solar panels for my warehouse roof.",
            "2026-11-20T10:00:00Z",
        ),
        ("outbound", "Thanks! Which panel wattage do you prefer?", "2026-11-20T10:01:00Z"),
        (
            "inbound",
            "400W panels, and installation on the warehouse roof before December.",
            "2026-11-20T10:05:00Z",
        ),
        ("outbound", "Great, I will send the solar panels quote today.", "2026-11-20T10:06:00Z"),
    ]
    deal = crm.deal()
    member = str(uuid.uuid4())
    link = crm.ok(
        crm.post(
            f"/deals/{deal['id']}/conversations",
            {"conversation_id": "wa-1", "channel": "whatsapp", "linked_by": member},
        ),
        201,
    )
    summary = link["summary"]
    assert summary.startswith("4 messages (2 from the contact, 2 from the business).")
    assert "solar panels" in summary and "warehouse roof" in summary
    # the contact's lines are labelled for people, not with an internal class name
    assert "Contact: " in summary and "Agent: " in summary and "CrmContact" not in summary
    assert link["linked_by"] == member
    activities = crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["data"]
    linked = next(a for a in activities if a["type"] == "conversation_linked")
    assert linked["summary"] == summary and linked["actor"] == member
    assert linked["data"] == {
        "conversation_id": "wa-1",
        "channel": "whatsapp",
        "summary_method": "extractive",
        "message_count": 4,
    }


def test_a_plugged_in_summarizer_replaces_the_default(crm: Crm) -> None:
    def model(*, organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> hooks.Summary:
        return hooks.Summary(f"LLM summary of {conversation_id} on {channel}", "test-model", 7)

    deal = crm.deal()
    with hooks.conversation_summary.connected(model):
        link = crm.ok(
            crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "c1", "channel": "email"}), 201
        )
    assert link["summary"] == "LLM summary of c1 on email"
    assert model not in hooks.conversation_summary.receivers


def test_duplicate_link_unlink_and_errors(crm: Crm, other_crm: Crm) -> None:
    deal = crm.deal()
    link = crm.ok(crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "c1"}), 201)
    again = crm.post(f"/deals/{deal['id']}/conversations", {"conversation_id": "c1"})
    assert again.status_code == 409
    for body, field in (
        ({}, "conversation_id"),
        ({"conversation_id": "c2", "channel": "fax"}, "channel"),
        ({"conversation_id": "c2", "linked_by": "m" * 65}, "linked_by"),
    ):
        response = crm.post(f"/deals/{deal['id']}/conversations", body)
        assert response.status_code == 400 and response.get_json()["error"]["message"].startswith(f"{field}:")
    assert crm.ok(crm.delete(f"/deals/{deal['id']}/conversations/{link['id']}"))["deleted"] is True
    assert crm.ok(crm.get(f"/deals/{deal['id']}"))["conversations"] == []
    assert crm.delete(f"/deals/{deal['id']}/conversations/{link['id']}").get_json() == not_found_body(
        "Conversation link"
    )
    types = [a["type"] for a in crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["data"]]
    assert types[:2] == ["conversation_unlinked", "conversation_linked"]
    foreign = other_crm.deal()
    assert crm.post(
        f"/deals/{foreign['id']}/conversations", {"conversation_id": "x"}
    ).get_json() == not_found_body("Deal")


def test_activity_timeline_records_changes_and_notes(crm: Crm) -> None:
    pipeline = crm.pipeline()
    deal = crm.deal(amount=10)
    crm.ok(crm.patch(f"/deals/{deal['id']}", {"amount": 20}))
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": crm.stage(pipeline, "Won")["id"]}))
    note = crm.ok(crm.post(f"/deals/{deal['id']}/notes", {"body": "Signed on paper"}), 201)
    assert (note["type"], note["summary"]) == ("note", "Signed on paper")
    assert crm.post(f"/deals/{deal['id']}/notes", {"body": ""}).status_code == 400
    body = crm.ok(crm.get(f"/deals/{deal['id']}/activities"))
    types = [a["type"] for a in body["data"]]
    assert types == ["note", "status_changed", "stage_changed", "amount_changed", "created"]
    assert body["total"] == 5
    amount = body["data"][3]["data"]
    assert (amount["from"], amount["to"], amount["reason"]) == ("10.00", "20.00", "manual")
    assert body["data"][1]["data"] == {"from": "open", "to": "won"}


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def test_stage_times_sum_revisits_and_run_the_current_stay_to_now(
    crm: Crm, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    monkeypatch.setattr(deal_services, "utcnow", clock)
    pipeline = crm.pipeline()
    new, qualified, proposal = (crm.stage(pipeline, n) for n in ("New", "Qualified", "Proposal"))
    deal = crm.deal(stage_id=new["id"])
    clock.advance(hours=1)
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": qualified["id"]}))
    clock.advance(hours=2)
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": new["id"]}))
    clock.advance(minutes=30)
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": proposal["id"]}))
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": proposal["id"]}))  # same stage: no new visit
    clock.advance(hours=1, minutes=30)
    body = crm.ok(crm.get(f"/deals/{deal['id']}/stage-times"))
    assert body["deal_id"] == deal["id"]
    assert body["stages"] == [
        {
            "stage_id": new["id"],
            "stage_name": "New",
            "stage_order": 0,
            "duration_ms": 5_400_000,
            "is_current": False,
            "visits": 2,
        },
        {
            "stage_id": qualified["id"],
            "stage_name": "Qualified",
            "stage_order": 1,
            "duration_ms": 7_200_000,
            "is_current": False,
            "visits": 1,
        },
        {
            "stage_id": proposal["id"],
            "stage_name": "Proposal",
            "stage_order": 2,
            "duration_ms": 5_400_000,
            "is_current": True,
            "visits": 1,
        },
    ]


def test_rotting_flag_follows_the_stage_threshold(crm: Crm, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = crm.pipeline()
    stage = crm.stage(pipeline, "New")
    crm.ok(crm.patch(f"/pipelines/stages/{stage['id']}", {"rotting_days": 3}))
    clock = Clock(datetime.now(UTC) - timedelta(days=4))
    monkeypatch.setattr(deal_services, "utcnow", clock)
    stale = crm.deal(name="stale")
    clock.now = datetime.now(UTC)
    fresh = crm.deal(name="fresh")
    assert crm.ok(crm.get(f"/deals/{stale['id']}"))["is_rotting"] is True
    assert crm.ok(crm.get(f"/deals/{fresh['id']}"))["is_rotting"] is False
