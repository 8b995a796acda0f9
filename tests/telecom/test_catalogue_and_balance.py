"""Catalogues loaded by the CLI (plans, top-ups, eSIM offers, area codes from libphonenumber) and the
prepaid balance with its immutable ledger."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.telecom.models import LedgerEntry
from core.db import db
from core.environments import in_environment
from tests.conftest import Org
from tests.telecom.conftest import Partner


def test_plans_topups_and_prices_are_exact(partner: Partner, commits: Callable) -> None:
    with commits() as counted:
        plans = partner.ok(partner.get("/plans"))
    assert counted.count == 0
    by_id = {p["id"]: p for p in plans["data"]}
    voz = by_id["pln_voz_1000"]
    assert voz["price"] == {"amount": "99.50", "currency": "MXN"}
    assert voz["allowances"] == {"data_bytes": 1073741824, "voice_seconds": 60000, "sms_messages": 500}
    assert by_id["pln_ilimitado"]["allowances"]["data_bytes"] is None
    assert partner.ok(partner.get("/plans/pln_ilimitado"))["sim_types"] == ["ESIM"]
    assert partner.get("/plans/pln_nope").status_code == 404
    topups = partner.ok(partner.get("/topups", plan="pln_ilimitado"))["data"]
    assert [t["id"] for t in topups] == ["tup_datos_1gb"]


def test_esim_offers_empty_without_travel_esim(
    partner: Partner, make_org: Callable[..., Org], make_partner: Callable[..., Partner]
) -> None:
    offers = partner.ok(partner.get("/esim-offers"))["data"]
    assert {o["id"] for o in offers} == {"off_us_5gb_15d", "off_eu_10gb_30d", "off_global_unlimited_7d"}
    assert [o["id"] for o in partner.ok(partner.get("/esim-offers", country="fr"))["data"]] == [
        "off_eu_10gb_30d",
        "off_global_unlimited_7d",
    ]
    sim_only = make_partner(make_org("SIM only", products="SIM"))
    assert sim_only.ok(sim_only.get("/esim-offers")) == {"object": "list", "data": [], "has_more": False}


def test_area_codes_come_from_libphonenumber(partner: Partner) -> None:
    cdmx = partner.ok(partner.get("/area_codes", code="55"))["data"]
    assert cdmx[0]["states"] == ["CMX"] and cdmx[0]["digits"] == 2 and cdmx[0]["local_number_length"] == 8
    merida = partner.ok(partner.get("/area_codes", code="999"))["data"][0]
    assert "YUC" in merida["states"] and "Mérida" in merida["cities"]
    jalisco = partner.ok(partner.get("/area_codes", state="Jalisco"))["data"]
    assert "33" in {a["code"] for a in jalisco} and len(jalisco) > 10
    everything = partner.ok(partner.get("/area_codes"))["data"]
    assert len(everything) > 300 and all(a["states"] for a in everything)


def test_catalogue_load_archives_missing_items(
    partner: Partner, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    document = {
        "plans": [
            {"id": "pln_basico_5gb", "name": "Básico", "price": {"amount": "209.00"}, "allowances": {}}
        ],
        "topups": [],
        "esim_offers": [],
    }
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(document))
    result = runner.invoke(args=["telecom", "catalogue", "load", str(path), "--env", "live"])
    assert result.exit_code == 0, result.output
    assert [p["id"] for p in partner.ok(partner.get("/plans"))["data"]] == ["pln_basico_5gb"]
    assert partner.ok(partner.get("/plans/pln_basico_5gb"))["price"]["amount"] == "209.00"
    archived = partner.ok(partner.get("/plans", status="archived"))["data"]
    assert "pln_plus_20gb" in {p["id"] for p in archived}
    path.write_text(json.dumps({"plans": [{"id": "x", "name": "x", "price": "1.005"}]}))
    refused = runner.invoke(args=["telecom", "catalogue", "load", str(path)])
    assert refused.exit_code != 0 and "two decimals" in refused.output


def test_balance_credit_and_ledger(partner: Partner, runner: FlaskCliRunner, org: Org) -> None:
    assert partner.balance() == {
        "object": "balance",
        "currency": "MXN",
        "available": "0.00",
        "held": "0.00",
        "ledger": "0.00",
        "livemode": True,
        "updated_at": None,
    }
    partner.credit("500.10")
    partner.credit("0.90")
    balance = partner.balance()
    assert (balance["available"], balance["ledger"]) == ("501.00", "501.00")
    entries = partner.ok(partner.get("/balance/transactions"))["data"]
    assert [(e["type"], e["amount"], e["balance_after"]) for e in entries] == [
        ("credit", "0.90", "501.00"),
        ("credit", "500.10", "500.10"),
    ]
    assert partner.ok(partner.get(f"/balance/transactions/{entries[0]['id']}"))["id"] == entries[0]["id"]
    for bad in ("0", "-5", "1.001", "abc"):
        result = runner.invoke(args=["telecom", "balance", "credit", "--org", org.id, "--amount", bad])
        assert result.exit_code != 0
    assert partner.balance()["ledger"] == "501.00"


def test_ledger_entries_are_immutable(partner: Partner, app: Flask) -> None:
    partner.credit("10.00")
    with in_environment(app, "live"):
        entry = db.session.scalars(db.select(LedgerEntry)).one()
        entry.amount_cents = 1
        with pytest.raises(RuntimeError, match="immutable"):
            db.session.flush()
        db.session.rollback()


def test_balance_is_per_environment_and_organization(
    partner: Partner, org: Org, other_org: Org, make_partner: Callable[..., Partner], client: FlaskClient
) -> None:
    partner.credit("100.00")
    assert make_partner(org, "sandbox").balance()["available"] == "0.00"
    other = make_partner(other_org)
    assert other.balance()["available"] == "0.00"
    entry = partner.ok(partner.get("/balance/transactions"))["data"][0]
    assert other.get(f"/balance/transactions/{entry['id']}").status_code == 404
