"""Cross-area wiring: the one place that says which area provides what to which.

Areas do not import each other's internals to answer questions about data they do not own; they expose a
hook, and this package plugs the owner in:

- CRM <- messaging: conversation transcripts (deal links capture a summary), and contact merges (the
  messaging contacts that pointed at the merged-away CRM contact move to the surviving one);
- inbox <- CRM: which deals and tickets link a conversation (a linked conversation is not deleted);
- members <- channels: the channels an organization has connected (an AI agent's ``connections``).
"""

from __future__ import annotations

import uuid

from flask import Flask
from sqlalchemy import func, select, update

from core.db import db


def _transcript(organization_id: uuid.UUID, conversation_id: str) -> list[tuple[str, str, object]] | None:
    from blueprints.messaging.services import conversation_transcript

    return conversation_transcript(organization_id, conversation_id)  # type: ignore[return-value]


def _merge_contacts(organization_id: uuid.UUID, source: uuid.UUID, target: uuid.UUID) -> int:
    from blueprints.messaging.models import Contact, Conversation

    contact_ids = list(
        db.session.scalars(
            select(Contact.id).where(
                Contact.organization_id == organization_id, Contact.crm_contact_id == str(source)
            )
        )
    )
    if not contact_ids:
        return 0
    db.session.execute(update(Contact).where(Contact.id.in_(contact_ids)).values(crm_contact_id=str(target)))
    return int(
        db.session.scalar(
            select(func.count()).select_from(Conversation).where(Conversation.contact_id.in_(contact_ids))
        )
        or 0
    )


def _crm_links(organization_id: uuid.UUID, conversation_id: str) -> list[str]:
    from blueprints.crm.models import Deal, DealConversation, Ticket, TicketConversation

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
        found.append(f"{deals} deal{'s' if deals != 1 else ''}")
    if tickets:
        found.append(f"{tickets} ticket{'s' if tickets != 1 else ''}")
    return found


def _connected_channels(organization_id: uuid.UUID) -> list[str]:
    from blueprints.channels.models import SENDABLE_STATUSES, OrganizationAddress

    return list(
        db.session.scalars(
            select(OrganizationAddress.service)
            .where(
                OrganizationAddress.organization_id == organization_id,
                OrganizationAddress.status.in_(SENDABLE_STATUSES),
            )
            .distinct()
        )
    )


def init_app(app: Flask) -> None:
    from blueprints.crm.hooks import register_contact_merge_hook, register_conversation_reader
    from blueprints.inbox.services.conversations import register_reference_checker
    from blueprints.members.services.hooks import register_connections_provider

    register_conversation_reader(_transcript)
    register_contact_merge_hook(_merge_contacts)
    register_reference_checker(_crm_links)
    register_connections_provider(_connected_channels)
