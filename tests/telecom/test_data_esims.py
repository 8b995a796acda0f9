"""Travel eSIMs: gating before validation, purchase as a hold then a debit (once under a retried key), 402,
the supplier simulator's life of an eSIM on a controlled clock (activation, consumption, low data,
depletion, top-up, expiry) with its events, top-up rules, the QR code, tenancy and environments."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from blueprints.telecom.mexico import luhn_valid
from blueprints.telecom.services import data_esims
from blueprints.telecom.travel import FIRST_USE_DELAY, INSTALL_DELAY, MIB
from core import events
from core.db import isoformat
from core.environments import in_environment
from tests.conftest import Org
from tests.telecom.conftest import Partner

GIB = 1024 * MIB
START = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)


def _error(response: TestResponse, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def at(self, delta: timedelta) -> None:
        self.now = START + delta


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    controlled = Clock()
    monkeypatch.setattr(data_esims, "clock", controlled)
    return controlled


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Events as delivered after their commit (a rolled-back one never shows up)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    handler = lambda event: seen.append((event.name, event.data))  # noqa: E731
    monkeypatch.setitem(events._subscribers, "*", [*events._subscribers.get("*", []), handler])
    return seen


@pytest.fixture
def held_provisioning(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Keep purchases from reaching the supplier until the test releases them."""
    waiting: list[tuple[str, str]] = []
    monkeypatch.setattr(data_esims.provision_data_esim, "enqueue", lambda *args: waiting.append(args))
    yield waiting


def _release(app: Flask, waiting: list[tuple[str, str]], environment: str = "live") -> None:
    with in_environment(app, environment):
        for organization_id, esim_id in waiting:
            data_esims.provision_data_esim(organization_id, esim_id)
    waiting.clear()


def _buy(partner: Partner, offer: str = "off_us_5gb_15d", **fields: Any) -> dict[str, Any]:
    created = partner.ok(partner.post("/data_esims", {"offer": offer, **fields}), 202)
    assert created["status"] == "provisioning"
    return partner.ok(partner.get(f"/data_esims/{created['id']}"))


def _names(seen: list[tuple[str, dict[str, Any]]], esim_id: str) -> list[str]:
    return [name for name, data in seen if data.get("id") == esim_id and name.startswith("data_esim.")]


def test_travel_esim_product_decides_before_validation(
    partner: Partner, make_org: Callable[..., Org], make_partner: Callable[..., Partner]
) -> None:
    lines_only = make_partner(make_org("Lines only", products="SIM,ESIM"))
    for response in (
        lines_only.post("/data_esims", {}),
        lines_only.post("/data_esims", {"offer": "off_us_5gb_15d"}),
        lines_only.post("/data_esims/des_nope/topups", {}),
    ):
        refused = _error(response, 403)
        assert (refused["type"], refused["code"]) == ("permission_error", "product_not_enabled")
    assert lines_only.ok(lines_only.get("/data_esims"))["data"] == []
    assert _error(partner.post("/data_esims", {}), 400)["param"] == "offer"
    assert _error(partner.post("/data_esims", {"offer": "off_nope"}), 404)["message"] == "No eSIM offer found"
    assert _error(partner.get("/data_esims", state="active"), 400)["param"] == "state"
    assert _error(partner.get("/data_esims", status="sleeping"), 400)["param"] == "status"


