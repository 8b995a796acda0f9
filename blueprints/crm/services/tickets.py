"""Tickets: per-organization numbering, sanitised bodies, assignment, states with history; projects and
ticket types they point at."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, get_args

import nh3
from sqlalchemy import Select, case, func, or_, select, union_all
from sqlalchemy.orm import joinedload, selectinload

from blueprints.audit import services as audit_log
from blueprints.crm.drafts import NamedChanges, NamedDraft, TicketChanges, TicketDraft, check, given, sent
from blueprints.crm.models import CrmProject, Ticket, TicketConversation, TicketStateChange, TicketType
from blueprints.crm.rules import (
    Limit,
    MemberId,
    Offset,
    Rule,
    Search,
    TicketPriority,
    TicketState,
    Timezone,
    missing,
)
from blueprints.crm.services.common import (
    check_conversations,
    check_members,
    check_refs,
    get_ref,
    local_range,
    next_ticket_number,
)
from core.db import ORDERED_INDEXES, db, utcnow
from core.errors import ApiError
from core.events import publish
from core.pagination import Keyset, Page, decode_cursor, encode_cursor, paginate
from core.textsearch import contains, text_index
from core.timeutil import as_utc

TICKET_LOAD = (selectinload(Ticket.conversations),)
# One ticket: its links joined into the same query (one round trip; a list keeps the IN query above).
TICKET_LOAD_ONE = (joinedload(Ticket.conversations),)


def sanitize_html(html: str | None) -> str | None:
    """Keep formatting, drop scripts, event handlers and dangerous URLs (nh3, Rust's ammonia)."""
    if html is None:
        return None
    return nh3.clean(html)


def get_ticket(organization_id: uuid.UUID, ticket_id: uuid.UUID) -> Ticket:
    ticket = (
        db.session.scalars(
            select(Ticket)
            .where(Ticket.id == ticket_id, Ticket.organization_id == organization_id)
            .options(*TICKET_LOAD_ONE)
            .execution_options(populate_existing=True)
        )
        .unique()
        .one_or_none()
    )  # every joined row read: the links collection is complete
    if ticket is None:
        raise missing("Ticket")
    return ticket


_REFERENCE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]{0,9})-(\d{1,9})\s*$")


def get_ticket_by_reference(organization_id: uuid.UUID, reference: str) -> Ticket:
    """``<PREFIX>-<number>``, case-insensitive. The stored reference is matched, so tickets created
    before a prefix change are still found by the reference they were given."""
    if not _REFERENCE.match(reference):
        raise missing("Ticket")
    found = db.session.scalars(
        select(Ticket)
        .where(
            Ticket.organization_id == organization_id,
            func.upper(Ticket.reference) == reference.strip().upper(),
        )
        .options(*TICKET_LOAD_ONE)
    ).unique()
    ticket = next(iter(found.all()), None)  # all rows read: the links collection is complete
    if ticket is None:
        raise missing("Ticket")
    return ticket


def _event(ticket: Ticket, change: str) -> None:
    publish(
        "ticket.updated",
        ticket.organization_id,
        {
            "id": str(ticket.id),
            "reference": ticket.reference,
            "title": ticket.title,
            "state": ticket.state,
            "priority": ticket.priority,
            "assignee_member_id": ticket.assignee_member_id,
            "change": change,
        },
    )


def _record_state(ticket: Ticket, previous: str | None, actor: str | None) -> None:
    db.session.add(
        TicketStateChange(
            ticket_id=ticket.id,
            from_state=previous,
            to_state=ticket.state,
            changed_by=actor,
            changed_at=utcnow(),
        )
    )


def _set_state(ticket: Ticket, state: str, actor: str | None) -> bool:
    if state == ticket.state:
        return False
    previous = ticket.state
    ticket.state = state
    # closed_at marks the latest close; reopening clears it.
    ticket.closed_at = utcnow() if state == "closed" else None
    _record_state(ticket, previous, actor)
    return True


def _set_assignee(ticket: Ticket, member_id: str | None, assigned_by: str | None) -> None:
    ticket.assignee_member_id = member_id
    ticket.assigned_by = assigned_by if member_id else None
    ticket.assigned_at = utcnow() if member_id else None


