"""Helpers shared by the CRM services: reference checks, the settings row, counters and day ranges.

Every refusal here is a ``rules.Refusal`` with a stable code and the field it concerns (in the wire's
name), so pages can place it; the API renders status and message only, as before."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any, TypeVar

from sqlalchemy import insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from blueprints.crm import hooks
from blueprints.crm.models import CrmAccount, CrmContact, CrmProject, CrmSettings, Pipeline, TicketType
from blueprints.crm.rules import Refusal, missing
from core.db import db, utcnow
from core.tenancy import find_for_org
from core.timeutil import day_end, day_start, get_zone

M = TypeVar("M")

DEFAULT_TICKET_PREFIX = "TCK"
DEFAULT_BASE_CURRENCY = "MXN"


@contextmanager
def savepoint() -> Iterator[None]:
    """A SAVEPOINT around statements whose IntegrityError becomes a 409: flushed inside, so the
    constraint's verdict arrives here, and on error only these statements are undone."""
    with db.session.begin_nested():
        yield
        db.session.flush()


def get_ref(
    model: type[M], object_id: Any, organization_id: uuid.UUID, resource: str, param: str | None = None
) -> M:
    """The organization's object with this id (``core.tenancy``: another organization's, an unknown and a
    malformed id are all "not found"), or 404 ``No <resource> found`` coded ``<resource>_not_found`` and
    naming ``param``, the field that held the id (None for the record a path names)."""
    found = find_for_org(model, object_id, organization_id)
    if found is None:
        raise missing(resource, param)
    return found


# What each referencing field of a draft names (its wire name -> model and resource).
REFERENCES: dict[str, tuple[type[Any], str]] = {
    "contact_id": (CrmContact, "Contact"),
    "requester_id": (CrmContact, "Contact"),
    "account_id": (CrmAccount, "Account"),
    "project_id": (CrmProject, "Project"),
    "ticket_type_id": (TicketType, "Ticket type"),
}


def check_refs(organization_id: uuid.UUID, **ids: uuid.UUID | None) -> None:
    """404 naming the field when a referenced contact, account, project or ticket type (given by the
    field's wire name: ``requester_id=...``) is not the caller's; checked in the order given."""
    for param, object_id in ids.items():
        if object_id is not None:
            model, resource = REFERENCES[param]
            get_ref(model, object_id, organization_id, resource, param)


def check_members(organization_id: uuid.UUID, fields: dict[str, str | None]) -> None:
    """400 ``member_unknown`` naming the field when a member id names no member of the organization
    (asked through the ``known_members`` hook; ``None`` clears and is always fine)."""
    sent = {name: value for name, value in fields.items() if value is not None}
    unknown = set(hooks.unknown_members(organization_id, sent.values()))
    for name, value in sent.items():
        if value in unknown:
            raise Refusal(
                400,
                f"{name}: no member of the organization has the id {value}",
                code="member_unknown",
                param=name,
            )


def check_conversations(
    organization_id: uuid.UUID, conversation_ids: Iterable[str], param: str = "conversation_ids"
) -> None:
    """404 ``No Conversation found`` when an id names no conversation (or call) of the organization,
    like every other reference the CRM is given; ``param`` names the first unknown one
    (``conversation_ids.2``) when the ids are a list."""
    wanted = list(conversation_ids)
    unknown = set(hooks.unknown_conversations(organization_id, wanted))
    if unknown:
        index = next(i for i, conversation_id in enumerate(wanted) if conversation_id in unknown)
        raise missing("Conversation", param if param == "conversation_id" else f"{param}.{index}")


def insert_ignore(table: Any, values: dict[str, Any]) -> Any:
    dialect = db.session.get_bind().dialect.name
    if dialect == "postgresql":
        return pg_insert(table).values(**values).on_conflict_do_nothing()
    if dialect == "sqlite":
        return sqlite_insert(table).values(**values).on_conflict_do_nothing()
    return insert(table).values(**values)


def _settings_row(organization_id: uuid.UUID) -> CrmSettings | None:
    return db.session.scalars(
        select(CrmSettings).where(CrmSettings.organization_id == organization_id)
    ).first()


def read_settings(organization_id: uuid.UUID) -> CrmSettings:
    """The organization's settings; before the first write that needs them, the defaults (a transient
    row that is never added to the session: a read never writes)."""
    found = _settings_row(organization_id)
    if found is not None:
        return found
    return CrmSettings(
        organization_id=organization_id,
        base_currency=DEFAULT_BASE_CURRENCY,
        ticket_prefix=DEFAULT_TICKET_PREFIX,
        ticket_counter=0,
    )


def ensure_settings(organization_id: uuid.UUID) -> CrmSettings:
    """The settings row, inserted with the defaults by the first write that needs it. Insert-or-nothing:
    a concurrent first write waits for the other insert and then finds its row instead of failing."""
    found = _settings_row(organization_id)
    if found is not None:
        return found
    now = utcnow()
    db.session.execute(
        insert_ignore(
            CrmSettings.__table__,
            {
                "organization_id": organization_id,
                "base_currency": DEFAULT_BASE_CURRENCY,
                "ticket_prefix": DEFAULT_TICKET_PREFIX,
                "ticket_counter": 0,
                "created_at": now,
                "updated_at": now,
            },
        )
    )
    found = _settings_row(organization_id)
    assert found is not None
    return found


def next_ticket_number(organization_id: uuid.UUID) -> tuple[int, str]:
    """Atomically take the next ticket number. The UPDATE locks the settings row until the unit of work
    ends, so concurrent creations queue on it and numbers are consecutive with no gaps or repeats (a
    rolled-back creation gives its number back with the rest of its transaction)."""
    settings = ensure_settings(organization_id)
    row = db.session.execute(
        update(CrmSettings)
        .where(CrmSettings.organization_id == organization_id)
        .values(ticket_counter=CrmSettings.ticket_counter + 1)
        .returning(CrmSettings.ticket_counter, CrmSettings.ticket_prefix)
        .execution_options(synchronize_session=False)
    ).one()
    db.session.expire(settings, ["ticket_counter"])
    return int(row[0]), str(row[1])


def next_deal_number(pipeline: Pipeline) -> int:
    """Same idea per pipeline: ``UPDATE ... SET deal_counter = deal_counter + 1 ... RETURNING``."""
    number = db.session.execute(
        update(Pipeline)
        .where(Pipeline.id == pipeline.id)
        .values(deal_counter=Pipeline.deal_counter + 1)
        .returning(Pipeline.deal_counter)
        .execution_options(synchronize_session=False)
    ).scalar_one()
    db.session.expire(pipeline, ["deal_counter"])
    return int(number)


def local_range(
    after: date | None, before: date | None, timezone: str | None, name: str = "created_after"
) -> tuple[datetime | None, datetime | None]:
    """Inclusive local days as a half-open UTC range: ``[start of after, end of before)``."""
    check_range(after, before, name)
    zone = get_zone(timezone)
    start = day_start(after, zone) if after else None
    end = day_end(before, zone) if before else None
    return start, end


def check_range(start: Any, end: Any, name: str) -> None:
    if start is not None and end is not None and start > end:
        raise Refusal(
            400, f"{name}: the range is empty (after is later than before)", code="range_inverted", param=name
        )
