"""The messaging rules, as the views and other areas call them.

Reading messages and conversations, the service window and the transcript live here; sending (with
``Idempotency-Key``) in :mod:`.sending`, contacts in :mod:`.contacts`, webhook storage in :mod:`.ingest`,
finding or creating contacts and conversations in :mod:`.threads`. This module re-exports them, so
callers need only ``blueprints.messaging.services``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from blueprints.channels.crypto import TokenDecryptionError
from blueprints.channels.providers import ProviderError, Template
from blueprints.channels.registry import provider_for
from blueprints.channels.services import get_address
from blueprints.messaging.canned import (
    create_canned_response,
    delete_canned_response,
    fill_variables,
    get_canned_response,
    list_canned_responses,
    suggest_canned_responses,
    update_canned_response,
)
from blueprints.messaging.contacts import (
    create_contact,
    delete_contact,
    get_contact,
    link_crm_contact,
    list_contacts,
    move_crm_links,
    update_contact,
)
from blueprints.messaging.ingest import ingest_events
from blueprints.messaging.models import (
    Conversation,
    Message,
)
from blueprints.messaging.reactions import visible as visible_reactions
from blueprints.messaging.sending import (  # re-exported: one import point for other modules
    ADDRESS_NOT_FOUND,
    NO_TOKEN,
    PARAMETER_NAME_MISSING,
    SEND_FAILED,
    SERVICE_WINDOW,
    TEMPLATE_LOOKUP_FAILED,
    send_message,
    send_template,
    sendable_address,
)
from blueprints.messaging.template_list import TEMPLATE_LIST_FAILED, approved_templates, has_templates
from blueprints.messaging.threads import (
    contact_address_for,
    crm_contacts_for_phones,
    parse_uuid,
)
from core.db import db, utcnow
from core.errors import ApiError
from core.pagination import TOTAL_COUNT_CAP, CursorPage, Keyset, keyset_paginate, paginate
from core.tenancy import find_for_org

__all__ = [
    "ADDRESS_NOT_FOUND",
    "NO_TOKEN",
    "PARAMETER_NAME_MISSING",
    "SEND_FAILED",
    "SERVICE_WINDOW",
    "TEMPLATE_LIST_FAILED",
    "TEMPLATE_LOOKUP_FAILED",
    "Window",
    "approved_templates",
    "contact_address_for",
    "conversation_belongs",
    "conversation_transcript",
    "create_canned_response",
    "create_contact",
    "crm_contacts_for_phones",
    "delete_canned_response",
    "delete_contact",
    "existing_conversation_ids",
    "fill_variables",
    "get_canned_response",
    "get_contact",
    "get_conversation",
    "get_message",
    "has_templates",
    "ingest_events",
    "link_crm_contact",
    "list_canned_responses",
    "list_contacts",
    "list_messages",
    "messages_by_external_ids",
    "move_crm_links",
    "recent_templates",
    "send_message",
    "send_template",
    "sendable_address",
    "service_window",
    "suggest_canned_responses",
    "template_for",
    "unanswered_counts",
    "update_canned_response",
    "update_contact",
    "visible_reactions",
]


# ---------------------------------------------------------------------------------------------------
# Service window and reading


@dataclass(frozen=True)
class Window:
    status: str  # "open" or "closed"
    expires_at: datetime | None = None


def service_window(organization_id: uuid.UUID, contact: str, organization_address: str) -> Window:
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
    if last is not None and utcnow() - last < SERVICE_WINDOW:
        return Window("open", last + SERVICE_WINDOW)
    return Window("closed")


def get_message(organization_id: uuid.UUID, message_id: str) -> Message:
    message = find_for_org(Message, message_id, organization_id)
    if message is None:
        raise ApiError(404, "Message not found")
    return message


def list_messages(
    organization_id: uuid.UUID,
    *,
    conversation_id: uuid.UUID | None = None,
    direction: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    before: datetime | None = None,
    skip: int = 0,
    take: int = 20,
    cursor: str | None = None,
) -> CursorPage[Message]:
    """The latest ``take`` messages (after skipping the ``skip`` latest), oldest first for display;
    ``since`` and ``until`` are inclusive, ``before`` is not. With ``cursor`` ("" for the first page, then
    the previous page's ``next_cursor``) the page is a keyset seek to older messages instead of a skip."""
    statement = select(Message).where(Message.organization_id == organization_id)
    if conversation_id:
        statement = statement.where(Message.conversation_id == conversation_id)
    if direction:
        statement = statement.where(Message.direction == direction)
    if since is not None:
        statement = statement.where(Message.timestamp >= since)
    if until is not None:
        statement = statement.where(Message.timestamp <= until)
    if before is not None:
        statement = statement.where(Message.timestamp < before)
    statement = statement.order_by(Message.timestamp.desc(), Message.created_at.desc(), Message.id.desc())
    if cursor is not None:
        keyset = Keyset((Message.timestamp, Message.created_at, Message.id), descending=True)
        found = keyset_paginate(
            statement,
            keyset,
            cursor=cursor,
            limit=take,
            sort="timestamp:desc",
            offset=skip,
            count_cap=TOTAL_COUNT_CAP,
        )
        return CursorPage(list(reversed(found.items)), found.total, found.next_cursor, found.total_is_exact)
    page = paginate(statement, offset=skip, limit=take, count_cap=TOTAL_COUNT_CAP)
    return CursorPage(list(reversed(page.items)), page.total, None, page.total_is_exact)


def get_conversation(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> Conversation:
    conversation = find_for_org(
        Conversation, conversation_id, organization_id, options=[selectinload(Conversation.contact)]
    )
    if conversation is None:
        raise ApiError(404, "Conversation not found")
    return conversation


def existing_conversation_ids(organization_id: uuid.UUID, ids: list[str]) -> set[str]:
    """Which of ``ids`` name a conversation of the organization (one query; malformed ids name none)."""
    parsed = {parse_uuid(i): i for i in ids}
    parsed.pop(None, None)
    if not parsed:
        return set()
    found = db.session.scalars(
        select(Conversation.id).where(
            Conversation.organization_id == organization_id, Conversation.id.in_(list(parsed))
        )
    )
    return {parsed[identifier] for identifier in found}


def conversation_belongs(organization_id: str, conversation_id: str) -> bool:
    """Socket.IO room check: may a client of ``organization_id`` follow this conversation?"""
    organization = parse_uuid(organization_id)
    return organization is not None and find_for_org(Conversation, conversation_id, organization) is not None


def conversation_transcript(
    organization_id: uuid.UUID | str, conversation_id: uuid.UUID | str
) -> list[tuple[str, str, datetime]] | None:
    """(direction, text, timestamp) of every message, oldest first; None when the conversation is not
    the organization's. Media appear as ``[image] caption``; templates as their rendered body."""
    organization = parse_uuid(organization_id)
    if organization is None or find_for_org(Conversation, conversation_id, organization) is None:
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


# ---------------------------------------------------------------------------------------------------
# Reads for the desk's pages


def messages_by_external_ids(organization_id: uuid.UUID, external_ids: list[str]) -> dict[str, Message]:
    """The organization's messages with these provider ids (the originals replies quote), in one query."""
    wanted = {i for i in external_ids if i}
    if not wanted:
        return {}
    rows = db.session.scalars(
        select(Message).where(Message.organization_id == organization_id, Message.external_id.in_(wanted))
    )
    return {str(message.external_id): message for message in rows}


def unanswered_counts(organization_id: uuid.UUID, conversation_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Per conversation, the incoming messages newer than the last outgoing one (what nobody answered
    yet: the desk's unread badge), in one query whatever the number of conversations."""
    if not conversation_ids:
        return {}
    # The last reply of each conversation first (one index seek each on
    # ix_messages_conversation_direction_timestamp), then the incoming messages after it (a range of the
    # same index): the cost follows the rows shown, not the length of the conversations.
    last_reply = (
        select(Message.conversation_id, func.max(Message.timestamp).label("at"))
        .where(Message.conversation_id.in_(conversation_ids), Message.direction == "outgoing")
        .group_by(Message.conversation_id)
        .subquery()
    )
    rows = db.session.execute(
        select(Message.conversation_id, func.count())
        .outerjoin(last_reply, last_reply.c.conversation_id == Message.conversation_id)
        .where(
            Message.organization_id == organization_id,
            Message.conversation_id.in_(conversation_ids),
            Message.direction == "incoming",
            (last_reply.c.at.is_(None)) | (Message.timestamp > last_reply.c.at),
        )
        .group_by(Message.conversation_id)
    )
    return {conversation_id: int(count) for conversation_id, count in rows}


def recent_templates(
    organization_id: uuid.UUID, organization_address: str, limit: int = 200
) -> list[dict[str, str]]:
    """Templates this address sent lately (``{id, name, language}``, newest first, each once): what the
    desk's template picker falls back to when the provider cannot list the approved ones
    (:func:`approved_templates`)."""
    rows = db.session.scalars(
        select(Message.template)
        .where(
            Message.organization_id == organization_id,
            Message.organization_address == organization_address,
            Message.template_name.is_not(None),
        )
        .order_by(Message.timestamp.desc())
        .limit(limit)
    )
    seen: dict[str, dict[str, str]] = {}
    for template in rows:
        if template and template.get("id") and str(template["id"]) not in seen:
            seen[str(template["id"])] = {
                "id": str(template["id"]),
                "name": str(template.get("name") or ""),
                "language": str(template.get("language") or ""),
            }
    return list(seen.values())


def template_for(organization_id: uuid.UUID, organization_address: str, template_id: str) -> Template:
    """The template as the provider has it now (to show its form and preview before sending; the send
    reads it again). 404 ``Failed to get template from Meta`` when the provider does not know it."""
    address = sendable_address(organization_id, organization_address, None)
    provider = provider_for(address)
    provider.ids.check(template_id, "meta_template_id")
    try:
        return provider.get_template(address, template_id)
    except (ProviderError, TokenDecryptionError):
        raise ApiError(
            404, TEMPLATE_LOOKUP_FAILED, code="template_not_found", param="meta_template_id"
        ) from None