def _set_conversations(ticket: Ticket, conversation_ids: tuple[str, ...]) -> None:
    wanted = list(dict.fromkeys(conversation_ids))
    existing = {c.conversation_id: c for c in ticket.conversations}
    for conversation_id, link in existing.items():
        if conversation_id not in wanted:
            ticket.conversations.remove(link)
    for conversation_id in wanted:
        if conversation_id not in existing:
            ticket.conversations.append(
                TicketConversation(conversation_id=conversation_id, created_at=utcnow())
            )


def create_ticket(organization_id: uuid.UUID, draft: TicketDraft, actor: str | None = None) -> Ticket:
    """A new ticket in state ``new``, numbered per organization, its body sanitised, linked to the
    draft's conversations."""
    draft = check(draft)
    check_refs(
        organization_id,
        requester_id=draft.requester_id,
        account_id=draft.account_id,
        project_id=draft.project_id,
        ticket_type_id=draft.ticket_type_id,
    )
    check_members(organization_id, {"assignee_member_id": draft.assignee_member_id})
    check_conversations(organization_id, draft.conversation_ids)
    number, prefix = next_ticket_number(organization_id)
    now = utcnow()
    ticket = Ticket(
        organization_id=organization_id,
        number=number,
        reference=f"{prefix}-{number}",
        title=draft.title,
        state="new",
        priority=draft.priority,
        source=draft.source,
        body_html=sanitize_html(draft.body_html),
        requester_id=draft.requester_id,
        account_id=draft.account_id,
        project_id=draft.project_id,
        ticket_type_id=draft.ticket_type_id,
        channel=draft.channel,
        created_at=now,
        updated_at=now,
        conversations=[],
    )
    _set_assignee(ticket, draft.assignee_member_id, None)
    _set_conversations(ticket, draft.conversation_ids)
    db.session.add(ticket)
    db.session.flush()
    _record_state(ticket, None, actor)
    _event(ticket, "created")
    return get_ticket(organization_id, ticket.id)


def update_ticket(
    organization_id: uuid.UUID, ticket_id: uuid.UUID, changes: TicketChanges, actor: str | None = None
) -> Ticket:
    """Only the fields sent change (``drafts.UNSET``: not sent); a null clears where it may."""
    changes = check(changes)
    ticket = get_ticket(organization_id, ticket_id)
    check_refs(
        organization_id,
        requester_id=changes.requester_id if given(changes.requester_id) else None,
        account_id=changes.account_id if given(changes.account_id) else None,
        project_id=changes.project_id if given(changes.project_id) else None,
        ticket_type_id=changes.ticket_type_id if given(changes.ticket_type_id) else None,
    )
    if sent(changes.assignee_member_id):
        check_members(organization_id, {"assignee_member_id": changes.assignee_member_id})
    if given(changes.conversation_ids):
        check_conversations(organization_id, changes.conversation_ids)
    if given(changes.title):
        ticket.title = changes.title
    if given(changes.priority):
        ticket.priority = changes.priority
    if sent(changes.requester_id):
        ticket.requester_id = changes.requester_id
    if sent(changes.account_id):
        ticket.account_id = changes.account_id
    if sent(changes.project_id):
        ticket.project_id = changes.project_id
    if sent(changes.ticket_type_id):
        ticket.ticket_type_id = changes.ticket_type_id
    if sent(changes.channel):
        ticket.channel = changes.channel
    if sent(changes.body_html):
        ticket.body_html = sanitize_html(changes.body_html)
    if given(changes.conversation_ids):
        _set_conversations(ticket, changes.conversation_ids)
    if sent(changes.assignee_member_id) and changes.assignee_member_id != ticket.assignee_member_id:
        _set_assignee(ticket, changes.assignee_member_id, None)
    if given(changes.state):
        _set_state(ticket, changes.state, actor)
    ticket.updated_at = utcnow()
    _event(ticket, "updated")
    return get_ticket(organization_id, ticket.id)


# The rules of the verbs below, which take plain values.
_MEMBER_ID = Rule[str | None](MemberId | None)
_STATE = Rule[str](TicketState)


