"""Reads other areas ask the CRM for (through ``blueprints/integrations/``), so that no other area runs
SQL on CRM tables."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from blueprints.crm.models import (
    ContactIdentity,
    CrmContact,
    Deal,
    DealConversation,
    Ticket,
    TicketConversation,
)
from core.db import db
from core.tenancy import missing_ids


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def conversation_link_phrases(organization_id: uuid.UUID, conversation_id: str) -> list[str]:
    """What links a conversation in the CRM, for a message such as "linked to 2 deals, 1 ticket":
    live deals and tickets, each phrase only when there is at least one."""
    deals = db.session.scalar(
        select(func.count())
        .select_from(DealConversation)
        .join(Deal, Deal.id == DealConversation.deal_id)
        .where(
            DealConversation.organization_id == organization_id,
            DealConversation.conversation_id == conversation_id,
            Deal.deleted_at.is_(None),
        )
    )
    tickets = db.session.scalar(
        select(func.count())
        .select_from(TicketConversation)
        .join(Ticket, Ticket.id == TicketConversation.ticket_id)
        .where(
            Ticket.organization_id == organization_id, TicketConversation.conversation_id == conversation_id
        )
    )
    found = []
    if deals:
        found.append(_counted(deals, "deal"))
    if tickets:
        found.append(_counted(tickets, "ticket"))
    return found


def contact_id_for_phone(organization_id: uuid.UUID, e164: str) -> str | None:
    """The CRM contact that has this phone identity (E.164), as text; None when no contact has it."""
    return contact_ids_for_phones(organization_id, [e164]).get(e164)


def contact_ids_for_phones(organization_id: uuid.UUID, phones: list[str]) -> dict[str, str]:
    """The CRM contact that has each phone identity (E.164), as text, in one query; phones no contact
    has are left out. The caller bounds the list."""
    if not phones:
        return {}
    rows = db.session.execute(
        select(ContactIdentity.value, ContactIdentity.contact_id).where(
            ContactIdentity.organization_id == organization_id,
            ContactIdentity.kind == "phone",
            ContactIdentity.value.in_(phones),
        )
    )
    return {value: str(contact_id) for value, contact_id in rows}


def existing_contact_ids(organization_id: uuid.UUID, contact_ids: list[str]) -> set[str]:
    """Which of ``contact_ids`` name CRM contacts of the organization (one query)."""
    missing = set(missing_ids(CrmContact, contact_ids, organization_id))
    return {contact_id for contact_id in contact_ids if contact_id not in missing}
