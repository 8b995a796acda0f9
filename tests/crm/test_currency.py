"""Base currency, exchange rates and the pipeline summary converted to the base currency."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

import pytest

from blueprints.crm.money import find_conversion, money_str, round_money
from tests.crm.conftest import Crm, not_found_body


def test_currency_defaults_to_mxn_without_rates(crm: Crm) -> None:
    body = crm.ok(crm.get("/currency"))
    assert body["base_currency"] == "MXN"
    assert body["rates"] == []
    assert {"MXN", "USD", "EUR", "COP", "CLP", "PYG", "CAD"} <= set(body["supported_currencies"])


def test_set_base_currency(crm: Crm) -> None:
    assert crm.ok(crm.patch("/currency/base", {"base_currency": "usd"}))["base_currency"] == "USD"
    assert crm.ok(crm.get("/currency"))["base_currency"] == "USD"
    for bad in ({"base_currency": "XYZ"}, {}, {"base_currency": 5}):
        response = crm.patch("/currency/base", bad)
        assert response.status_code == 400
        assert response.get_json()["error"]["message"].startswith("base_currency:")


def test_rates_are_upserted_per_pair(crm: Crm) -> None:
    first = crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": 17.25}))
    assert (first["from_currency"], first["to_currency"], first["rate"]) == ("USD", "MXN", "17.25")
    crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": "18.1"}))
    crm.ok(crm.post("/currency/rates", {"from_currency": "MXN", "to_currency": "USD", "rate": 0.055}))
    rates = crm.ok(crm.get("/currency"))["rates"]
    assert [(r["from_currency"], r["to_currency"], r["rate"]) for r in rates] == [
        ("MXN", "USD", "0.055"),
        ("USD", "MXN", "18.1"),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to_currency": "MXN", "rate": 1}, "from_currency"),
        ({"from_currency": "USD", "rate": 1}, "to_currency"),
        ({"from_currency": "USD", "to_currency": "MXN"}, "rate"),
        ({"from_currency": "USD", "to_currency": "MXN", "rate": 0}, "rate"),
        ({"from_currency": "USD", "to_currency": "MXN", "rate": -2}, "rate"),
        ({"from_currency": "USD", "to_currency": "MXN", "rate": "abc"}, "rate"),
        ({"from_currency": "XXX", "to_currency": "MXN", "rate": 1}, "from_currency"),
        ({"from_currency": "USD", "to_currency": "USD", "rate": 1}, "to_currency"),
    ],
)
def test_rate_validation(crm: Crm, body: dict, field: str) -> None:
    response = crm.post("/currency/rates", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_delete_rate(crm: Crm) -> None:
    crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": 17}))
    assert crm.ok(crm.delete("/currency/rates/USD/MXN"))["rates"] == []
    response = crm.delete("/currency/rates/USD/MXN")
    assert response.get_json() == not_found_body("Exchange rate")


def _summary(crm: Crm, pipeline_id: str) -> dict[str, Any]:
    """The summary parsed with JSON numbers as Decimal, so their exact text can be checked."""
    response = crm.get(f"/currency/pipeline/{pipeline_id}/summary")
    assert response.status_code == 200, response.get_json()
    return json.loads(response.data, parse_float=Decimal)


def _number(value: Any) -> str:
    """The text of a JSON number (the summary's totals are numbers, never strings)."""
    assert isinstance(value, int | Decimal) and not isinstance(value, bool), value
    return str(value)


def _deal(crm: Crm, stage: dict, pipeline: dict, amount: str, currency: str) -> dict:
    return crm.deal(pipeline_id=pipeline["id"], stage_id=stage["id"], amount=amount, currency=currency)


def test_summary_converts_direct_inverse_and_cross_rates(crm: Crm) -> None:
    pipeline = crm.pipeline()
    new, proposal, won = (crm.stage(pipeline, n) for n in ("New", "Proposal", "Won"))
    crm.ok(
        crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": "17.50"})
    )  # direct
    crm.ok(
        crm.post("/currency/rates", {"from_currency": "MXN", "to_currency": "EUR", "rate": "0.05"})
    )  # inverse
    crm.ok(
        crm.post("/currency/rates", {"from_currency": "COP", "to_currency": "USD", "rate": "0.00025"})
    )  # cross
    _deal(crm, new, pipeline, "1000.00", "MXN")  # 1000.00 MXN
    _deal(crm, new, pipeline, "200.00", "USD")  # 200 x 17.50 = 3500.00
    _deal(crm, proposal, pipeline, "150.00", "EUR")  # 150 / 0.05 = 3000.00
    _deal(crm, proposal, pipeline, "2000000.00", "COP")  # 2,000,000 x 0.00025 x 17.50 = 8750.00
    _deal(crm, won, pipeline, "10.00", "USD")  # 175.00
    deleted = _deal(crm, won, pipeline, "999.00", "MXN")
    crm.ok(crm.delete(f"/deals/{deleted['id']}"))  # deleted deals are not counted

    summary = _summary(crm, pipeline["id"])
    assert summary["pipeline_id"] == pipeline["id"]
    assert summary["base_currency"] == "MXN"
    assert summary["total_deals"] == 5 and summary["converted_deals"] == 5
    assert summary["complete"] is True and summary["unconverted"] == []
    # by hand: New 4500.00 (weighted 10% = 450.00); Proposal 11750.00 (50% = 5875.00); Won 175.00 (100%)
    assert _number(summary["total_amount"]) == "16425.00"
    assert summary["weighted_amount"] == "6500.00"
    stages = {s["stage_name"]: s for s in summary["stages"]}
    assert [s["stage_name"] for s in summary["stages"]] == [s["name"] for s in pipeline["stages"]]
    assert (
        stages["New"]["deal_count"],
        _number(stages["New"]["total_amount"]),
        stages["New"]["weighted_amount"],
    ) == (
        2,
        "4500.00",
        "450.00",
    )
    assert (stages["Proposal"]["deal_count"], _number(stages["Proposal"]["total_amount"])) == (2, "11750.00")
    assert stages["Proposal"]["weighted_amount"] == "5875.00"
    assert (stages["Won"]["deal_count"], _number(stages["Won"]["total_amount"])) == (1, "175.00")
    assert (stages["Qualified"]["deal_count"], _number(stages["Qualified"]["total_amount"])) == (0, "0.00")
    assert all(s["currency"] == "MXN" for s in summary["stages"])
    methods = {c["currency"]: (c["method"], c["path"]) for c in summary["conversions"]}
    assert methods == {
        "MXN": ("identity", ["MXN"]),
        "USD": ("direct", ["USD", "MXN"]),
        "EUR": ("inverse", ["EUR", "MXN"]),
        "COP": ("cross", ["COP", "USD", "MXN"]),
    }


def test_summary_reports_deals_it_cannot_convert(crm: Crm) -> None:
    pipeline = crm.pipeline()
    new = crm.stage(pipeline, "New")
    crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": "20"}))
    _deal(crm, new, pipeline, "100.00", "USD")
    stranded = _deal(crm, new, pipeline, "5000.00", "ARS")
    summary = _summary(crm, pipeline["id"])
    assert summary["complete"] is False
    assert summary["total_deals"] == 2 and summary["converted_deals"] == 1
    assert _number(summary["total_amount"]) == "2000.00"  # the ARS deal is not added at a made-up rate
    [missing] = summary["unconverted"]
    assert missing == {
        "deal_id": stranded["id"],
        "reference": stranded["reference"],
        "stage_id": new["id"],
        "amount": "5000.00",
        "currency": "ARS",
        "reason": "no exchange rate from ARS to MXN",
    }
    stage = next(s for s in summary["stages"] if s["stage_id"] == new["id"])
    assert (stage["deal_count"], stage["unconverted_count"], _number(stage["total_amount"])) == (
        2,
        1,
        "2000.00",
    )


def test_summary_in_a_zero_decimal_base_currency(crm: Crm) -> None:
    pipeline = crm.pipeline()
    new = crm.stage(pipeline, "New")  # 10 %
    crm.ok(crm.patch("/currency/base", {"base_currency": "CLP"}))
    crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "CLP", "rate": "933.35"}))
    _deal(crm, new, pipeline, "10.01", "USD")  # 9342.8335 CLP -> 9343; weighted 934.28335 -> 934
    _deal(crm, new, pipeline, "1500.5", "CLP")  # stored 1501 (CLP has no minor units)
    summary = _summary(crm, pipeline["id"])
    assert summary["base_currency"] == "CLP"
    assert _number(summary["total_amount"]) == "10844"  # 9342.8335 + 1501 = 10843.8335
    assert summary["weighted_amount"] == "1084"  # 1084.38335


