"""What the CRM knows around one conversation: the records the desk's side panel lists next to a thread.

A conversation reaches the CRM two ways: its messaging contact points at a CRM contact (``crm_contact_id``,
set by the messaging area from the contact's phone identity), and deals or tickets link the conversation
itself (``crm_deal_conversations``, ``crm_ticket_conversations``). Each list is one query whatever the
number of rows: the rows shown (newest first, capped) and, through ``COUNT(*) OVER ()``, how many matched.

The desk's contact and account pages read here too (``contact_history``, ``account_records``), and the
names of records a link filter names (``record_names``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import joinedload

from blueprints.crm.models import (
    CrmAccount,
    CrmContact,
    CrmTask,
    Deal,
    DealActivity,
    DealContact,
    DealConversation,
    Ticket,
    TicketConversation,
)
from core.db import db
from core.tenancy import find_for_org

T = TypeVar("T")
SHOWN = 5  # rows per list in the panel; the rest is "n more"


@dataclass(frozen=True)
class Shown(Generic[T]):
    """The first rows of a list and how many rows the whole list has."""

    items: list[T] = field(default_factory=list)
    total: int = 0
    linked: frozenset[uuid.UUID] = frozenset()  # ids of rows that link the conversation itself

    @property
    def more(self) -> int:
        return max(self.total - len(self.items), 0)


@dataclass(frozen=True)
class ConversationRecords:
    contact: CrmContact | None
    deals: Shown[Deal]
    tickets: Shown[Ticket]
    tasks: Shown[CrmTask]

    @property
    def empty(self) -> bool:
        return not (self.deals.total or self.tickets.total or self.tasks.total)


def _shown(rows: list[Any]) -> tuple[list[Any], int, frozenset[uuid.UUID]]:
    """Rows of ``select(Model, linked, COUNT(*) OVER ())`` -> (models, total, ids linked)."""
    items = [row[0] for row in rows]
    total = int(rows[0][2]) if rows else 0
    return items, total, frozenset(row[0].id for row in rows if row[1])


def _deals(
    organization_id: uuid.UUID, conversation_id: str, contact_id: uuid.UUID | None, limit: int
) -> Shown[Deal]:
    """Deals linked to the conversation (any status: the link was made on purpose) and the contact's open
    deals."""
    linked = Deal.id.in_(
        select(DealConversation.deal_id).where(
            DealConversation.organization_id == organization_id,
            DealConversation.conversation_id == conversation_id,
        )
    )
    wanted = [linked]
    if contact_id is not None:
        of_contact = Deal.id.in_(select(DealContact.deal_id).where(DealContact.contact_id == contact_id))
        wanted.append(and_(Deal.status == "open", of_contact))
    rows = db.session.execute(
        select(Deal, linked, func.count().over())
        .where(Deal.organization_id == organization_id, Deal.deleted_at.is_(None), or_(*wanted))
        .order_by(Deal.created_at.desc(), Deal.id.desc())
        .limit(limit)
        .options(joinedload(Deal.stage))
    ).all()
    items, total, ids = _shown(list(rows))
    return Shown(items, total, ids)


def _tickets(
    organization_id: uuid.UUID, conversation_id: str, contact_id: uuid.UUID | None, limit: int
) -> Shown[Ticket]:
    """Tickets linked to the conversation or requested by the contact; open ones first, then newest."""
    linked = Ticket.id.in_(
        select(TicketConversation.ticket_id).where(TicketConversation.conversation_id == conversation_id)
    )
    wanted = [linked]
    if contact_id is not None:
        wanted.append(Ticket.requester_id == contact_id)
    rows = db.session.execute(
        select(Ticket, linked, func.count().over())
        .where(Ticket.organization_id == organization_id, or_(*wanted))
        .order_by(
            case((Ticket.state == "closed", 1), else_=0),
            Ticket.created_at.desc(),
            Ticket.number.desc(),
        )
        .limit(limit)
    ).all()
    items, total, ids = _shown(list(rows))
    return Shown(items, total, ids)


def _tasks(
    organization_id: uuid.UUID, conversation_id: str, contact_id: uuid.UUID | None, limit: int
) -> Shown[CrmTask]:
    """Open tasks (not completed, not deleted) of the contact or of a deal or ticket that links the
    conversation; soonest due first, undated last."""
    wanted = [
        CrmTask.deal_id.in_(
            select(DealConversation.deal_id).where(
                DealConversation.organization_id == organization_id,
                DealConversation.conversation_id == conversation_id,
            )
        ),
        CrmTask.ticket_id.in_(
            select(TicketConversation.ticket_id).where(TicketConversation.conversation_id == conversation_id)
        ),
    ]
    if contact_id is not None:
        wanted.append(CrmTask.contact_id == contact_id)
    rows = db.session.execute(
        select(CrmTask, func.count().over())
        .where(
            CrmTask.organization_id == organization_id,
            CrmTask.deleted_at.is_(None),
            CrmTask.status != "completed",
            or_(*wanted),
        )
        .order_by(CrmTask.due_date.asc().nulls_last(), CrmTask.created_at.desc(), CrmTask.id.desc())
        .limit(limit)
    ).all()
    return Shown([row[0] for row in rows], int(rows[0][1]) if rows else 0)


def crm_contact(organization_id: uuid.UUID, crm_contact_id: str | None) -> CrmContact | None:
    """The organization's CRM contact with this id (as a messaging contact stores it), or None."""
    return find_for_org(CrmContact, crm_contact_id, organization_id)