def test_purchase_holds_then_debits_once_under_a_retried_key(
    partner: Partner, app: Flask, clock: Clock, held_provisioning: list, commits: Callable
) -> None:
    partner.credit("300.00")
    body, key = {"offer": "off_us_5gb_15d", "metadata": {"trip": "NYC"}}, {"Idempotency-Key": "trip-1"}
    with commits() as counted:
        first = partner.post("/data_esims", body, headers=key)
    assert counted.count == 2  # the key's claim (checkpoint), then the purchase: one unit of work
    created = partner.ok(first, 202)
    assert (created["object"], created["status"], created["offer"], created["user"]) == (
        "data_esim",
        "provisioning",
        "off_us_5gb_15d",
        None,
    )
    assert created["price"] == {"amount": "249.00", "currency": "MXN"} and created["livemode"] is True
    assert created["iccid"] is None and created["activation_code"] is None
    assert created["id"].startswith("des_") and created["metadata"] == {"trip": "NYC"}
    retry = partner.post("/data_esims", body, headers=key)
    assert retry.status_code == 202 and retry.headers["Idempotent-Replayed"] == "true"
    assert retry.get_json()["id"] == created["id"]
    assert _error(partner.post("/data_esims", {**body, "offer": "off_eu_10gb_30d"}, headers=key), 409)
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("51.00", "249.00", "300.00")

    _release(app, held_provisioning)
    with in_environment(app, "live"):  # a job run again (a retry after a crash) settles nothing twice
        data_esims.provision_data_esim(partner.org.id, created["id"])
    issued = partner.ok(partner.get(f"/data_esims/{created['id']}"))
    assert issued["status"] == "not_active" and issued["data_remaining_bytes"] == 5 * GIB
    assert issued["data_total_bytes"] == 5 * GIB and issued["activated_at"] is None
    iccid = issued["iccid"]
    assert len(iccid) == 19 and iccid.startswith("89") and luhn_valid(iccid)
    assert issued["activation_code"] == f"LPA:1${issued['smdp_address']}${issued['matching_id']}"
    assert issued["as_of"] == isoformat(START)
    balance = partner.balance()
    assert (balance["available"], balance["held"], balance["ledger"]) == ("51.00", "0.00", "51.00")
    kinds = partner.ok(partner.get("/balance/transactions", source_id=created["id"]))["data"]
    assert sorted(t["type"] for t in kinds) == ["debit", "hold", "hold_release"]
    assert len(partner.ok(partner.get("/data_esims"))["data"]) == 1


def test_balance_insufficient_stores_nothing(partner: Partner, published: list) -> None:
    partner.credit("100.00")
    refused = _error(partner.post("/data_esims", {"offer": "off_us_5gb_15d"}), 402)
    assert (refused["code"], refused["type"]) == ("balance_insufficient", "invalid_request_error")
    assert partner.ok(partner.get("/data_esims"))["data"] == []
    assert [t["type"] for t in partner.ok(partner.get("/balance/transactions"))["data"]] == ["credit"]
    assert not [name for name, _ in published if name.startswith("data_esim")]


def test_supplier_decline_fails_and_releases(partner: Partner, clock: Clock, published: list) -> None:
    partner.credit("300.00")
    failed = _buy(partner, metadata={"simulate": "order_declined"})
    assert failed["status"] == "failed" and failed["iccid"] is None
    assert failed["failure"]["code"] == "supplier_declined"
    balance = partner.balance()
    assert (balance["available"], balance["ledger"]) == ("300.00", "300.00")
    assert _names(published, failed["id"]) == ["data_esim.created", "data_esim.failed"]
    unavailable = _error(partner.get(f"/data_esims/{failed['id']}/qr.png"), 409)
    assert unavailable["code"] == "activation_code_unavailable"
    refused = _error(partner.post(f"/data_esims/{failed['id']}/topups", {"offer": "off_us_5gb_15d"}), 409)
    assert refused["code"] == "invalid_state_transition" and "failed" in refused["message"]


