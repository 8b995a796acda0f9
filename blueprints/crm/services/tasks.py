"""Tasks linked to deals, tickets, contacts and accounts; soft-deleted."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.crm.drafts import TaskChanges, TaskDraft, check, given, sent
from blueprints.crm.models import CrmTask, Deal, Ticket
from blueprints.crm.rules import (
    Limit,
    MemberId,
    Offset,
    Search,
    TaskPriority,
    TaskStatus,
    TaskType,
    Timezone,
    missing,
)
from blueprints.crm.services.common import check_members, check_refs, get_ref, local_range
from core.db import db, utcnow
from core.pagination import Page, paginate
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
        raise missing("Task")
    return task


def _check_links(
    organization_id: uuid.UUID,
    *,
    deal_id: uuid.UUID | None,
    ticket_id: uuid.UUID | None,
    contact_id: uuid.UUID | None,
    account_id: uuid.UUID | None,
    owner_id: str | None,
) -> None:
    if deal_id is not None:
        deal = get_ref(Deal, deal_id, organization_id, "Deal", "deal_id")
        if deal.deleted_at is not None:
            raise missing("Deal", "deal_id")
    if ticket_id is not None:
        get_ref(Ticket, ticket_id, organization_id, "Ticket", "ticket_id")
    check_refs(organization_id, contact_id=contact_id, account_id=account_id)
    check_members(organization_id, {"owner_id": owner_id})


def create_task(organization_id: uuid.UUID, draft: TaskDraft) -> CrmTask:
    """A pending task, linked to any of a deal, a ticket, a contact and an account of the organization."""
    draft = check(draft)
    _check_links(
        organization_id,
        deal_id=draft.deal_id,
        ticket_id=draft.ticket_id,
        contact_id=draft.contact_id,
        account_id=draft.account_id,
        owner_id=draft.owner_id,
    )
    now = utcnow()
    task = CrmTask(
        organization_id=organization_id,
        title=draft.title,
        type=draft.type,
        status="pending",
        priority=draft.priority,
        due_date=_utc(draft.due_date),
        notes=draft.notes,
        created_at=now,
        updated_at=now,
        owner_id=draft.owner_id,
        deal_id=draft.deal_id,
        ticket_id=draft.ticket_id,
        contact_id=draft.contact_id,
        account_id=draft.account_id,
    )
    db.session.add(task)
    db.session.flush()
    return get_task(organization_id, task.id)


def _set_status(task: CrmTask, status: str) -> None:
    if status == task.status:
        return
    task.status = status
    task.completed_at = utcnow() if status == "completed" else None


# The fields that link a task (a null unlinks).
LINKS = ("owner_id", "deal_id", "ticket_id", "contact_id", "account_id")


def update_task(organization_id: uuid.UUID, task_id: uuid.UUID, changes: TaskChanges) -> CrmTask:
    """Only the fields sent change (``drafts.UNSET``: not sent); a field sent as null is cleared (where
    it may be null)."""
    changes = check(changes)
    task = get_task(organization_id, task_id)
    _check_links(
        organization_id,
        deal_id=changes.deal_id if given(changes.deal_id) else None,
        ticket_id=changes.ticket_id if given(changes.ticket_id) else None,
        contact_id=changes.contact_id if given(changes.contact_id) else None,
        account_id=changes.account_id if given(changes.account_id) else None,
        owner_id=changes.owner_id if given(changes.owner_id) else None,
    )
    if given(changes.title):
        task.title = changes.title
    if given(changes.type):
        task.type = changes.type
    if given(changes.priority):
        task.priority = changes.priority
    for name in LINKS:
        value = getattr(changes, name)
        if sent(value):
            setattr(task, name, value)
    if sent(changes.notes):
        task.notes = changes.notes
    if sent(changes.due_date):
        task.due_date = _utc(changes.due_date)
    if given(changes.status):
        _set_status(task, changes.status)
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
    """What a task list is narrowed by (every field optional). The API's query model is generated from
    these fields (``schemas.TaskListQuery``)."""

    limit: Limit = 20  # tasks default to 20 (spec); the other lists 100
    offset: Offset = 0
    owner_id: MemberId | None = None
    status: TaskStatus | None = None
    is_completed: bool | None = None
    type: TaskType | None = None
    priority: TaskPriority | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    due_before: date | None = None
    due_after: date | None = None
    overdue: bool | None = None
    search: Search | None = None
    timezone: Timezone = None


def list_tasks(organization_id: uuid.UUID, query: TaskFilters) -> Page[CrmTask]:
    query = check(query)
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