def conversation_records(
    organization_id: uuid.UUID, conversation_id: str, crm_contact_id: str | None, limit: int = SHOWN
) -> ConversationRecords:
    """The CRM contact a conversation's person is (None when unlinked, or when the id names no contact of
    the organization) with their deals, tickets and open tasks, plus the records that link the
    conversation. Four queries whatever the number of records."""
    contact = crm_contact(organization_id, crm_contact_id)
    contact_id = contact.id if contact is not None else None
    conversation_id = str(conversation_id)
    return ConversationRecords(
        contact=contact,
        deals=_deals(organization_id, conversation_id, contact_id, limit),
        tickets=_tickets(organization_id, conversation_id, contact_id, limit),
        tasks=_tasks(organization_id, conversation_id, contact_id, limit),
    )


# ---- names of linked records (the desk's chips: "Contact: Rosa Pérez") ----------------------------------


def record_names(organization_id: uuid.UUID, ids: dict[str, str]) -> dict[str, str]:
    """``{link field: what the record is called}`` for the given ``deal_id``, ``ticket_id``, ``contact_id``
    and ``account_id`` of the organization (a deal and a ticket by reference and name); an id that is no
    UUID or names nothing of the organization is left out. One query per id given."""
    found: dict[str, str] = {}
    for name, value in ids.items():
        try:
            record_id = uuid.UUID(str(value))
        except ValueError:
            continue
        if name == "deal_id":
            row = db.session.execute(
                select(Deal.reference, Deal.name).where(
                    Deal.id == record_id, Deal.organization_id == organization_id, Deal.deleted_at.is_(None)
                )
            ).first()
            text = f"{row[0]} · {row[1]}" if row else None
        elif name == "ticket_id":
            row = db.session.execute(
                select(Ticket.reference, Ticket.title).where(
                    Ticket.id == record_id, Ticket.organization_id == organization_id
                )
            ).first()
            text = f"{row[0]} · {row[1]}" if row else None
        elif name == "contact_id":
            text = db.session.scalar(
                select(CrmContact.name).where(
                    CrmContact.id == record_id, CrmContact.organization_id == organization_id
                )
            )
        elif name == "account_id":
            text = db.session.scalar(
                select(CrmAccount.name).where(
                    CrmAccount.id == record_id, CrmAccount.organization_id == organization_id
                )
            )
        else:
            continue
        if text:
            found[name] = text
    return found