def test_life_of_an_esim_on_the_simulated_clock(
    partner: Partner, app: Flask, clock: Clock, published: list
) -> None:
    """5 GB for 15 days at 2 GiB a day: active after landing, low at 1 GiB left, depleted on day 2.5,
    topped up, then expired 15 days after the top-up."""
    partner.credit("1000.00")
    esim = _buy(partner, metadata={"simulate": "heavy_usage"})
    url = f"/data_esims/{esim['id']}"
    activation = INSTALL_DELAY + FIRST_USE_DELAY  # first_usage: installed after an hour, used on landing

    clock.at(activation - timedelta(minutes=1))
    assert partner.ok(partner.get(url))["status"] == "not_active"
    clock.at(activation)
    active = partner.ok(partner.get(url))
    assert active["status"] == "active" and active["activated_at"] == isoformat(START + activation)
    assert active["expires_at"] == isoformat(START + activation + timedelta(days=15))

    clock.at(activation + timedelta(days=1))
    day_one = partner.ok(partner.get(url))
    assert (day_one["data_remaining_bytes"], day_one["as_of"]) == (3 * GIB, isoformat(clock.now))
    assert partner.ok(partner.get("/data_esims", status="active"))["data"][0]["id"] == esim["id"]

    # the sweep, not a read, notices the low mark (1 GiB left = 20 %) and then the depletion
    for days, news in ((1.9, "data_esim.activated"), (2, "data_esim.low_data"), (2.5, "data_esim.depleted")):
        clock.at(activation + timedelta(days=days))
        with in_environment(app, "live"):
            assert data_esims.refresh_due() == 1
        assert _names(published, esim["id"])[-1] == news
    stored = partner.ok(partner.get("/data_esims", status="depleted"))["data"][0]
    assert (stored["data_remaining_bytes"], stored["as_of"]) == (0, isoformat(clock.now))
    assert stored["depleted_at"] == isoformat(clock.now)
    assert partner.ok(partner.get(url))["status"] == "depleted"

    clock.at(activation + timedelta(days=3))
    topup = partner.ok(partner.post(f"{url}/topups", {"offer": "off_us_5gb_15d"}), 202)
    assert (topup["object"], topup["status"], topup["amount"]) == ("data_esim_topup", "processing", "249.00")
    again = partner.ok(partner.get(url))
    assert (again["status"], again["data_total_bytes"], again["data_remaining_bytes"]) == (
        "active",
        10 * GIB,
        5 * GIB,
    )
    assert again["expires_at"] == isoformat(clock.now + timedelta(days=15)) and again["depleted_at"] is None
    assert [t["status"] for t in partner.ok(partner.get(f"{url}/topups"))["data"]] == ["completed"]
    assert partner.balance()["ledger"] == f"{1000 - 249 - 249}.00"

    clock.at(activation + timedelta(days=3, hours=12))
    usage = partner.ok(partner.get(f"{url}/usage"))
    assert usage["data_used_bytes"] == 10 * GIB - usage["data_remaining_bytes"] == 6 * GIB
    assert sum(d["data_bytes"] for d in usage["days"]) == 6 * GIB and len(usage["days"]) == 5

    clock.at(activation + timedelta(days=18))
    expired = partner.ok(partner.get(url))
    assert expired["status"] == "expired"
    refused = _error(partner.post(f"{url}/topups", {"offer": "off_us_5gb_15d"}), 409)
    assert refused["code"] == "invalid_state_transition" and "expired" in refused["message"]
    assert _names(published, esim["id"]) == [
        "data_esim.created",
        "data_esim.ready",
        "data_esim.activated",
        "data_esim.low_data",
        "data_esim.depleted",
        "data_esim.topped_up",
        "data_esim.expired",  # nobody looked between the top-up and the expiry: only the expiry is news
    ]


def test_unlimited_on_install_and_light_usage_expire(partner: Partner, clock: Clock, published: list) -> None:
    partner.credit("2000.00")
    unlimited = _buy(partner, "off_global_unlimited_7d")
    light = _buy(partner, "off_eu_10gb_30d", metadata={"simulate": "light_usage"})
    clock.at(INSTALL_DELAY)
    active = partner.ok(partner.get(f"/data_esims/{unlimited['id']}"))
    assert (active["status"], active["data_total_bytes"], active["data_remaining_bytes"]) == (
        "active",
        None,
        None,
    )
    assert partner.ok(partner.get(f"/data_esims/{light['id']}"))["status"] == "not_active"
    clock.at(INSTALL_DELAY + timedelta(days=7))
    assert partner.ok(partner.get(f"/data_esims/{unlimited['id']}"))["status"] == "expired"
    clock.at(INSTALL_DELAY + FIRST_USE_DELAY + timedelta(days=30))
    done = partner.ok(partner.get(f"/data_esims/{light['id']}"))
    assert done["status"] == "expired" and done["data_remaining_bytes"] == 10 * GIB - 30 * 10 * MIB
    assert "data_esim.low_data" not in _names(published, light["id"])
    assert _names(published, unlimited["id"])[-2:] == ["data_esim.activated", "data_esim.expired"]