def assign_ticket(
    organization_id: uuid.UUID,
    ticket_id: uuid.UUID,
    member_id: str | None,
    assigned_by: str | None,
) -> Ticket:
    """Assign to a member (``None`` unassigns); both ids must name members of the organization."""
    member_id = _MEMBER_ID.check(member_id, "assignee_member_id")
    assigned_by = _MEMBER_ID.check(assigned_by, "assigned_by")
    ticket = get_ticket(organization_id, ticket_id)
    check_members(organization_id, {"assignee_member_id": member_id, "assigned_by": assigned_by})
    _set_assignee(ticket, member_id, assigned_by)
    ticket.updated_at = utcnow()
    _event(ticket, "assigned")
    return get_ticket(organization_id, ticket.id)


def change_state(
    organization_id: uuid.UUID, ticket_id: uuid.UUID, state: str, actor: str | None = None
) -> Ticket:
    """Any state may follow any other (the spec refuses none); the same state again changes nothing."""
    state = _STATE.check(state, "state")
    ticket = get_ticket(organization_id, ticket_id)
    if _set_state(ticket, state, actor):
        ticket.updated_at = utcnow()
        _event(ticket, "state")
    return get_ticket(organization_id, ticket.id)


def state_history(organization_id: uuid.UUID, ticket_id: uuid.UUID) -> list[TicketStateChange]:
    ticket = get_ticket(organization_id, ticket_id)
    return list(
        db.session.scalars(
            select(TicketStateChange)
            .where(TicketStateChange.ticket_id == ticket.id)
            .order_by(TicketStateChange.changed_at, TicketStateChange.id)
        )
    )


# The list's search (migration crm_0004: trigram indexes, core.textsearch).
TICKET_TEXT = text_index("crm_tickets", "title", "reference")


@dataclass(frozen=True)
class TicketFilters:
    """What a ticket list is narrowed by (every field optional). The API's query model is generated from
    these fields (``schemas.TicketListQuery``)."""

    limit: Limit = 100
    offset: Offset = 0
    state: TicketState | None = None
    priority: TicketPriority | None = None
    assignee_member_id: MemberId | None = None
    unassigned: bool | None = None
    requester_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    search: Search | None = None
    created_after: date | None = None
    created_before: date | None = None
    timezone: Timezone = None
    ticket_type_id: uuid.UUID | None = None


# The filters that name a column of the ticket with the value to equal.
_EQUAL_FILTERS = (
    "state",
    "priority",
    "assignee_member_id",
    "requester_id",
    "account_id",
    "project_id",
    "ticket_type_id",
)


def _conditions(organization_id: uuid.UUID, query: TicketFilters) -> list[Any]:
    """The WHERE of a ticket list under ``query`` (the list's and the board's, so both find the same)."""
    conditions: list[Any] = [Ticket.organization_id == organization_id]
    for name in _EQUAL_FILTERS:
        value = getattr(query, name)
        if value is not None:
            conditions.append(getattr(Ticket, name) == value)
    if query.unassigned is True:
        conditions.append(Ticket.assignee_member_id.is_(None))
    elif query.unassigned is False:
        conditions.append(Ticket.assignee_member_id.is_not(None))
    if query.search:
        conditions.append(contains(TICKET_TEXT, Ticket, query.search))
    start, end = local_range(query.created_after, query.created_before, query.timezone)
    if start is not None:
        conditions.append(Ticket.created_at >= start)
    if end is not None:
        conditions.append(Ticket.created_at < end)
    return conditions


def list_tickets(organization_id: uuid.UUID, query: TicketFilters) -> Page[Ticket]:
    query = check(query)
    conditions = _conditions(organization_id, query)
    statement = (
        select(Ticket)
        .where(*conditions)
        .order_by(Ticket.created_at.desc(), Ticket.number.desc())
        .options(*TICKET_LOAD)
    )
    return paginate(statement, offset=query.offset, limit=query.limit)


# ---------------------------------------------------------------------------------------- the board

