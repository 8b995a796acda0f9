"""Subscriptions: product gating before validation, KYC and the line limit, eSIM credentials, actions as
asynchronous orders (allowed and refused moves), holds and debits, idempotent retries, usage, renewal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.telecom.mexico import luhn_valid
from blueprints.telecom.models import Subscription
from blueprints.telecom.services import subscriptions
from core.db import db, utcnow
from core.environments import in_environment
from tests.conftest import Org
from tests.telecom.conftest import Partner


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


@pytest.fixture
def held_orders(monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """Keep orders from reaching the carrier until the test releases them, to see transitional states."""
    waiting: list = []
    monkeypatch.setattr(
        subscriptions, "dispatch", lambda order: waiting.append((str(order.organization_id), order.id))
    )
    yield waiting


def _release(app: Flask, waiting: list, environment: str = "live") -> None:
    with in_environment(app, environment):
        for organization_id, order_id in waiting:
            subscriptions.process_order(organization_id, order_id)
    waiting.clear()


def test_orders_route_is_not_published(client: FlaskClient, org: Org) -> None:
    assert client.get("/v1/partner/subscriptions").status_code == 401
    assert client.get("/v1/partner/users").status_code == 401
    for path in ("/v1/partner/orders", "/v1/partner/orders/ord_1"):
        response = client.get(path)
        assert (response.status_code, response.get_json()) == (404, {"error_msg": "404 Route Not Found"})
        assert client.get(path, headers=org.headers()).status_code == 404


def test_product_gating_decides_before_validation(
    partner: Partner, make_org: Callable[..., Org], make_partner: Callable[..., Partner]
) -> None:
    sim_only = make_partner(make_org("SIM only", products="SIM"))
    refused = _error(sim_only.post("/subscriptions", {"type": "ESIM"}), 403)
    assert (refused["type"], refused["code"]) == ("permission_error", "product_not_enabled")
    invalid = _error(partner.post("/subscriptions", {"type": "ESIM"}), 400)
    assert invalid["param"] == "user" and "plan" in invalid["message"] and "area_code" in invalid["message"]
    assert _error(sim_only.post("/subscriptions", {"type": "SIM"}), 400)["param"] == "user"
    assert _error(partner.post("/subscriptions", {"type": "PSIM"}), 400)["param"] == "type"


def test_line_purchase_holds_then_debits(
    partner: Partner, app: Flask, held_orders: list, commits: Callable
) -> None:
    user = partner.verified_user()
    partner.credit("500.00")
    with commits() as counted:
        response = partner.post(
            "/subscriptions", {"type": "ESIM", "user": user["id"], "plan": "pln_plus_20gb", "area_code": "33"}
        )
    assert counted.count == 1
    created = partner.ok(response, 202)
    assert created["status"] == "pending" and created["order"]["type"] == "line_purchase"
    assert (
        created["order"]["amount"] == "299.00"
        and created["pending_action"]["order"] == created["order"]["id"]
    )
    assert (
        created["esim"]["activation_code"]
        == f"LPA:1${created['esim']['smdp_address']}${created['esim']['matching_id']}"
    )
    iccid = created["sim"]["iccid"]
    assert iccid.startswith("8952") and len(iccid) == 19 and luhn_valid(iccid)
    assert created["registration_folio"].endswith("-01") and created["phone_number"] is None
    assert partner.balance() | {"updated_at": None} == partner.balance() | {
        "available": "201.00",
        "held": "299.00",
        "ledger": "500.00",
        "updated_at": None,
    }

    _release(app, held_orders)
    line = partner.ok(partner.get(f"/subscriptions/{created['id']}"))
    assert line["status"] == "active" and line["pending_action"] is None and line["sim"]["status"] == "active"
    assert line["phone_number"].startswith("+5233") and len(line["phone_number"]) == 13
    assert line["current_period"]["start"] == line["activated_at"]
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("201.00", "0.00", "201.00")
    kinds = [
        t["type"]
        for t in partner.ok(partner.get("/balance/transactions", source_id=created["order"]["id"]))["data"]
    ]
    assert sorted(kinds) == ["debit", "hold", "hold_release"]
    orders = partner.ok(partner.get(f"/subscriptions/{created['id']}/orders"))["data"]
    assert [(o["type"], o["status"]) for o in orders] == [("line_purchase", "completed")]


def test_line_needs_balance_kyc_plan_and_area_code(partner: Partner) -> None:
    user = partner.verified_user()
    body = {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "area_code": "55"}
    poor = _error(partner.post("/subscriptions", body), 402)
    assert (poor["code"], poor["type"]) == ("balance_insufficient", "invalid_request_error")
    assert partner.ok(partner.get("/subscriptions"))["data"] == []
    assert partner.ok(partner.get("/balance/transactions"))["data"] == []
    partner.credit("1000.00")
    unverified = partner.user()
    assert (
        _error(partner.post("/subscriptions", {**body, "user": unverified["id"]}), 409)["code"]
        == "kyc_required"
    )
    assert (
        _error(partner.post("/subscriptions", {**body, "plan": "pln_ilimitado"}), 409)["code"]
        == "plan_not_available"
    )
    assert (
        _error(partner.post("/subscriptions", {**body, "area_code": "11"}), 409)["code"]
        == "area_code_not_available"
    )
    assert (
        _error(partner.post("/subscriptions", {**body, "user": "usr_nope"}), 404)["message"]
        == "No User found"
    )


def test_ten_lines_per_curp(partner: Partner, app: Flask) -> None:
    partner.credit("5000.00")
    user = partner.verified_user()
    for _ in range(10):
        partner.line(user)
    refused = _error(
        partner.post(
            "/subscriptions", {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "area_code": "55"}
        ),
        409,
    )
    assert refused["code"] == "line_limit_exceeded"


def test_actions_move_through_transitional_states(partner: Partner, app: Flask, held_orders: list) -> None:
    partner.credit("1000.00")
    created = partner.ok(
        partner.post(
            "/subscriptions",
            {
                "type": "SIM",
                "user": partner.verified_user()["id"],
                "plan": "pln_basico_5gb",
                "area_code": "55",
            },
        ),
        202,
    )
    url = f"/subscriptions/{created['id']}"
    assert _error(partner.post(f"{url}/suspend"), 409)["code"] == "action_in_progress"
    _release(app, held_orders)

    assert _error(partner.post(f"{url}/resume"), 409)["code"] == "invalid_state_transition"
    suspending = partner.ok(partner.post(f"{url}/suspend"), 202)
    assert suspending["status"] == "suspending" and suspending["order"]["status"] == "processing"
    assert _error(partner.post(f"{url}/resume"), 409)["code"] == "action_in_progress"
    _release(app, held_orders)
    suspended = partner.ok(partner.get(url))
    assert (suspended["status"], suspended["suspension_reason"]) == ("suspended", "partner_request")
    assert _error(partner.post(f"{url}/suspend"), 409)["code"] == "invalid_state_transition"
    assert (
        _error(partner.post(f"{url}/topups", {"topup": "tup_datos_1gb"}), 409)["code"]
        == "invalid_state_transition"
    )

    assert partner.ok(partner.post(f"{url}/resume"), 202)["status"] == "resuming"
    _release(app, held_orders)
    assert partner.ok(partner.get(url))["status"] == "active"

    assert partner.ok(partner.post(f"{url}/cancel"), 202)["status"] == "canceling"
    _release(app, held_orders)
    ended = partner.ok(partner.get(url))
    assert (ended["status"], ended["sim"]["status"]) == ("ended", "retired") and ended["canceled_at"]
    for action in ("suspend", "resume", "cancel"):
        assert _error(partner.post(f"{url}/{action}"), 409)["code"] == "invalid_state_transition"
    orders = partner.ok(partner.get(f"{url}/orders"))["data"]
    assert [o["type"] for o in orders] == ["cancel", "resume", "suspend", "line_purchase"]
    assert all(o["status"] == "completed" and o["amount"] is None for o in orders[:3])


def test_plan_change_sim_change_and_topup(partner: Partner) -> None:
    partner.credit("1000.00")
    line = partner.line()
    url = f"/subscriptions/{line['id']}"
    assert (
        _error(partner.post(f"{url}/plan_change", {"plan": "pln_basico_5gb"}), 409)["code"]
        == "plan_unchanged"
    )
    changed = partner.ok(partner.post(f"{url}/plan_change", {"plan": "pln_plus_20gb"}), 202)
    assert changed["order"]["amount"] == "299.00"
    assert partner.ok(partner.get(url))["plan"] == "pln_plus_20gb"
    scheduled = partner.ok(
        partner.post(f"{url}/plan_change", {"plan": "pln_voz_1000", "when": "renewal"}), 202
    )
    assert scheduled["order"]["status"] == "scheduled" and scheduled["scheduled_plan"] == "pln_voz_1000"

    old_iccid = line["sim"]["iccid"]
    partner.ok(partner.post(f"{url}/sim_change", {"type": "ESIM", "reason": "lost"}), 202)
    moved = partner.ok(partner.get(url))
    assert (
        moved["type"] == "ESIM" and moved["sim"]["iccid"] != old_iccid and luhn_valid(moved["sim"]["iccid"])
    )
    assert (
        moved["esim"]["activation_code"].startswith("LPA:1$")
        and moved["phone_number"] == line["phone_number"]
    )
    assert _error(partner.post(f"{url}/sim_change", {"type": "SIM"}), 400)["param"] == "reason"

    partner.ok(partner.post(f"{url}/topups", {"topup": "tup_datos_1gb"}), 202)
    assert partner.balance()["ledger"] == f"{1000 - 199 - 299 - 50}.00"
    assert _error(partner.post(f"{url}/topups", {"topup": "tup_nope"}), 404)["message"] == "No Top-up found"


def test_sim_change_to_a_product_not_enabled_is_403(
    make_org: Callable[..., Org], make_partner: Callable[..., Partner]
) -> None:
    sim_only = make_partner(make_org("SIM only", products="SIM"))
    sim_only.credit("500.00")
    line = sim_only.line()
    refused = _error(
        sim_only.post(f"/subscriptions/{line['id']}/sim_change", {"type": "ESIM", "reason": "lost"}), 403
    )
    assert refused["code"] == "product_not_enabled"


def test_carrier_declines_release_the_hold(partner: Partner) -> None:
    partner.credit("300.00")
    failed = partner.line(metadata={"simulate": "activation_fails"})
    assert failed["status"] == "ended" and failed["phone_number"] is None
    order = partner.ok(partner.get(f"/subscriptions/{failed['id']}/orders"))["data"][0]
    assert (order["status"], order["failure"]["code"]) == ("failed", "carrier_declined")
    assert partner.balance()["available"] == "300.00" and partner.balance()["ledger"] == "300.00"

    flaky = partner.line(metadata={"simulate": "actions_fail"})
    partner.ok(partner.post(f"/subscriptions/{flaky['id']}/suspend"), 202)
    assert partner.ok(partner.get(f"/subscriptions/{flaky['id']}"))["status"] == "active"


def test_idempotent_retries_charge_once(partner: Partner) -> None:
    partner.credit("1000.00")
    user = partner.verified_user()
    body = {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "area_code": "55"}
    key = {"Idempotency-Key": "order-123"}
    first = partner.post("/subscriptions", body, headers=key)
    retry = partner.post("/subscriptions", body, headers=key)
    assert first.status_code == retry.status_code == 202
    assert retry.headers["Idempotent-Replayed"] == "true" and retry.get_json()["id"] == first.get_json()["id"]
    assert len(partner.ok(partner.get("/subscriptions"))["data"]) == 1
    assert partner.balance()["ledger"] == "801.00"
    other_body = partner.post("/subscriptions", {**body, "plan": "pln_plus_20gb"}, headers=key)
    assert other_body.status_code == 409

    url = f"/subscriptions/{first.get_json()['id']}/topups"
    for _ in range(2):
        assert (
            partner.post(url, {"topup": "tup_datos_1gb"}, headers={"Idempotency-Key": "top-1"}).status_code
            == 202
        )
    assert partner.balance()["ledger"] == "751.00"


def test_usage_reports_days_and_remaining(partner: Partner) -> None:
    partner.credit("500.00")
    line = partner.line(plan="pln_voz_1000")
    usage = partner.ok(partner.get(f"/subscriptions/{line['id']}/usage"))
    assert usage["object"] == "usage" and usage["subscription"] == line["id"]
    assert len(usage["days"]) == 1 and usage["as_of"].endswith(":00:00.000Z")
    used = usage["totals"]["data_bytes"]
    assert usage["allowance_remaining"]["data_bytes"] == max(0, 1073741824 - used)
    partner.ok(partner.post(f"/subscriptions/{line['id']}/topups", {"topup": "tup_datos_1gb"}), 202)
    again = partner.ok(partner.get(f"/subscriptions/{line['id']}/usage"))
    assert again["allowance_remaining"]["data_bytes"] == max(0, 2 * 1073741824 - used)
    unlimited = partner.ok(partner.get(f"/subscriptions/{partner.line()['id']}/usage"))
    assert unlimited["allowance_remaining"]["voice_seconds"] is None


def test_renewal_applies_scheduled_plan_or_suspends(partner: Partner, app: Flask) -> None:
    partner.credit("500.00")
    line = partner.line()
    partner.ok(
        partner.post(f"/subscriptions/{line['id']}/plan_change", {"plan": "pln_voz_1000", "when": "renewal"}),
        202,
    )
    with in_environment(app, "live"):
        assert subscriptions.renew_due(utcnow() + timedelta(days=31)) == 1
    renewed = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert (renewed["plan"], renewed["scheduled_plan"], renewed["status"]) == ("pln_voz_1000", None, "active")
    assert partner.balance()["ledger"] == "201.50"
    with in_environment(app, "live"):
        row = db.session.scalars(db.select(Subscription)).one()
        row.period_end = utcnow() - timedelta(minutes=1)
        row.plan_id = "pln_ilimitado"
    with in_environment(app, "live"):
        subscriptions.renew_due()
    stopped = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert (stopped["status"], stopped["suspension_reason"]) == ("suspended", "balance_insufficient")


def test_other_organization_and_environment(
    partner: Partner, org: Org, other_org: Org, make_partner: Callable[..., Partner]
) -> None:
    partner.credit("500.00")
    line = partner.line()
    other = make_partner(other_org)
    for response in (
        other.get(f"/subscriptions/{line['id']}"),
        other.post(f"/subscriptions/{line['id']}/suspend"),
        other.get(f"/subscriptions/{line['id']}/usage"),
        make_partner(org, "sandbox").get(f"/subscriptions/{line['id']}"),
    ):
        assert _error(response, 404)["message"] == "No Subscription found"