def test_topup_rules_and_idempotent_retry(
    partner: Partner, app: Flask, clock: Clock, published: list
) -> None:
    partner.credit("2000.00")
    esim = _buy(partner)
    url = f"/data_esims/{esim['id']}/topups"
    for offer in ("off_eu_10gb_30d", "off_global_unlimited_7d"):  # not the US / not the same kind of data
        refused = _error(partner.post(url, {"offer": offer}), 409)
        assert (refused["code"], refused["param"]) == ("topup_not_available", "offer")
    assert _error(partner.post(url, {"offer": "off_nope"}), 404)["message"] == "No eSIM offer found"
    assert _error(partner.post(url, {}), 400)["param"] == "offer"
    key = {"Idempotency-Key": "topup-1"}
    first = partner.ok(partner.post(url, {"offer": "off_us_5gb_15d"}, headers=key), 202)
    assert partner.post(url, {"offer": "off_us_5gb_15d"}, headers=key).get_json()["id"] == first["id"]
    with in_environment(app, "live"):  # a job run again (a retry after a crash) applies nothing twice
        data_esims.apply_data_esim_topup(partner.org.id, first["id"])
    assert partner.balance()["ledger"] == f"{2000 - 249 - 249}.00"
    assert partner.ok(partner.get(f"/data_esims/{esim['id']}"))["data_total_bytes"] == 10 * GIB

    stubborn = _buy(partner, metadata={"simulate": "topup_declined"})
    declined = partner.ok(
        partner.post(f"/data_esims/{stubborn['id']}/topups", {"offer": "off_us_5gb_15d"}), 202
    )
    topups = partner.ok(partner.get(f"/data_esims/{stubborn['id']}/topups"))["data"]
    assert [(t["id"], t["status"], t["failure"]["code"]) for t in topups] == [
        (declined["id"], "failed", "supplier_declined")
    ]
    assert partner.ok(partner.get(f"/data_esims/{stubborn['id']}"))["data_total_bytes"] == 5 * GIB
    assert (
        "data_esim.topup_failed",
        {"id": stubborn["id"], "object": "data_esim", "topup": declined["id"]},
    ) in published
    balance = partner.balance()
    assert (balance["ledger"], balance["held"]) == (f"{2000 - 249 * 3}.00", "0.00")


