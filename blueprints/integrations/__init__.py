"""Cross-area wiring: the one place that says which area provides what to which.

Areas do not import each other's internals to answer questions about data they do not own; they expose a
hook, and this package plugs the owner in:

- CRM <- messaging: conversation transcripts (deal links capture a summary), and contact merges (the
  messaging contacts that pointed at the merged-away CRM contact move to the surviving one);
- inbox <- CRM: which deals and tickets link a conversation (a linked conversation is not deleted);
- members <- channels: the channels an organization has connected (an AI agent's ``connections``);
- messaging <- CRM: a new WhatsApp contact is linked to the CRM contact with that phone identity, and a
  phone identity added to (or removed from) a CRM contact links (or unlinks) the messaging contacts.
"""

from __future__ import annotations

import uuid

from flask import Flask
from sqlalchemy import func, select, update

from core.db import db
from core.events import DomainEvent, subscribe
from core.jobs import job


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


def _crm_contact_for_phone(organization_id: uuid.UUID, e164: str) -> str | None:
    from blueprints.crm.models import ContactIdentity

    contact_id = db.session.scalar(
        select(ContactIdentity.contact_id).where(
            ContactIdentity.organization_id == organization_id,
            ContactIdentity.kind == "phone",
            ContactIdentity.value == e164,
        )
    )
    return str(contact_id) if contact_id else None


@job(retries=2, retry_delay=5)
def link_messaging_contacts(
    organization_id: str, phone: str, crm_contact_id: str | None, previous: str | None
) -> int:
    """A CRM phone identity appeared (or went away): (un)link the messaging contacts with that number."""
    from blueprints.messaging.contacts import link_crm_contact
    from blueprints.messaging.models import Contact

    organization = uuid.UUID(organization_id)
    if crm_contact_id is None and previous is not None:
        # only unlink contacts that still point at the contact that lost the number
        still_linked = db.session.scalar(
            select(func.count())
            .select_from(Contact)
            .where(Contact.organization_id == organization, Contact.crm_contact_id == previous)
        )
        if not still_linked:
            return 0
    return link_crm_contact(organization, phone, crm_contact_id)


def _on_identity(event: DomainEvent) -> None:
    if event.data.get("kind") != "phone":
        return
    added = event.name == "crm.contact_identity_added"
    link_messaging_contacts.enqueue(
        event.organization_id,
        event.data["value"],
        event.data["contact_id"] if added else None,
        None if added else event.data["contact_id"],
    )


def init_app(app: Flask) -> None:
    from blueprints.crm.hooks import register_contact_merge_hook, register_conversation_reader
    from blueprints.inbox.services.conversations import register_reference_checker
    from blueprints.members.services.hooks import register_connections_provider
    from blueprints.messaging.threads import set_crm_contact_resolver

    register_conversation_reader(_transcript)
    register_contact_merge_hook(_merge_contacts)
    register_reference_checker(_crm_links)
    register_connections_provider(_connected_channels)
    set_crm_contact_resolver(_crm_contact_for_phone)
    subscribe("crm.contact_identity_added", _on_identity)
    subscribe("crm.contact_identity_removed", _on_identity)