# The board's columns, in the order of the states' rule.
BOARD_STATES: tuple[str, ...] = get_args(TicketState)
# An open column lists its tickets newest first (the list's order, ``ix_crm_tickets_list_state``); the
# closed column the latest closed first (``ix_crm_tickets_board_closed``, migration crm_0006), and only
# those closed since the board's window opened: years of closed tickets are history, not work.
_OPEN_ORDER = Keyset((Ticket.created_at, Ticket.number), descending=True)
_CLOSED_ORDER = Keyset((Ticket.closed_at, Ticket.number), descending=True)
# The closed column's index (crm_0006) is declared by its migration alone, like the lists' ordered indexes.
ORDERED_INDEXES.add("ix_crm_tickets_board_closed")


@dataclass(frozen=True)
class BoardCount:
    """A column's figures under the board's filters: ``total`` tickets in the state, ``shown`` of them
    in the column (the closed column: those closed within the window; any other: all of them)."""

    total: int = 0
    shown: int = 0


@dataclass(frozen=True)
class BoardCards:
    tickets: list[Ticket]
    next_cursor: str | None  # None: the column has no more cards


def _board_statement(
    organization_id: uuid.UUID, query: TicketFilters, state: str, closed_since: datetime
) -> tuple[Select[Any], Keyset]:
    conditions = [*_conditions(organization_id, replace(query, state=None)), Ticket.state == state]
    if state == "closed":
        conditions.append(Ticket.closed_at >= closed_since)
    keyset = _CLOSED_ORDER if state == "closed" else _OPEN_ORDER
    order = [column.desc() for column in keyset.columns]
    return select(Ticket).where(*conditions).order_by(*order), keyset


def board_counts(
    organization_id: uuid.UUID, query: TicketFilters, closed_since: datetime
) -> dict[str, BoardCount]:
    """Every column's figures in one grouped query (the board never counts the cards it loaded)."""
    query = check(query)
    conditions = _conditions(organization_id, replace(query, state=None))
    recent = func.count(case((Ticket.closed_at >= closed_since, 1)))
    rows = db.session.execute(
        select(Ticket.state, func.count(), recent).where(*conditions).group_by(Ticket.state)
    )
    counts = {state: BoardCount() for state in BOARD_STATES}
    for state, total, closed_recently in rows:
        counts[state] = BoardCount(total, closed_recently if state == "closed" else total)
    return counts


def board_columns(
    organization_id: uuid.UUID, query: TicketFilters, closed_since: datetime, limit: int
) -> dict[str, BoardCards]:
    """The first ``limit`` cards of every column in one statement: one index seek per column joined by
    UNION ALL, whatever the number of tickets."""
    query = check(query)
    branches = []
    for state in BOARD_STATES:
        statement, _keyset = _board_statement(organization_id, query, state, closed_since)
        # limit + 1: the extra row says whether the column has more (and is dropped)
        page = statement.with_only_columns(Ticket.id).limit(limit + 1).subquery()
        branches.append(select(page.c.id))
    wanted = union_all(*branches).subquery()
    tickets = list(db.session.scalars(select(Ticket).where(Ticket.id.in_(select(wanted.c.id)))))
    columns: dict[str, BoardCards] = {}
    for state in BOARD_STATES:
        keyset = _CLOSED_ORDER if state == "closed" else _OPEN_ORDER
        mine = sorted(
            (t for t in tickets if t.state == state),
            key=lambda t, k=keyset: tuple(as_utc(v) if isinstance(v, datetime) else v for v in k.position(t)),
            reverse=True,
        )
        columns[state] = _cards(mine, keyset, limit)
    return columns


def board_cards(
    organization_id: uuid.UUID,
    query: TicketFilters,
    state: str,
    closed_since: datetime,
    *,
    cursor: str | None,
    limit: int,
) -> BoardCards:
    """A column's next cards after ``cursor`` (its "load more"); a seek, so a deep page costs what the
    first one does, and cards moved meanwhile never make it repeat or skip one."""
    query = check(query)
    state = _STATE.check(state, "state")
    statement, keyset = _board_statement(organization_id, query, state, closed_since)
    if cursor:
        position = decode_cursor(cursor, f"board:{state}")
        # a cursor carries the number as text: PostgreSQL compares it to the integer column only as one
        try:
            moment, number = position
            position = [moment, int(number)]
        except (TypeError, ValueError):
            raise ApiError(400, "cursor: not a cursor this list returned", param="cursor") from None
        statement = statement.where(keyset.after(position))
    return _cards(list(db.session.scalars(statement.limit(limit + 1))), keyset, limit, state)