def _png_pixels(png: bytes) -> tuple[int, int, list[list[int]]]:
    """A small reader for the PNGs segno writes (8-bit-per-byte filtering, 1-bit greyscale)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, index = {}, 8
    while index < len(png):
        length, kind = struct.unpack(">I4s", png[index : index + 8])
        data = png[index + 8 : index + 8 + length]
        assert (
            zlib.crc32(kind + data) == struct.unpack(">I", png[index + 8 + length : index + 12 + length])[0]
        )
        chunks[kind] = chunks.get(kind, b"") + data
        index += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour, interlace) == (1, 0, 0)
    raw, stride, rows, previous = (
        zlib.decompress(chunks[b"IDAT"]),
        (width + 7) // 8,
        [],
        bytes((width + 7) // 8),
    )
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left, up, corner = line[x - 1] if x else 0, previous[x], previous[x - 1] if x else 0
            guess = {0: 0, 1: left, 2: up, 3: (left + up) // 2}.get(kind)
            if guess is None:  # Paeth
                p = left + up - corner
                guess = min((abs(p - left), 0, left), (abs(p - up), 1, up), (abs(p - corner), 2, corner))[2]
            line[x] = (line[x] + guess) & 0xFF
        rows.append([(line[x // 8] >> (7 - x % 8)) & 1 for x in range(width)])
        previous = bytes(line)
    return width, height, rows


def test_qr_code_draws_the_activation_code(partner: Partner, clock: Clock, client: Any) -> None:
    partner.credit("300.00")
    esim = _buy(partner)
    response = partner.get(f"/data_esims/{esim['id']}/qr.png")
    assert response.status_code == 200 and response.mimetype == "image/png"
    assert response.headers["Cache-Control"] == "no-store"
    matrix = [list(row) for row in data_esims.qr_matrix(esim["activation_code"]).matrix]
    width, height, pixels = _png_pixels(response.data)
    border, scale, modules = data_esims.QR_BORDER, data_esims.QR_SCALE, len(matrix)
    assert width == height == (modules + 2 * border) * scale
    drawn = [
        [
            1 - pixels[(border + y) * scale + scale // 2][(border + x) * scale + scale // 2]
            for x in range(modules)
        ]
        for y in range(modules)
    ]
    assert drawn == matrix  # black pixels (0) exactly where segno's symbol of the code has dark modules
    assert all(pixel == 1 for pixel in pixels[0]) and all(row[0] == 1 for row in pixels)  # quiet zone

    operation = client.get("/openapi.json").get_json()["paths"][
        "/v1/partner/data_esims/{data_esim_id}/qr.png"
    ]
    content = operation["get"]["responses"]["200"]["content"]
    assert content == {"image/png": {"schema": {"type": "string", "format": "binary"}}}


def test_users_filters_and_tenancy(
    partner: Partner,
    org: Org,
    other_org: Org,
    make_partner: Callable[..., Partner],
    clock: Clock,
) -> None:
    partner.credit("1000.00")
    user = partner.user()
    mine = _buy(partner, user=user["id"])
    _buy(partner)
    assert mine["user"] == user["id"]
    assert [e["id"] for e in partner.ok(partner.get("/data_esims", user=user["id"]))["data"]] == [mine["id"]]
    assert _error(partner.post("/data_esims", {"offer": "off_us_5gb_15d", "user": "usr_nope"}), 404)
    partner.patch(f"/users/{user['id']}", {"status": "blocked"})
    blocked = _error(partner.post("/data_esims", {"offer": "off_us_5gb_15d", "user": user["id"]}), 409)
    assert blocked["code"] == "user_not_active"

    other = make_partner(other_org)
    other.credit("500.00")
    sandbox = make_partner(org, "sandbox")
    url = f"/data_esims/{mine['id']}"
    for response in (
        other.get(url),
        other.get(f"{url}/qr.png"),
        other.get(f"{url}/usage"),
        other.get(f"{url}/topups"),
        other.post(f"{url}/topups", {"offer": "off_us_5gb_15d"}),
        sandbox.get(url),
    ):
        assert _error(response, 404)["message"] == "No Data eSIM found"
    assert other.ok(other.get("/data_esims"))["data"] == []
    assert other.balance()["ledger"] == "500.00"


def test_sandbox_sells_with_its_own_key_and_balance(
    partner: Partner, org: Org, make_partner: Callable[..., Partner], clock: Clock
) -> None:
    sandbox = make_partner(org, "sandbox")
    sandbox.credit("300.00")
    esim = _buy(sandbox)
    assert esim["livemode"] is False and esim["status"] == "not_active"
    assert partner.ok(partner.get("/data_esims"))["data"] == []
    assert partner.balance()["ledger"] == "0.00"
    wrong_key = partner.client.get("/v1/partner/data_esims", headers=org.headers("sandbox"))
    assert _error(wrong_key, 401)["code"] == "api_key_invalid"
    assert partner.client.get("/v1/partner/data_esims").status_code == 401
