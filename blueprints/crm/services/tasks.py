"""Tasks linked to deals, tickets, contacts and accounts; soft-deleted."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.crm.models import CrmTask, Deal, Ticket
from blueprints.crm.services.common import check_members, check_refs, local_range
from core.db import db, utcnow
from core.errors import not_found
from core.pagination import Page, paginate
from core.tenancy import get_for_org
from core.textsearch import contains, text_index
from core.timeutil import as_utc

TASK_LOAD = (
    selectinload(CrmTask.deal),
    selectinload(CrmTask.ticket),
    selectinload(CrmTask.contact),
    selectinload(CrmTask.account),
)


def _utc(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


def get_task(organization_id: uuid.UUID, task_id: uuid.UUID) -> CrmTask:
    task = db.session.scalars(
        select(CrmTask)
        .where(
            CrmTask.id == task_id, CrmTask.organization_id == organization_id, CrmTask.deleted_at.is_(None)
        )
        .options(*TASK_LOAD)
        .execution_options(populate_existing=True)
    ).first()
    if task is None:
        raise not_found("Task")
    return task


def _check_links(organization_id: uuid.UUID, fields: dict[str, Any]) -> None:
    if fields.get("deal_id") is not None:
        deal = get_for_org(Deal, fields["deal_id"], organization_id, "Deal")
        if deal.deleted_at is not None:
            raise not_found("Deal")
    if fields.get("ticket_id") is not None:
        get_for_org(Ticket, fields["ticket_id"], organization_id, "Ticket")
    check_refs(organization_id, contact_id=fields.get("contact_id"), account_id=fields.get("account_id"))
    check_members(organization_id, {"owner_id": fields.get("owner_id")})


LINKS = ("owner_id", "deal_id", "ticket_id", "contact_id", "account_id")


def create_task(organization_id: uuid.UUID, fields: dict[str, Any]) -> CrmTask:
    """``fields``: title and optionally type, priority, due_date, owner_id (a member id), deal_id,
    ticket_id, contact_id, account_id, notes."""
    _check_links(organization_id, fields)
    now = utcnow()
    task = CrmTask(
        organization_id=organization_id,
        title=fields["title"],
        type=fields.get("type") or "to_do",
        status="pending",
        priority=fields.get("priority") or "normal",
        due_date=_utc(fields.get("due_date")),
        notes=fields.get("notes"),
        created_at=now,
        updated_at=now,
        **{name: fields.get(name) for name in LINKS},
    )
    db.session.add(task)
    db.session.flush()
    return get_task(organization_id, task.id)


def _set_status(task: CrmTask, status: str) -> None:
    if status == task.status:
        return
    task.status = status
    task.completed_at = utcnow() if status == "completed" else None


def update_task(organization_id: uuid.UUID, task_id: uuid.UUID, changes: dict[str, Any]) -> CrmTask:
    """Only the fields sent change; a field sent as null is cleared (where it may be null)."""
    task = get_task(organization_id, task_id)
    _check_links(organization_id, changes)
    for name in ("title", "type", "priority"):
        if changes.get(name) is not None:
            setattr(task, name, changes[name])
    for name in (*LINKS, "notes"):
        if name in changes:
            setattr(task, name, changes[name])
    if "due_date" in changes:
        task.due_date = _utc(changes["due_date"])
    if changes.get("status") is not None:
        _set_status(task, changes["status"])
    task.updated_at = utcnow()
    return get_task(organization_id, task.id)


def complete_task(organization_id: uuid.UUID, task_id: uuid.UUID) -> CrmTask:
    """Idempotent: completing a completed task keeps its first ``completed_at``."""
    task = get_task(organization_id, task_id)
    if task.status != "completed":
        _set_status(task, "completed")
        task.updated_at = utcnow()
    return get_task(organization_id, task.id)


def delete_task(organization_id: uuid.UUID, task_id: uuid.UUID) -> None:
    task = get_task(organization_id, task_id)
    task.deleted_at = utcnow()
    audit_log.record("task.deleted", "task", task.id, organization_id=organization_id)


# The list's search (migration crm_0004: a trigram index, core.textsearch).
TASK_TEXT = text_index("crm_tasks", "title")


@dataclass(frozen=True)
class TaskFilters:
    """What a task list is narrowed by (every field optional)."""

    limit: int = 20
    offset: int = 0
    owner_id: str | None = None
    status: str | None = None
    is_completed: bool | None = None
    type: str | None = None
    priority: str | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    due_before: date | None = None
    due_after: date | None = None
    overdue: bool | None = None
    search: str | None = None
    timezone: str | None = None


def list_tasks(organization_id: uuid.UUID, query: TaskFilters) -> Page[CrmTask]:
    conditions = [CrmTask.organization_id == organization_id, CrmTask.deleted_at.is_(None)]
    for name in (
        "owner_id",
        "status",
        "type",
        "priority",
        "deal_id",
        "ticket_id",
        "contact_id",
        "account_id",
    ):
        value = getattr(query, name)
        if value is not None:
            conditions.append(getattr(CrmTask, name) == value)
    if query.is_completed is True:
        conditions.append(CrmTask.status == "completed")
    elif query.is_completed is False:
        conditions.append(CrmTask.status != "completed")
    if query.overdue is True:
        conditions += [
            CrmTask.status != "completed",
            CrmTask.due_date.is_not(None),
            CrmTask.due_date < utcnow(),
        ]
    elif query.overdue is False:
        conditions.append(
            (CrmTask.status == "completed") | CrmTask.due_date.is_(None) | (CrmTask.due_date >= utcnow())
        )
    start, end = local_range(query.due_after, query.due_before, query.timezone, "due_after")
    if start is not None:
        conditions.append(CrmTask.due_date >= start)
    if end is not None:
        conditions.append(CrmTask.due_date < end)
    if query.search:
        conditions.append(contains(TASK_TEXT, CrmTask, query.search))
    # Soonest due first (undated last), then newest.
    statement = (
        select(CrmTask)
        .where(*conditions)
        .order_by(CrmTask.due_date.asc().nulls_last(), CrmTask.created_at.desc(), CrmTask.id)
        .options(*TASK_LOAD)
    )
    return paginate(statement, offset=query.offset, limit=query.limit)
