"""Catalogues: plans, top-ups and travel eSIM offers loaded from files, area codes from the phone-number
library's Mexican geocoder data. Shared by every organization of an environment; read-only in the API."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from blueprints.telecom.mexico import state_code
from blueprints.telecom.models import AreaCode, EsimOffer, Plan, TopupOffer
from blueprints.telecom.services.common import cents_of, conflict
from core.db import db
from core.errors import not_found

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "catalogue.json"

# The geocoder names only a city for a few codes; their states, so every code carries one.
_CITY_STATES = {
    "CULIACAN": "SIN",
    "MERIDA": "YUC",
    "MORELIA": "MIC",
    "TOLUCA": "MEX",
    "TUXTLA GUTIERREZ": "CHP",
    "CUERNAVACA": "MOR",
}


@dataclass(frozen=True)
class LoadResult:
    plans: int
    topups: int
    esim_offers: int
    area_codes: int
    archived: int


class CatalogueError(ValueError):
    pass


def _allowances(item: dict[str, Any]) -> dict[str, int | None]:
    allowances = item.get("allowances") or {}
    return {name: allowances.get(name) for name in ("data_bytes", "voice_seconds", "sms_messages")}


def _price(item: dict[str, Any], where: str) -> int:
    try:
        price = item["price"]
        return cents_of(price["amount"] if isinstance(price, dict) else price)
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogueError(f"{where}: price must be an amount in MXN with two decimals ({exc})") from None


def _upsert(model: type[Any], rows: list[dict[str, Any]]) -> tuple[int, int]:
    """Create or update each row by id; rows of this model missing from the file are archived."""
    seen = set()
    for values in rows:
        seen.add(values["id"])
        row = db.session.get(model, values["id"])  # catalogue rows are global, not tenant-owned
        if row is None:
            db.session.add(model(**values))
        else:
            for name, value in values.items():
                setattr(row, name, value)
    archived = 0
    for row in db.session.scalars(select(model).where(model.id.not_in(seen), model.status != "archived")):
        row.status = "archived"
        archived += 1
    return len(rows), archived


def load_catalogue(path: Path | None = None) -> LoadResult:
    """Load plans, top-ups and eSIM offers from a JSON file, and rebuild the area codes."""
    source = path or SHIPPED
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogueError(f"{source}: {exc}") from None
    plans, topups, offers = [], [], []
    try:
        for index, item in enumerate(document.get("plans", [])):
            plans.append(
                {
                    "id": item["id"],
                    "name": item["name"],
                    "description": item.get("description"),
                    "status": item.get("status", "available"),
                    "price_cents": _price(item, f"plans[{index}]"),
                    "validity_days": int(item.get("validity_days", 30)),
                    "sim_types": list(item.get("sim_types", ["SIM", "ESIM"])),
                    "coverage": list(item.get("coverage", ["MX"])),
                    **_allowances(item),
                }
            )
        for index, item in enumerate(document.get("topups", [])):
            topups.append(
                {
                    "id": item["id"],
                    "name": item["name"],
                    "status": item.get("status", "available"),
                    "price_cents": _price(item, f"topups[{index}]"),
                    "validity_days": int(item.get("validity_days", 30)),
                    "compatible_plans": list(item.get("compatible_plans", [])),
                    **_allowances(item),
                }
            )
        for index, item in enumerate(document.get("esim_offers", [])):
            offers.append(
                {
                    "id": item["id"],
                    "name": item["name"],
                    "status": item.get("status", "available"),
                    "scope": item.get("scope", "local"),
                    "countries": list(item["countries"]),
                    "data_bytes": item.get("data_bytes"),
                    "validity_days": int(item["validity_days"]),
                    "price_cents": _price(item, f"esim_offers[{index}]"),
                    "activation_policy": item.get("activation_policy", "first_usage"),
                    "has_phone_number": bool(item.get("has_phone_number", False)),
                }
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogueError(f"{source}: missing or invalid field {exc}") from None
    plan_count, archived_plans = _upsert(Plan, plans)
    topup_count, archived_topups = _upsert(TopupOffer, topups)
    offer_count, archived_offers = _upsert(EsimOffer, offers)
    area_codes = load_area_codes()
    db.session.flush()
    return LoadResult(
        plan_count, topup_count, offer_count, area_codes, archived_plans + archived_topups + archived_offers
    )


def _places(description: str) -> tuple[list[str], list[str]]:
    """(states, cities) of a geocoder description: ``"Conkal/Mérida, YUC"``, ``"Jalisco/Zacatecas"``."""
    if ", " in description:
        names, _, abbreviation = description.rpartition(", ")
        code = state_code(abbreviation)
        return ([code] if code else []), [name.strip() for name in names.split("/") if name.strip()]
    parts = [part.strip() for part in description.split("/") if part.strip()]
    codes = [state_code(part) for part in parts]
    if all(codes):
        return list(dict.fromkeys(c for c in codes if c)), []
    states = [s for part in parts if (s := _CITY_STATES.get(_plain(part)) or state_code(part))]
    return list(dict.fromkeys(states)), parts


def _plain(text: str) -> str:
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).upper()


def load_area_codes() -> int:
    """Rebuild ``telecom_area_codes`` from libphonenumber's Mexican geocoder (``+52`` prefixes)."""
    # Imported here, not at module level: the geocoder holds every country's prefixes (about 100 MB
    # resident) and only this set-up step reads it; every app process would carry it otherwise.
    from phonenumbers.geodata import GEOCODE_DATA

    found: dict[str, tuple[list[str], list[str]]] = {}
    for prefix, names in GEOCODE_DATA.items():
        if not prefix.startswith("52") or len(prefix) not in (4, 5):
            continue
        found[prefix[2:]] = _places(names.get("es") or names.get("en") or "")
    for code, (states, cities) in found.items():
        row = db.session.get(AreaCode, code)
        values = {
            "digits": len(code),
            "local_number_length": 10 - len(code),
            "states": states,
            "cities": cities,
        }
        if row is None:
            db.session.add(AreaCode(code=code, available_for_new_lines=True, **values))
        else:
            for name, value in values.items():
                setattr(row, name, value)
    return len(found)


