"""Portings (number portability into a new line): validation, the write-only NIP, the ABD simulator's
magic declines, every allowed and refused move, NIP expiry, the line that activates on the ported number
and its money (hold at order, one debit at completion, release on cancel/expiry), tenancy and sandbox."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.telecom.carrier import next_port_window
from blueprints.telecom.services import portings
from core import events
from core.db import utcnow
from core.environments import in_environment
from core.timeutil import parse_iso_datetime
from tests.conftest import Org
from tests.telecom.conftest import CURP, RFC, Partner

NIP = "9753"
BAD_CURP = CURP[:-1] + str((int(CURP[-1]) + 1) % 10)  # a wrong check digit
BAD_RFC = RFC[:-1] + ("0" if RFC[-1] != "0" else "1")
NUMBER = "+525587654329"
MEXICO_CITY = ZoneInfo("America/Mexico_City")


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _body(owner: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    return {
        "user": owner["id"],
        "phone_number": NUMBER,
        "nip": NIP,
        "nip_issued_at": _iso(utcnow() - timedelta(hours=1)),
        "holder": {"full_name": "Gloria Hernández García", "person_type": "person", "curp": CURP},
        **fields,
    }


def _porting(partner: Partner, user: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return partner.ok(partner.post("/portings", _body(user or partner.verified_user(), **fields)), 201)


def _ported_line(partner: Partner, porting: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = {"type": "SIM", "user": porting["user"], "plan": "pln_basico_5gb", "porting": porting["id"]}
    return partner.ok(partner.post("/subscriptions", {**body, **fields}), 202)


def _advance(app: Flask, now: datetime, environment: str = "live") -> int:
    with in_environment(app, environment):
        return portings.process_due(now)


def _when(porting: dict[str, Any], field: str) -> datetime:
    return parse_iso_datetime(porting[field])


def _get(partner: Partner, porting: dict[str, Any]) -> dict[str, Any]:
    return partner.ok(partner.get(f"/portings/{porting['id']}"))


def _no_nip(body: dict[str, Any]) -> None:
    assert "nip" not in body
    visible = {k: v for k, v in body.items() if k not in ("id", "user", "subscription")}
    assert NIP not in json.dumps(visible)


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    subscribers = defaultdict(list, {name: list(handlers) for name, handlers in events._subscribers.items()})
    subscribers["*"].append(lambda event: seen.append((event.name, event.data)))
    monkeypatch.setattr(events, "_subscribers", subscribers)
    return seen


def _porting_events(published: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [name for name, _ in published if name.startswith("porting.")]


# Creation and the write-only NIP ----------------------------------------------------------------------


def test_create_keeps_the_nip_write_only(
    partner: Partner, commits: Callable[..., Any], published: list[tuple[str, dict[str, Any]]]
) -> None:
    user = partner.verified_user()
    issued = utcnow() - timedelta(hours=2)
    with commits() as counted:
        response = partner.post("/portings", _body(user, nip_issued_at=_iso(issued), metadata={"crm": "42"}))
    assert counted.count == 1
    created = partner.ok(response, 201)
    assert created["id"].startswith("prt_") and created["object"] == "porting"
    assert (created["status"], created["phone_number"], created["subscription"]) == ("pending", NUMBER, None)
    assert created["nip_provided"] is True and created["livemode"] is True
    assert _when(created, "nip_expires_at") - _when(created, "nip_issued_at") == timedelta(days=5)
    assert created["holder"] == {
        "full_name": "Gloria Hernández García",
        "person_type": "person",
        "curp": CURP,
        "rfc": None,
    }
    assert created["requested_at"] is None and created["declined_attempts"] == 0
    assert created["metadata"] == {"crm": "42"}
    for body in (created, _get(partner, created), partner.ok(partner.get("/portings"))["data"][0]):
        _no_nip(body)
    assert [event for event in published if event[0].startswith("porting.")] == [
        (
            "porting.created",
            {"id": created["id"], "object": "porting", "subscription": None, "status": "pending"},
        )
    ]


def test_create_accepts_national_format_and_companies(partner: Partner) -> None:
    company = partner.verified_user(person_type="company", full_name="Abarrotes SA")
    created = _porting(
        partner,
        company,
        phone_number="33 1234 5678",
        holder={"full_name": "Abarrotes SA de CV", "person_type": "company", "rfc": RFC.lower()},
    )
    assert created["phone_number"] == "+523312345678"
    assert (created["holder"]["rfc"], created["holder"]["curp"]) == (RFC, None)


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"phone_number": "+12025550123"}, "phone_number", "phone_number_invalid"),
        ({"phone_number": "+52551234"}, "phone_number", "phone_number_invalid"),
        ({"nip": "12a4"}, "nip", "parameter_invalid"),
        ({"nip": "12345"}, "nip", "parameter_invalid"),
        ({"nip_issued_at": "tomorrow"}, "nip_issued_at", "parameter_invalid"),
        ({"holder": {"full_name": "Gloria", "person_type": "person"}}, "holder.curp", "parameter_invalid"),
        ({"holder": {"full_name": "Gloria", "curp": BAD_CURP}}, "holder.curp", "curp_invalid"),
        ({"holder": {"full_name": "SA", "person_type": "company"}}, "holder.rfc", "parameter_invalid"),
        (
            {"holder": {"full_name": "SA", "person_type": "company", "rfc": BAD_RFC}},
            "holder.rfc",
            "rfc_invalid",
        ),
        ({"holder": {"person_type": "person", "curp": CURP}}, "holder.full_name", "parameter_invalid"),
        ({"user": None}, "user", "parameter_invalid"),
    ],
)
def test_create_refuses_bad_input_naming_the_field(
    partner: Partner, fields: dict[str, Any], param: str, code: str
) -> None:
    refused = _error(partner.post("/portings", _body(partner.verified_user(), **fields)), 400)
    assert (refused["param"], refused["code"]) == (param, code)
    assert partner.ok(partner.get("/portings"))["data"] == []


def test_nip_must_be_current(partner: Partner) -> None:
    user = partner.verified_user()
    future = _error(
        partner.post("/portings", _body(user, nip_issued_at=_iso(utcnow() + timedelta(hours=1)))), 400
    )
    assert (future["param"], future["code"]) == ("nip_issued_at", "parameter_invalid")
    assert "future" in future["message"]
    lapsed = _error(
        partner.post("/portings", _body(user, nip_issued_at=_iso(utcnow() - timedelta(days=5)))), 400
    )
    assert (lapsed["param"], lapsed["code"]) == ("nip_issued_at", "nip_expired")
    almost = _porting(partner, user, nip_issued_at=_iso(utcnow() - timedelta(days=4, hours=23)))
    assert almost["status"] == "pending"


def test_create_needs_an_active_verified_user_and_a_free_number(
    partner: Partner, make_org: Callable[..., Org], make_partner: Callable[..., Partner]
) -> None:
    unverified = partner.user()
    assert _error(partner.post("/portings", _body(unverified)), 409)["code"] == "kyc_required"
    assert _error(partner.post("/portings", _body({"id": "usr_nope"})), 404)["message"] == "No User found"
    user = partner.verified_user()
    _porting(partner, user)
    again = _error(partner.post("/portings", _body(user, phone_number="55 8765 4329")), 409)
    assert (again["code"], again["param"]) == ("porting_in_progress", "phone_number")
    travel_only = make_partner(make_org("Travel only", products="TRAVEL_ESIM"))
    gated = _error(travel_only.post("/portings", _body(travel_only.verified_user())), 403)
    assert gated["code"] == "product_not_enabled"


def test_create_is_idempotent(partner: Partner) -> None:
    body = _body(partner.verified_user())
    key = {"Idempotency-Key": "port-1"}
    first, retry = partner.post("/portings", body, headers=key), partner.post("/portings", body, headers=key)
    assert first.status_code == retry.status_code == 201
    assert retry.headers["Idempotent-Replayed"] == "true" and retry.get_json()["id"] == first.get_json()["id"]
    assert len(partner.ok(partner.get("/portings"))["data"]) == 1


# The port: requested, then completed at the port window ------------------------------------------------


def test_completed_port_activates_its_line_on_the_ported_number_and_charges_once(
    partner: Partner, app: Flask, published: list[tuple[str, dict[str, Any]]]
) -> None:
    partner.credit("500.00")
    porting = _porting(partner)
    line = _ported_line(partner, porting)
    assert (line["status"], line["phone_number"], line["area_code"]) == ("pending", None, "55")
    assert (line["order"]["type"], line["order"]["status"], line["order"]["amount"]) == (
        "line_purchase",
        "processing",
        "199.00",
    )
    assert line["order"]["details"] == {"plan": "pln_basico_5gb", "porting": porting["id"]}
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("301.00", "199.00", "500.00")

    requested = _get(partner, porting)
    assert (requested["status"], requested["subscription"]) == ("requested", line["id"])
    assert requested["donor_provider"] and requested["requested_at"]
    window = _when(requested, "scheduled_for")
    local = window.astimezone(MEXICO_CITY)
    assert (local.hour, local.minute) == (10, 0) and local.weekday() < 5
    assert window > _when(requested, "requested_at")
    assert _error(partner.post(f"/subscriptions/{line['id']}/suspend"), 409)["code"] == "action_in_progress"

    assert _advance(app, window - timedelta(minutes=1)) == 0
    assert _get(partner, porting)["status"] == "requested"
    assert partner.ok(partner.get(f"/subscriptions/{line['id']}"))["status"] == "pending"

    assert _advance(app, window) == 1
    completed = _get(partner, porting)
    assert (completed["status"], completed["nip_provided"]) == ("completed", False)
    assert completed["completed_at"] is not None
    active = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert (active["status"], active["phone_number"], active["pending_action"]) == ("active", NUMBER, None)
    orders = partner.ok(partner.get(f"/subscriptions/{line['id']}/orders"))["data"]
    assert [(o["type"], o["status"]) for o in orders] == [("line_purchase", "completed")]

    assert _advance(app, window + timedelta(days=2)) == 0  # nothing is settled twice
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("301.00", "0.00", "301.00")
    kinds = [
        t["type"]
        for t in partner.ok(partner.get("/balance/transactions", source_id=line["order"]["id"]))["data"]
    ]
    assert sorted(kinds) == ["debit", "hold", "hold_release"]
    assert _porting_events(published) == ["porting.created", "porting.requested", "porting.completed"]
    assert (
        "subscription.activated",
        {"id": line["id"], "object": "subscription", "order": line["order"]["id"]},
    ) in published
    assert all("nip" not in data for _, data in published)
    # the number is a line of ours now: porting it in again is refused
    refused = _error(partner.post("/portings", _body(partner.verified_user())), 409)
    assert (refused["code"], refused["param"]) == ("number_already_active", "phone_number")


def test_idempotent_ported_line_holds_once(partner: Partner) -> None:
    partner.credit("500.00")
    porting = _porting(partner)
    body = {"type": "ESIM", "user": porting["user"], "plan": "pln_basico_5gb", "porting": porting["id"]}
    key = {"Idempotency-Key": "ported-line-1"}
    first = partner.post("/subscriptions", body, headers=key)
    retry = partner.post("/subscriptions", body, headers=key)
    assert first.status_code == retry.status_code == 202 and retry.get_json()["id"] == first.get_json()["id"]
    assert partner.balance()["held"] == "199.00"


def test_port_windows_are_business_days_at_ten_in_mexico_city() -> None:
    def at(day: int, hour: int, minute: int = 0) -> datetime:  # November 2026: the 23rd is a Monday
        return datetime(2026, 11, day, hour, minute, tzinfo=MEXICO_CITY)

    cases = [
        (at(23, 9, 59), at(23, 10)),  # Monday before the window: that morning
        (at(23, 10), at(24, 10)),  # Monday at the window: the next day
        (at(24, 18), at(25, 10)),  # Tuesday evening: Wednesday, within 24 h
        (at(27, 11), at(30, 10)),  # Friday after the window: Monday
        (at(28, 9), at(30, 10)),  # Saturday: Monday
        (at(29, 23, 59), at(30, 10)),  # Sunday night: Monday
    ]
    for requested, expected in cases:
        assert next_port_window(requested.astimezone(UTC)) == expected.astimezone(UTC), requested


# Declines, the PATCH that retries them, and the simulator's magic values --------------------------------


@pytest.mark.parametrize(
    ("fields", "code", "nip_kept"),
    [
        ({"nip": "0000"}, "nip_invalid", False),
        ({"nip": "1111"}, "nip_expired", False),
        ({"phone_number": "+525512340001"}, "porting_in_progress", True),
        ({"phone_number": "+525512340002"}, "recently_ported", True),
        ({"phone_number": "+525512340003"}, "number_not_active", True),
        (
            {"holder": {"full_name": "Titular Mismatch", "person_type": "person", "curp": CURP}},
            "holder_data_mismatch",
            True,
        ),
    ],
)
def test_magic_declines(
    partner: Partner,
    app: Flask,
    published: list[tuple[str, dict[str, Any]]],
    fields: dict[str, Any],
    code: str,
    nip_kept: bool,
) -> None:
    partner.credit("500.00")
    porting = _porting(partner, **fields)
    line = _ported_line(partner, porting)
    _advance(app, _when(_get(partner, porting), "scheduled_for"))
    declined = _get(partner, porting)
    assert (declined["status"], declined["declined_code"]) == ("declined", code)
    assert (
        declined["declined_message"] and declined["declined_attempts"] == 1 and declined["last_declined_at"]
    )
    assert declined["nip_provided"] is nip_kept
    # the line keeps waiting with its hold: a decline can be corrected
    assert partner.ok(partner.get(f"/subscriptions/{line['id']}"))["status"] == "pending"
    assert partner.balance()["held"] == "199.00"
    assert (
        "porting.declined",
        {"id": porting["id"], "object": "porting", "subscription": line["id"], "declined_code": code},
    ) in published


def test_patch_after_decline_then_completion(partner: Partner, app: Flask) -> None:
    partner.credit("500.00")
    porting = _porting(partner, nip="0000")
    line = _ported_line(partner, porting)
    _advance(app, _when(_get(partner, porting), "scheduled_for"))
    url = f"/portings/{porting['id']}"
    assert _get(partner, porting)["status"] == "declined"

    holder_only = {"holder": {"full_name": "Gloria Hernández", "curp": CURP}}
    assert _error(partner.patch(url, holder_only), 400)["param"] == "nip"  # the refused NIP was erased
    assert _error(partner.patch(url, {}), 400)["param"] == "nip"
    assert _error(partner.patch(url, {"nip": "2468"}), 400)["param"] == "nip_issued_at"
    assert _error(partner.patch(url, {"nip": "24", "nip_issued_at": _iso(utcnow())}), 400)["param"] == "nip"
    assert _error(partner.patch(url, {"holder": None}), 400)["param"] == "holder"

    patched = partner.ok(partner.patch(url, {"nip": "2468", "nip_issued_at": _iso(utcnow()), **holder_only}))
    assert (patched["status"], patched["nip_provided"], patched["declined_code"]) == ("pending", True, None)
    assert patched["holder"]["full_name"] == "Gloria Hernández" and patched["declined_attempts"] == 1
    _no_nip(patched)
    again = _get(partner, porting)  # its line exists: requested again as soon as the PATCH committed
    assert again["status"] == "requested"
    _advance(app, _when(again, "scheduled_for"))
    assert _get(partner, porting)["status"] == "completed"
    active = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert (active["status"], active["phone_number"]) == ("active", NUMBER)
    assert partner.balance()["ledger"] == "301.00"


def test_patch_while_pending_keeps_it_pending(partner: Partner) -> None:
    porting = _porting(partner)
    url = f"/portings/{porting['id']}"
    patched = partner.ok(
        partner.patch(url, {"metadata": {"note": "x"}, "nip": "1357", "nip_issued_at": _iso(utcnow())})
    )
    assert (patched["status"], patched["metadata"]) == ("pending", {"note": "x"})
    assert _when(patched, "nip_expires_at") > _when(porting, "nip_expires_at")
    lapsed = _iso(utcnow() - timedelta(days=6))
    assert _error(partner.patch(url, {"nip": "1357", "nip_issued_at": lapsed}), 400)["code"] == "nip_expired"


# Refused moves ---------------------------------------------------------------------------------------


def test_refused_transitions(partner: Partner, app: Flask) -> None:
    partner.credit("1000.00")
    user = partner.verified_user()
    porting = _porting(partner, user)
    url = f"/portings/{porting['id']}"
    line = _ported_line(partner, porting)
    patch = {"nip": "2468", "nip_issued_at": _iso(utcnow())}

    refused = _error(partner.patch(url, patch), 409)  # requested: the ABD has it
    assert refused["code"] == "invalid_state_transition" and "requested" in refused["message"]
    taken = _error(_reuse(partner, porting), 409)
    assert (taken["code"], taken["param"]) == ("porting_not_available", "porting")

    _advance(app, _when(_get(partner, porting), "scheduled_for"))
    assert _get(partner, porting)["status"] == "completed"
    for response in (partner.patch(url, patch), partner.post(f"{url}/cancel")):
        assert _error(response, 409)["code"] == "invalid_state_transition"
    assert partner.ok(partner.get(f"/subscriptions/{line['id']}"))["status"] == "active"

    canceled = _porting(partner, user, phone_number="+525511112222")
    partner.ok(partner.post(f"/portings/{canceled['id']}/cancel"))
    for response in (
        partner.patch(f"/portings/{canceled['id']}", patch),
        partner.post(f"/portings/{canceled['id']}/cancel"),
    ):
        assert _error(response, 409)["code"] == "invalid_state_transition"
    assert _error(_reuse(partner, canceled), 409)["code"] == "porting_not_available"

    stranger = partner.verified_user()
    foreign = _porting(partner, stranger, phone_number="+525533334444")
    mine = {"type": "SIM", "user": user["id"], "plan": "pln_basico_5gb", "porting": foreign["id"]}
    wrong_user = _error(partner.post("/subscriptions", mine), 409)
    assert (wrong_user["code"], wrong_user["param"]) == ("porting_not_available", "porting")


def _reuse(partner: Partner, porting: dict[str, Any]) -> Any:
    body = {"type": "SIM", "user": porting["user"], "plan": "pln_basico_5gb", "porting": porting["id"]}
    return partner.post("/subscriptions", body)


def test_subscription_takes_area_code_or_porting(partner: Partner) -> None:
    partner.credit("500.00")
    porting = _porting(partner)
    base = {"type": "SIM", "user": porting["user"], "plan": "pln_basico_5gb"}
    both = _error(partner.post("/subscriptions", {**base, "area_code": "55", "porting": porting["id"]}), 400)
    assert both["param"] == "area_code" and "porting" in both["message"]
    neither = _error(partner.post("/subscriptions", base), 400)
    assert neither["param"] == "area_code" and "porting" in neither["message"]
    missing = _error(partner.post("/subscriptions", {**base, "porting": "prt_nope"}), 404)
    assert missing["message"] == "No Porting found"
    assert partner.balance()["held"] == "0.00"


# Cancel and expiry: the waiting line ends, its hold is released ---------------------------------------


def test_cancel_releases_the_hold(
    partner: Partner, app: Flask, published: list[tuple[str, dict[str, Any]]]
) -> None:
    partner.credit("500.00")
    porting = _porting(partner)
    line = _ported_line(partner, porting)
    assert partner.balance()["held"] == "199.00"
    key = {"Idempotency-Key": "cancel-1"}
    canceled = partner.ok(partner.post(f"/portings/{porting['id']}/cancel", headers=key))
    assert (canceled["status"], canceled["nip_provided"]) == ("canceled", False) and canceled["canceled_at"]
    replay = partner.post(f"/portings/{porting['id']}/cancel", headers=key)
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"

    ended = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert (ended["status"], ended["sim"]["status"], ended["phone_number"]) == ("ended", "retired", None)
    order = partner.ok(partner.get(f"/subscriptions/{line['id']}/orders"))["data"][0]
    assert (order["status"], order["failure"]["code"]) == ("failed", "porting_canceled")
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("500.00", "0.00", "500.00")

    _advance(app, _when(canceled, "scheduled_for") + timedelta(days=10))  # the window passes: nothing
    assert _get(partner, porting)["status"] == "canceled" and partner.balance()["ledger"] == "500.00"
    assert _porting_events(published) == ["porting.created", "porting.requested", "porting.canceled"]
    # the number is free again for a new porting
    assert _porting(partner, phone_number=NUMBER)["status"] == "pending"


def test_pending_porting_expires_when_its_nip_lapses(
    partner: Partner, app: Flask, published: list[tuple[str, dict[str, Any]]]
) -> None:
    porting = _porting(partner, nip_issued_at=_iso(utcnow() - timedelta(days=4)))
    lapses = _when(porting, "nip_expires_at")
    assert _advance(app, lapses - timedelta(minutes=1)) == 0
    assert _advance(app, lapses) == 1
    expired = _get(partner, porting)
    assert (expired["status"], expired["nip_provided"]) == ("expired", False) and expired["expired_at"]
    assert (
        _error(partner.post(f"/portings/{porting['id']}/cancel"), 409)["code"] == "invalid_state_transition"
    )
    assert _porting_events(published) == ["porting.created", "porting.expired"]


def test_declined_porting_expires_and_releases_its_line(partner: Partner, app: Flask) -> None:
    partner.credit("500.00")
    porting = _porting(partner, nip="0000", nip_issued_at=_iso(utcnow() - timedelta(days=4)))
    line = _ported_line(partner, porting)
    window = _when(_get(partner, porting), "scheduled_for")
    _advance(app, window)
    declined = _get(partner, porting)
    assert declined["status"] == "declined"
    _advance(app, max(window, _when(declined, "nip_expires_at")) + timedelta(minutes=1))
    assert _get(partner, porting)["status"] == "expired"
    ended = partner.ok(partner.get(f"/subscriptions/{line['id']}"))
    assert ended["status"] == "ended"
    order = partner.ok(partner.get(f"/subscriptions/{line['id']}/orders"))["data"][0]
    assert order["failure"]["code"] == "porting_expired"
    balance = partner.balance()
    assert (balance["held"], balance["ledger"]) == ("0.00", "500.00")


# Lists, tenancy, environments -------------------------------------------------------------------------


def test_list_filters_and_pages(partner: Partner) -> None:
    first_user, second_user = partner.verified_user(), partner.verified_user()
    a = _porting(partner, first_user, phone_number="+525510000001")
    b = _porting(partner, first_user, phone_number="+525510000002")
    c = _porting(partner, second_user, phone_number="+523310000003")
    partner.ok(partner.post(f"/portings/{b['id']}/cancel"))

    def ids(**params: Any) -> list[str]:
        return [p["id"] for p in partner.ok(partner.get("/portings", **params))["data"]]

    assert ids() == [c["id"], b["id"], a["id"]]
    assert ids(status="canceled") == [b["id"]]
    assert ids(status="pending", user=first_user["id"]) == [a["id"]]
    assert ids(phone_number="33 1000 0003") == [c["id"]]
    page = partner.ok(partner.get("/portings", limit=2))
    assert page["has_more"] is True and len(page["data"]) == 2
    rest = partner.ok(partner.get("/portings", limit=2, starting_after=page["data"][-1]["id"]))
    assert [p["id"] for p in rest["data"]] == [a["id"]] and rest["has_more"] is False
    for params, param in (
        ({"status": "draft"}, "status"),
        ({"phone_number": "12"}, "phone_number"),
        ({"limit": 0}, "limit"),
        ({"nip": "1234"}, "nip"),
    ):
        assert _error(partner.get("/portings", **params), 400)["param"] == param


def test_other_organization_gets_404(
    partner: Partner, other_org: Org, make_partner: Callable[..., Partner]
) -> None:
    partner.credit("500.00")
    porting = _porting(partner)
    other = make_partner(other_org)
    other.credit("500.00")
    stranger = other.verified_user()
    url = f"/portings/{porting['id']}"
    for response in (
        other.get(url),
        other.patch(url, {"metadata": {}}),
        other.post(f"{url}/cancel"),
        other.post(
            "/subscriptions",
            {"type": "SIM", "user": stranger["id"], "plan": "pln_basico_5gb", "porting": porting["id"]},
        ),
    ):
        assert _error(response, 404)["message"] == "No Porting found"
    assert other.ok(other.get("/portings"))["data"] == []
    assert _get(partner, porting)["status"] == "pending"


def test_sandbox_and_live_are_separate(
    partner: Partner, org: Org, app: Flask, client: FlaskClient, make_partner: Callable[..., Partner]
) -> None:
    live = _porting(partner)
    sandbox = make_partner(org, "sandbox")
    assert _error(sandbox.get(f"/portings/{live['id']}"), 404)["message"] == "No Porting found"
    assert client.get("/v1/partner/portings", headers=org.headers("sandbox")).status_code == 401
    assert client.get("/sandbox/v1/partner/portings", headers=org.headers()).status_code == 401

    sandbox.credit("500.00")
    test_port = _porting(sandbox)  # the same number: each environment is its own world
    assert test_port["livemode"] is False
    line = _ported_line(sandbox, test_port)
    _advance(app, _when(_get(sandbox, test_port), "scheduled_for"), "sandbox")
    assert _get(sandbox, test_port)["status"] == "completed"
    assert sandbox.ok(sandbox.get(f"/subscriptions/{line['id']}"))["phone_number"] == NUMBER
    assert _get(partner, live)["status"] == "pending"
    assert [p["id"] for p in partner.ok(partner.get("/portings"))["data"]] == [live["id"]]