def _cards(tickets: list[Ticket], keyset: Keyset, limit: int, state: str | None = None) -> BoardCards:
    shown = tickets[:limit]
    if len(tickets) <= limit or not shown:
        return BoardCards(shown, None)
    sort = f"board:{state or shown[-1].state}"
    return BoardCards(shown, encode_cursor(sort, keyset.position(shown[-1])))


def created_since(
    organization_id: uuid.UUID, query: TicketFilters, since: datetime, excluding_actor: str | None
) -> int:
    """How many tickets under ``query`` were created after ``since`` by anyone but ``excluding_actor``
    (their creation in the state history names who made them): what a board opened at ``since`` has not
    shown yet."""
    query = check(query)
    made_by_them = (
        select(TicketStateChange.id)
        .where(
            TicketStateChange.ticket_id == Ticket.id,
            TicketStateChange.from_state.is_(None),
            TicketStateChange.changed_by == excluding_actor,
        )
        .exists()
    )
    conditions = [*_conditions(organization_id, replace(query, state=None)), Ticket.created_at > since]
    if excluding_actor is not None:
        conditions.append(~made_by_them)
    return int(db.session.scalar(select(func.count()).select_from(Ticket).where(*conditions)) or 0)


def ticket_on_board(
    organization_id: uuid.UUID, query: TicketFilters, ticket_id: uuid.UUID, closed_since: datetime
) -> Ticket | None:
    """The ticket when a board under ``query`` shows it (in its state's column), else None: what a live
    update asks of a card another person changed."""
    query = check(query)
    conditions = [*_conditions(organization_id, replace(query, state=None)), Ticket.id == ticket_id]
    conditions.append(or_(Ticket.state != "closed", Ticket.closed_at >= closed_since))
    return db.session.scalars(select(Ticket).where(*conditions)).one_or_none()


# -------------------------------------------------------------------------------- projects, ticket types

NAMED = {"projects": (CrmProject, "Project"), "ticket-types": (TicketType, "Ticket type")}


def list_named(organization_id: uuid.UUID, kind: str) -> list[Any]:
    model, _ = NAMED[kind]
    return list(
        db.session.scalars(
            select(model).where(model.organization_id == organization_id).order_by(model.name, model.id)
        )
    )


def create_named(organization_id: uuid.UUID, kind: str, draft: NamedDraft) -> Any:
    draft = check(draft)
    model, _ = NAMED[kind]
    item = model(organization_id=organization_id, name=draft.name, description=draft.description)
    db.session.add(item)
    db.session.flush()
    return item


def get_named(organization_id: uuid.UUID, kind: str, item_id: uuid.UUID) -> Any:
    model, resource = NAMED[kind]
    return get_ref(model, item_id, organization_id, resource)


def update_named(organization_id: uuid.UUID, kind: str, item_id: uuid.UUID, changes: NamedChanges) -> Any:
    changes = check(changes)
    item = get_named(organization_id, kind, item_id)
    if given(changes.name):
        item.name = changes.name
    if sent(changes.description):
        item.description = changes.description
    db.session.flush()
    return item


def delete_named(organization_id: uuid.UUID, kind: str, item_id: uuid.UUID) -> None:
    """Tickets that pointed at it keep existing with the field cleared (ON DELETE SET NULL); each is
    announced as updated, so an open board shows it without the name."""
    item = get_named(organization_id, kind, item_id)
    column = Ticket.project_id if kind == "projects" else Ticket.ticket_type_id
    cleared = list(
        db.session.scalars(select(Ticket).where(Ticket.organization_id == organization_id, column == item.id))
    )
    for ticket in cleared:
        setattr(ticket, column.key, None)
        ticket.updated_at = utcnow()
        _event(ticket, "updated")
    db.session.delete(item)
    target_type = kind.removesuffix("s").replace("-", "_")  # projects: project, ticket-types: ticket_type
    audit_log.record(f"{target_type}.deleted", target_type, item.id, organization_id=organization_id)