# ---- a contact's and an account's records (the desk's contact and account pages) -------------------------

HISTORY_LIMIT = 100  # records of each kind on a contact's page, newest first


@dataclass(frozen=True)
class ContactHistory:
    """What the CRM holds for one contact, newest first, each list one query whatever its length: deals
    the contact is on (any status; their stage loaded), tickets they requested, their tasks (deleted ones
    left out) and the notes written on their deals. ``totals`` counts each kind in full."""

    deals: list[Deal]
    tickets: list[Ticket]
    tasks: list[CrmTask]
    notes: list[DealActivity]
    totals: dict[str, int]


def _rows_and_total(statement: Any) -> tuple[list[Any], int]:
    rows = db.session.execute(statement).all()
    return [row[0] for row in rows], int(rows[0][1]) if rows else 0


def contact_history(
    organization_id: uuid.UUID, contact_id: uuid.UUID, limit: int = HISTORY_LIMIT
) -> ContactHistory:
    of_contact = select(DealContact.deal_id).where(DealContact.contact_id == contact_id)
    deals, deal_total = _rows_and_total(
        select(Deal, func.count().over())
        .where(Deal.organization_id == organization_id, Deal.deleted_at.is_(None), Deal.id.in_(of_contact))
        .order_by(Deal.created_at.desc(), Deal.id.desc())
        .limit(limit)
        .options(joinedload(Deal.stage))
    )
    tickets, ticket_total = _rows_and_total(
        select(Ticket, func.count().over())
        .where(Ticket.organization_id == organization_id, Ticket.requester_id == contact_id)
        .order_by(Ticket.created_at.desc(), Ticket.number.desc())
        .limit(limit)
    )
    tasks, task_total = _rows_and_total(
        select(CrmTask, func.count().over())
        .where(
            CrmTask.organization_id == organization_id,
            CrmTask.deleted_at.is_(None),
            CrmTask.contact_id == contact_id,
        )
        .order_by(CrmTask.created_at.desc(), CrmTask.id.desc())
        .limit(limit)
    )
    notes, note_total = _rows_and_total(
        select(DealActivity, func.count().over())
        .join(Deal, Deal.id == DealActivity.deal_id)
        .where(
            DealActivity.organization_id == organization_id,
            DealActivity.type == "note",
            Deal.deleted_at.is_(None),
            DealActivity.deal_id.in_(of_contact),
        )
        .order_by(DealActivity.created_at.desc(), DealActivity.id.desc())
        .limit(limit)
    )
    totals = {"deals": deal_total, "tickets": ticket_total, "tasks": task_total, "notes": note_total}
    return ContactHistory(deals, tickets, tasks, notes, totals)


@dataclass(frozen=True)
class AccountRecords:
    """An account's deals and tickets, newest first (one query each), with their totals."""

    deals: Shown[Deal]
    tickets: Shown[Ticket]


def account_records(
    organization_id: uuid.UUID, account_id: uuid.UUID, limit: int = HISTORY_LIMIT
) -> AccountRecords:
    deals, deal_total = _rows_and_total(
        select(Deal, func.count().over())
        .where(
            Deal.organization_id == organization_id, Deal.deleted_at.is_(None), Deal.account_id == account_id
        )
        .order_by(Deal.created_at.desc(), Deal.id.desc())
        .limit(limit)
        .options(joinedload(Deal.stage))
    )
    tickets, ticket_total = _rows_and_total(
        select(Ticket, func.count().over())
        .where(Ticket.organization_id == organization_id, Ticket.account_id == account_id)
        .order_by(
            case((Ticket.state == "closed", 1), else_=0), Ticket.created_at.desc(), Ticket.number.desc()
        )
        .limit(limit)
    )
    return AccountRecords(Shown(deals, deal_total), Shown(tickets, ticket_total))