def list_plans(status: str = "available") -> list[Plan]:
    return list(
        db.session.scalars(select(Plan).where(Plan.status == status).order_by(Plan.price_cents, Plan.id))
    )


def get_plan(plan_id: str) -> Plan:
    plan = db.session.get(Plan, plan_id)
    if plan is None:
        raise not_found("Plan")
    return plan


def orderable_plan(plan_id: str, sim_type: str) -> Plan:
    plan = get_plan(plan_id)
    if plan.status != "available":
        raise conflict("plan_not_available", f"The plan {plan.id} is {plan.status}", "plan")
    if sim_type not in plan.sim_types:
        raise conflict("plan_not_available", f"The plan {plan.id} is not sold for {sim_type} lines", "plan")
    return plan


def list_topups(plan_id: str | None = None) -> list[TopupOffer]:
    rows = db.session.scalars(
        select(TopupOffer)
        .where(TopupOffer.status == "available")
        .order_by(TopupOffer.price_cents, TopupOffer.id)
    )
    return [t for t in rows if plan_id is None or not t.compatible_plans or plan_id in t.compatible_plans]


def orderable_topup(topup_id: str, plan_id: str) -> TopupOffer:
    topup = db.session.get(TopupOffer, topup_id)
    if topup is None:
        raise not_found("Top-up")
    if topup.status != "available" or (topup.compatible_plans and plan_id not in topup.compatible_plans):
        raise conflict(
            "topup_not_available", f"The top-up {topup.id} is not available for this line", "topup"
        )
    return topup


def list_esim_offers(country: str | None = None) -> list[EsimOffer]:
    rows = db.session.scalars(
        select(EsimOffer).where(EsimOffer.status == "available").order_by(EsimOffer.price_cents, EsimOffer.id)
    )
    return [o for o in rows if country is None or country.upper() in o.countries]


def list_area_codes(state: str | None = None, code: str | None = None) -> list[AreaCode]:
    statement = select(AreaCode).order_by(AreaCode.code)
    if code is not None:
        statement = statement.where(AreaCode.code == code)
    rows = list(db.session.scalars(statement))
    if state is not None:
        wanted = state_code(state)
        rows = [r for r in rows if wanted in r.states]
    return rows


def orderable_area_code(code: str) -> AreaCode:
    row = db.session.get(AreaCode, code)
    if row is None or not row.available_for_new_lines:
        raise conflict(
            "area_code_not_available", f"The area code {code} has no numbers for new lines", "area_code"
        )
    return row
