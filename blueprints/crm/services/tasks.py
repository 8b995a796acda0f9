"""Tasks linked to deals, tickets, contacts and accounts; soft-deleted.

Every change publishes ``task.updated`` (``change``: ``created``, ``updated``, ``completed``,
``deleted``), delivered after the commit: the desk's task list and the rail's overdue badge follow it.
The desk's agenda (:func:`agenda`) and the rail's count (:func:`overdue_count`) read "overdue" and
"today" in the organization's time zone, a due date without a time (stored at 00:00Z) being a calendar
day: such a task is overdue once its day is over there, not at midnight UTC.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from sqlalchemy import and_, func, select
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
from core.db import db, isoformat, utcnow
from core.events import publish
from core.pagination import Page, paginate
from core.textsearch import contains, text_index
from core.timeutil import as_utc, get_zone

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


def _event(task: CrmTask, change: str) -> None:
    """``task.updated``, delivered after the commit (dropped on rollback)."""
    publish(
        "task.updated",
        task.organization_id,
        {
            "id": str(task.id),
            "title": task.title,
            "status": task.status,
            "owner_id": task.owner_id,
            "due_date": isoformat(task.due_date),
            # what it is linked to: an open deal or ticket drawer refreshes its tasks
            "deal_id": str(task.deal_id) if task.deal_id else None,
            "ticket_id": str(task.ticket_id) if task.ticket_id else None,
            "change": change,
        },
    )


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
    _event(task, "created")
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
    _event(task, "updated")
    return get_task(organization_id, task.id)


def complete_task(organization_id: uuid.UUID, task_id: uuid.UUID) -> CrmTask:
    """Idempotent: completing a completed task keeps its first ``completed_at``."""
    task = get_task(organization_id, task_id)
    if task.status != "completed":
        _set_status(task, "completed")
        task.updated_at = utcnow()
        _event(task, "completed")  # completing again changes nothing and says nothing
    return get_task(organization_id, task.id)


def delete_task(organization_id: uuid.UUID, task_id: uuid.UUID) -> None:
    task = get_task(organization_id, task_id)
    task.deleted_at = utcnow()
    audit_log.record("task.deleted", "task", task.id, organization_id=organization_id)
    _event(task, "deleted")


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


def _conditions(organization_id: uuid.UUID, query: TaskFilters) -> list[Any]:
    conditions: list[Any] = [CrmTask.organization_id == organization_id, CrmTask.deleted_at.is_(None)]
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
    return conditions


# Soonest due first (undated last), then newest.
DUE_ORDER = (CrmTask.due_date.asc().nulls_last(), CrmTask.created_at.desc(), CrmTask.id)


def list_tasks(organization_id: uuid.UUID, query: TaskFilters) -> Page[CrmTask]:
    query = check(query)
    statement = (
        select(CrmTask).where(*_conditions(organization_id, query)).order_by(*DUE_ORDER).options(*TASK_LOAD)
    )
    return paginate(statement, offset=query.offset, limit=query.limit)


# ---- the desk's agenda: overdue, today, upcoming, done ---------------------------------------------------


def _days_not_over(now: datetime, zone: tzinfo) -> list[datetime]:
    """The 00:00Z instants already past that stand for calendar days not over yet in ``zone``: a task
    due on such a day (a date without a time) is not overdue, although its stored instant has passed. At
    most two: today's and, west of UTC in the evening, tomorrow's."""
    day = now.astimezone(zone).date()
    spared = []
    while (midnight := datetime.combine(day, time.min, tzinfo=UTC)) < now:
        spared.append(midnight)
        day += timedelta(days=1)
    return spared


def overdue_clause(now: datetime, zone: tzinfo) -> Any:
    """Open tasks whose due moment has passed in ``zone``: a time before ``now``, or a calendar day
    before today there."""
    conditions = [CrmTask.status != "completed", CrmTask.due_date.is_not(None), CrmTask.due_date < now]
    spared = _days_not_over(now, zone)
    if spared:
        conditions.append(CrmTask.due_date.not_in(spared))
    return and_(*conditions)


def due_group(task: CrmTask, now: datetime, zone: tzinfo) -> str:
    """``overdue``, ``today``, ``upcoming`` (undated ones too) or ``done``: :func:`overdue_clause`'s
    rule, for one task already read."""
    if task.status == "completed":
        return "done"
    if task.due_date is None:
        return "upcoming"
    due = as_utc(task.due_date)
    today = now.astimezone(zone).date()
    if due.time() == time.min:  # a calendar day, not shifted by a zone
        day = due.date()
    elif due < now:
        return "overdue"
    else:
        day = due.astimezone(zone).date()
    return "overdue" if day < today else "today" if day == today else "upcoming"


def overdue_count(organization_id: uuid.UUID, member_id: str, *, timezone: str | None = None) -> int:
    """How many open tasks of the member are overdue in the organization's zone (the desk rail's badge);
    one COUNT."""
    now = utcnow()
    count = db.session.scalar(
        select(func.count())
        .select_from(CrmTask)
        .where(
            CrmTask.organization_id == organization_id,
            CrmTask.deleted_at.is_(None),
            CrmTask.owner_id == member_id,
            overdue_clause(now, get_zone(timezone)),
        )
    )
    return int(count or 0)


AGENDA_GROUPS = ("overdue", "today", "upcoming", "done")


@dataclass(frozen=True)
class Agenda:
    """A task list as the desk shows it: open tasks by when they are due, then the latest completed."""

    groups: dict[str, list[CrmTask]]  # every key of AGENDA_GROUPS, in that order
    open_total: int  # open tasks matching, shown or not
    done_total: int

    @property
    def open_more(self) -> int:
        shown = sum(len(self.groups[name]) for name in AGENDA_GROUPS if name != "done")
        return max(self.open_total - shown, 0)

    @property
    def done_more(self) -> int:
        return max(self.done_total - len(self.groups["done"]), 0)

    @property
    def empty(self) -> bool:
        return not (self.open_total or self.done_total)


def _counted(statement: Any) -> tuple[list[CrmTask], int]:
    rows = db.session.execute(statement).all()
    return [row[0] for row in rows], int(rows[0][1]) if rows else 0


def agenda(
    organization_id: uuid.UUID,
    query: TaskFilters,
    *,
    open_limit: int = 200,
    done_limit: int = 20,
) -> Agenda:
    """The tasks ``query`` finds (its limit and offset aside), open ones grouped overdue, today and
    upcoming in ``query.timezone`` (soonest due first, undated last), then the latest completed. Two
    queries and the links' loads, whatever the number of tasks. ``overdue`` means this zone's overdue
    (:func:`overdue_clause`), not the API's instant comparison."""
    query = check(query)
    now = utcnow()
    zone = get_zone(query.timezone)
    conditions = _conditions(organization_id, replace(query, overdue=None))
    if query.overdue is not None:
        late = overdue_clause(now, zone)
        conditions.append(late if query.overdue else ~late)
    wants_open = query.status != "completed" and query.is_completed is not True
    wants_done = query.status in (None, "completed") and query.is_completed is not False
    open_tasks, open_total = (
        _counted(
            select(CrmTask, func.count().over())
            .where(*conditions, CrmTask.status != "completed")
            .order_by(*DUE_ORDER)
            .limit(open_limit)
            .options(*TASK_LOAD)
        )
        if wants_open
        else ([], 0)
    )
    done, done_total = (
        _counted(
            select(CrmTask, func.count().over())
            .where(*conditions, CrmTask.status == "completed")
            .order_by(CrmTask.completed_at.desc().nulls_last(), CrmTask.id.desc())
            .limit(done_limit)
            .options(*TASK_LOAD)
        )
        if wants_done
        else ([], 0)
    )
    groups: dict[str, list[CrmTask]] = {name: [] for name in AGENDA_GROUPS}
    for task in open_tasks:
        groups[due_group(task, now, zone)].append(task)
    groups["done"] = done
    return Agenda(groups, open_total, done_total)
