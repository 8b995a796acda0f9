"""What a refused response must never contain, and what a refused request must never change.

``secrets_of`` collects organization A's identifying values straight from the stores: every id of a row
A owns and the free text people type (names, e-mails, phone numbers, message and note text, CURP/RFC,
addresses). ``snapshot`` reads every row of both stores, so comparing two snapshots shows any write.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from babel.messages.pofile import read_po
from flask import Flask
from sqlalchemy import select

from core.db import db
from core.environments import ENVIRONMENTS, environment_app

# Columns whose values are what a person typed or an identifier: a response leaking A's data would carry
# one of them. Status words, currencies and timestamps are left out: they are the same for everyone.
_TEXT_COLUMNS = {
    "name",
    "full_name",
    "holder_full_name",
    "agent_name",
    "member_name",
    "email",
    "phone",
    "phone_number",
    "title",
    "content",
    "body",
    "notes",
    "description",
    "domain",
    "short_code",
    "value",
    "line1",
    "curp",
    "rfc",
    "holder_curp",
    "holder_rfc",
    "document_number",
    "contact_address",
    "address",
    "reference",
    "target",
    "url",
    "sku",
    "iccid",
    "matching_id",
    "folio",
    "nip",
    "key_hash",
    "prefix",
}
# Text the service itself writes, the same for every organization ("Travel eSIM" on a ledger entry).
ROOT = Path(__file__).resolve().parents[2]
_SYSTEM_TEXT = {("telecom_ledger_entries", "description")}
# Enum-like words ("status", "environment") occur in every page; a single lowercase token is not data.
_WORD = re.compile(r"[a-z_]+")
# Ids shorter than this (a member's short id, a 3-letter code) could occur in any text by chance.
_MIN_LENGTH = 6
# Volatile bookkeeping a refused request may legitimately write (the refused caller's own key use).
_VOLATILE = {("api_keys", "last_used_at"), ("users", "last_login_at")}
_VOLATILE_TABLES = {"member_connections", "audit_entries"}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _forms(value: Any) -> Iterator[str]:
    """The ways an id may be written in a response: UUIDs hyphenated and as stored hex."""
    if isinstance(value, uuid.UUID):
        yield str(value)
        yield value.hex
    elif value is not None:
        yield str(value)


# Catalogue tables every organization reads (plans, top-ups, eSIM offers): their ids are nobody's secret.
_SHARED_TABLES = {"telecom_plans", "telecom_topups", "telecom_esim_offers", "telecom_area_codes"}


def secrets_of(app: Flask, organization_id: uuid.UUID, other: uuid.UUID) -> set[str]:
    """Organization A's ids and typed text in both environments, less what is not A's alone: values
    organization ``other`` has too (a default pipeline's stage names), the shared catalogue, and the
    product's own words (A's unavailability reason "Meeting" is also a task type every page names)."""
    return _values_of(app, organization_id) - _values_of(app, other) - _shared_values(app) - _product_words()


def _product_words() -> set[str]:
    """Every message of the desk's catalogues, in English and in Spanish."""
    words: set[str] = set()
    for language in ("en", "es"):
        path = ROOT / "translations" / language / "LC_MESSAGES" / "messages.po"
        with path.open("rb") as handle:
            for message in read_po(handle, locale=language):
                for text in (message.id, message.string):
                    words.update(t for t in (text if isinstance(text, tuple) else (text,)) if t)
    return words


def _shared_values(app: Flask) -> set[str]:
    found: set[str] = set()
    for environment in ENVIRONMENTS:
        with environment_app(app, environment).app_context():
            for name in _SHARED_TABLES:
                for row in db.session.execute(select(db.metadata.tables[name])).mappings():
                    found.update(v for v in row.values() if isinstance(v, str))
    return found


def _values_of(app: Flask, organization_id: uuid.UUID) -> set[str]:
    found: set[str] = {str(organization_id), organization_id.hex}
    for environment in ENVIRONMENTS:
        with environment_app(app, environment).app_context():
            for table in db.metadata.sorted_tables:
                if "organization_id" not in table.c:
                    continue
                rows = db.session.execute(select(table).where(table.c.organization_id == organization_id))
                for row in rows.mappings():
                    for column, value in row.items():
                        if column in ("id", "pk") or (column.endswith("_id") and column != "organization_id"):
                            found.update(_forms(value))
                        elif column in _TEXT_COLUMNS and (table.name, column) not in _SYSTEM_TEXT:
                            found.update(_strings(value))
    return {value for value in found if len(value) >= _MIN_LENGTH and not _WORD.fullmatch(value)}


def text_of(response: Any) -> str:
    """A response body as text, whatever it is (a QR code PNG answered to the wrong caller included)."""
    return response.get_data().decode("utf-8", errors="replace")  # type: ignore[no-any-return]


def leaked(body: str, secrets: set[str], sent: str = "") -> list[str]:
    """A's values found in ``body``. The path the caller sent (``sent``) may be echoed back (a sign-in
    redirect's ``next``): that tells the caller only what it already wrote, so it is taken out first."""
    if sent:
        for form in {sent, quote(sent, safe=""), quote(sent, safe="/")}:
            body = body.replace(form, "")
    lowered = body.lower()
    return sorted(value for value in secrets if value.lower() in lowered)


def snapshot(app: Flask, organization_id: uuid.UUID) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of A in both stores (rows of tables without ``organization_id``, which hang off an owned
    row, are all taken), in a stable order."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for environment in ENVIRONMENTS:
        with environment_app(app, environment).app_context():
            for table in db.metadata.sorted_tables:
                if table.name in _VOLATILE_TABLES:
                    continue
                columns = [c for c in table.c if (table.name, c.name) not in _VOLATILE]
                statement = select(*columns)
                if "organization_id" in table.c:
                    statement = statement.where(table.c.organization_id == organization_id)
                result = db.session.execute(statement).all()
                rows[f"{environment}.{table.name}"] = sorted(tuple(map(repr, r)) for r in result)
            db.session.remove()
    return rows


def changes(before: dict[str, list[tuple[Any, ...]]], after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """Rows that appeared or disappeared, per table (an updated row shows as both)."""
    found = []
    for name in sorted(before.keys() | after.keys()):
        old, new = set(before.get(name, ())), set(after.get(name, ()))
        found += [f"{name} - {row}" for row in sorted(old - new)] + [
            f"{name} + {row}" for row in sorted(new - old)
        ]
    return found
