"""Helpers shared by the CRM services: tenant-scoped lookups, settings row, counters and day ranges."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any, TypeVar

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from blueprints.crm.models import CrmAccount, CrmContact, CrmProject, CrmSettings, TicketType
from core.db import db, utcnow
from core.errors import ApiError, not_found
from core.timeutil import day_end, day_start, get_zone

M = TypeVar("M")

DEFAULT_TICKET_PREFIX = "TCK"


def scoped(model: type[M], organization_id: uuid.UUID, object_id: uuid.UUID | None, resource: str) -> M:
    """The object of the caller's organization with this id, or 404 ``No <resource> found``."""
    found = db.session.get(model, object_id) if object_id is not None else None
    if found is None or found.organization_id != organization_id:  # type: ignore[attr-defined]
        raise not_found(resource)
    return found


def check_refs(
    organization_id: uuid.UUID,
    *,
    contact_id: uuid.UUID | None = None,
    account_id: uuid.UUID | None = None,
    project_id: uuid.UUID | None = None,
    ticket_type_id: uuid.UUID | None = None,
) -> None:
    """404 when a referenced contact, account, project or ticket type is not the caller's."""
    if contact_id is not None:
        scoped(CrmContact, organization_id, contact_id, "Contact")
    if account_id is not None:
        scoped(CrmAccount, organization_id, account_id, "Account")
    if project_id is not None:
        scoped(CrmProject, organization_id, project_id, "Project")
    if ticket_type_id is not None:
        scoped(TicketType, organization_id, ticket_type_id, "Ticket type")


def _insert_ignore(table: Any, values: dict[str, Any]) -> Any:
    dialect = db.session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    return insert(table).values(**values).on_conflict_do_nothing()


def ensure_settings(organization_id: uuid.UUID) -> CrmSettings:
    """The organization's settings row, created with defaults on first use (race-safe: insert-or-nothing)."""
    found = db.session.get(CrmSettings, organization_id)
    if found is not None:
        return found
    now = utcnow()
    db.session.execute(
        _insert_ignore(
            CrmSettings.__table__,
            {
                "organization_id": organization_id,
                "base_currency": "MXN",
                "ticket_prefix": DEFAULT_TICKET_PREFIX,
                "ticket_counter": 0,
                "created_at": now,
                "updated_at": now,
            },
        )
    )
    found = db.session.get(CrmSettings, organization_id)
    assert found is not None
    return found


def next_ticket_number(organization_id: uuid.UUID) -> tuple[int, str]:
    """Atomically take the next ticket number. The UPDATE locks the settings row until the transaction
    ends, so concurrent creations queue on it and numbers are consecutive with no gaps or repeats."""
    ensure_settings(organization_id)
    row = db.session.execute(
        update(CrmSettings)
        .where(CrmSettings.organization_id == organization_id)
        .values(ticket_counter=CrmSettings.ticket_counter + 1)
        .returning(CrmSettings.ticket_counter, CrmSettings.ticket_prefix)
        .execution_options(synchronize_session=False)
    ).one()
    settings = db.session.get(CrmSettings, organization_id)
    if settings is not None:
        db.session.expire(settings, ["ticket_counter"])
    return int(row[0]), str(row[1])


def next_deal_number(pipeline_id: uuid.UUID) -> int:
    """Same idea per pipeline: ``UPDATE ... SET deal_counter = deal_counter + 1 ... RETURNING``."""
    from blueprints.crm.models import Pipeline

    number = db.session.execute(
        update(Pipeline)
        .where(Pipeline.id == pipeline_id)
        .values(deal_counter=Pipeline.deal_counter + 1)
        .returning(Pipeline.deal_counter)
        .execution_options(synchronize_session=False)
    ).scalar_one()
    pipeline = db.session.get(Pipeline, pipeline_id)
    if pipeline is not None:
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
        raise ApiError(400, f"{name}: the range is empty (after is later than before)", param=name)


def like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def first(statement: Any) -> Any:
    return db.session.scalars(statement.limit(1)).first()
