"""The messaging rules, as the views and other areas call them.

Reading messages and conversations, the service window and the transcript live here; sending (with
``Idempotency-Key``) in :mod:`.sending`, contacts in :mod:`.contacts`, webhook storage in :mod:`.ingest`,
finding or creating contacts and conversations in :mod:`.threads`. This module re-exports them, so
callers need only ``blueprints.messaging.services``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from blueprints.channels.services import get_address
from blueprints.messaging.contacts import (
    create_contact,
    delete_contact,
    get_contact,
    link_crm_contact,
    list_contacts,
    update_contact,
)
from blueprints.messaging.ingest import IngestResult, ingest_events
from blueprints.messaging.models import (
    Conversation,
    Message,
)
from blueprints.messaging.schemas import (
    MessageListQuery,
)
from blueprints.messaging.sending import (  # re-exported: one import point for other modules
    ADDRESS_NOT_FOUND,
    NO_TOKEN,
    PARAMETER_NAME_MISSING,
    SEND_FAILED,
    SERVICE_WINDOW,
    TEMPLATE_LOOKUP_FAILED,
    Outcome,
    run_idempotent,
    send_message,
    send_template,
    sendable_address,
)
from blueprints.messaging.serialize import serialize_conversation, serialize_message
from blueprints.messaging.threads import (
    contact_address_for,
    crm_contact_for_phone,
    parse_uuid,
)
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.pagination import paginate
from core.timeutil import parse_iso_datetime

__all__ = [
    "ADDRESS_NOT_FOUND",
    "NO_TOKEN",
    "PARAMETER_NAME_MISSING",
    "SEND_FAILED",
    "SERVICE_WINDOW",
    "TEMPLATE_LOOKUP_FAILED",
    "IngestResult",
    "Outcome",
    "contact_address_for",
    "conversation_belongs",
    "conversation_transcript",
    "create_contact",
    "crm_contact_for_phone",
    "delete_contact",
    "get_contact",
    "get_conversation",
    "get_message",
    "ingest_events",
    "link_crm_contact",
    "list_contacts",
    "list_messages",
    "run_idempotent",
    "send_message",
    "send_template",
    "sendable_address",
    "service_window",
    "update_contact",
]


# ---------------------------------------------------------------------------------------------------
# Service window and reading


def service_window(organization_id: uuid.UUID, contact: str, organization_address: str) -> dict[str, Any]:
    """``open`` while the contact's last incoming message (by the provider's timestamp) is < 24 h old."""
    address = get_address(organization_id, organization_address)
    if address is None:
        raise ApiError(404, ADDRESS_NOT_FOUND, param="organization_address")
    contact_address = contact_address_for(address.service, contact, "address")
    last = db.session.scalar(
        select(func.max(Conversation.last_incoming_at)).where(
            Conversation.organization_id == organization_id,
            Conversation.organization_address == address.address,
            Conversation.service == address.service,
            Conversation.contact_address == contact_address,
        )
    )
    now = utcnow()
    if last is not None and now - last < SERVICE_WINDOW:
        return {"status": "open", "expires_at": isoformat(last + SERVICE_WINDOW)}
    return {"status": "closed", "expires_at": None}


def get_message(organization_id: uuid.UUID, message_id: str) -> dict[str, Any]:
    identifier = parse_uuid(message_id)
    message = (
        db.session.scalar(
            select(Message).where(Message.id == identifier, Message.organization_id == organization_id)
        )
        if identifier
        else None
    )
    if message is None:
        raise ApiError(404, "Message not found")
    return serialize_message(message)


def list_messages(organization_id: uuid.UUID, query: MessageListQuery) -> dict[str, Any]:
    """The latest ``take`` messages (after skipping the ``skip`` latest), oldest first for display."""
    statement = select(Message).where(Message.organization_id == organization_id)
    if query.conversation_id:
        statement = statement.where(Message.conversation_id == query.conversation_id)
    if query.direction:
        statement = statement.where(Message.direction == query.direction)
    if query.start_date:
        statement = statement.where(Message.timestamp >= parse_iso_datetime(query.start_date))
    if query.end_date:
        end = parse_iso_datetime(query.end_date)
        if len(query.end_date.strip()) == 10:  # a bare date includes its whole (UTC) day
            statement = statement.where(Message.timestamp < end + timedelta(days=1))
        else:
            statement = statement.where(Message.timestamp <= end)
    statement = statement.order_by(Message.timestamp.desc(), Message.created_at.desc(), Message.id.desc())
    page = paginate(statement, offset=query.skip, limit=query.take)
    return {
        "data": [serialize_message(m) for m in reversed(page.items)],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


def get_conversation(organization_id: uuid.UUID, conversation_id: str) -> dict[str, Any]:
    conversation = _conversation(organization_id, conversation_id)
    if conversation is None:
        raise ApiError(404, "Conversation not found")
    return serialize_conversation(conversation, conversation.contact)


def _conversation(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> Conversation | None:
    identifier = parse_uuid(conversation_id)
    if identifier is None:
        return None
    return db.session.scalar(
        select(Conversation)
        .options(selectinload(Conversation.contact))
        .where(Conversation.id == identifier, Conversation.organization_id == organization_id)
    )


def conversation_belongs(organization_id: str, conversation_id: str) -> bool:
    """Socket.IO room check: may a client of ``organization_id`` follow this conversation?"""
    organization = parse_uuid(organization_id)
    identifier = parse_uuid(conversation_id)
    if organization is None or identifier is None:
        return False
    return bool(
        db.session.scalar(
            select(Conversation.id).where(
                Conversation.id == identifier, Conversation.organization_id == organization
            )
        )
    )


def conversation_transcript(
    organization_id: uuid.UUID | str, conversation_id: uuid.UUID | str
) -> list[tuple[str, str, datetime]] | None:
    """(direction, text, timestamp) of every message, oldest first; None when the conversation is not
    the organization's. Media appear as ``[image] caption``; templates as their rendered body."""
    organization = parse_uuid(organization_id)
    if organization is None or _conversation(organization, conversation_id) is None:
        return None
    rows = db.session.scalars(
        select(Message)
        .where(
            Message.organization_id == organization, Message.conversation_id == parse_uuid(conversation_id)
        )
        .order_by(Message.timestamp, Message.created_at)
    )
    transcript = []
    for message in rows:
        transcript.append((message.direction, _text_of(message), message.timestamp))
    return transcript


def _text_of(message: Message) -> str:
    if message.template:
        return str(message.template.get("text") or f"[template {message.template_name}]")
    content = message.content or {}
    kind = content.get("kind", "text")
    if kind == "text":
        return str(content.get("text") or "")
    if kind == "location":
        location = content.get("location") or {}
        where = f"{location.get('latitude')},{location.get('longitude')}"
        return f"[location] {location.get('name') or ''} {where}".replace("  ", " ")
    caption = content.get("text")
    return f"[{kind}] {caption}" if caption else f"[{kind}]"