def test_summary_404s(crm: Crm, other_crm: Crm) -> None:
    foreign = other_crm.pipeline()
    for pipeline_id in (foreign["id"], str(uuid.uuid4())):
        response = crm.get(f"/currency/pipeline/{pipeline_id}/summary")
        assert response.status_code == 404
        assert response.get_json() == not_found_body("Pipeline")


def test_money_rounding_is_half_up_to_minor_units() -> None:
    assert money_str(Decimal("2.345"), "USD") == "2.35"
    assert money_str(Decimal("2.344"), "USD") == "2.34"
    assert money_str(Decimal("0.125"), "EUR") == "0.13"  # banker's rounding would give 0.12
    assert money_str(Decimal("1500.5"), "CLP") == "1501"
    assert money_str(Decimal("2500.5"), "PYG") == "2501"
    assert money_str(Decimal("-0.001"), "USD") == "0.00"
    assert round_money(Decimal("7"), "MXN") == Decimal("7.00")


def test_conversion_prefers_direct_then_inverse_then_shortest_chain() -> None:
    rates = {("USD", "MXN"): Decimal("17"), ("MXN", "USD"): Decimal("0.05")}
    assert find_conversion("USD", "MXN", rates).method == "direct"  # type: ignore[union-attr]
    inverse = find_conversion("MXN", "USD", {("USD", "MXN"): Decimal("20")})
    assert inverse is not None and inverse.rate == Decimal("0.05") and inverse.method == "inverse"
    chain = find_conversion(
        "COP",
        "MXN",
        {("COP", "USD"): Decimal("0.00025"), ("EUR", "USD"): Decimal("1.1"), ("MXN", "EUR"): Decimal("0.05")},
    )
    assert chain is not None and chain.path == ("COP", "USD", "EUR", "MXN")
    assert chain.rate == Decimal("0.00025") / Decimal("1.1") / Decimal("0.05")
    assert find_conversion("ARS", "MXN", {("USD", "MXN"): Decimal("17")}) is None
