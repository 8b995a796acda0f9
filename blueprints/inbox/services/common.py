"""Lookups shared by the inbox services: every one takes the caller's organization."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import selectinload

from blueprints.inbox.models import ConversationEvent
from blueprints.messaging.models import Conversation
from blueprints.messaging.schemas import ConversationOut
from core.db import db, utcnow
from core.errors import ApiError
from core.events import publish
from core.tenancy import find_for_org


def as_uuid(value: str | uuid.UUID | None) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def conversation_or_404(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, *, lock: bool = False
) -> Conversation:
    """The organization's conversation, or 404 in the messaging area's words (``Conversation not found``)."""
    options = [selectinload(Conversation.contact)]
    conversation = find_for_org(
        Conversation, conversation_id, organization_id, options=options, loads=("contact",)
    )
    if conversation is not None and lock:
        # FOR UPDATE re-reads the row under the lock (a no-op on SQLite, which locks the whole database)
        conversation = db.session.scalars(
            db.select(Conversation)
            .where(Conversation.id == conversation.id)
            .options(*options)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).first()
    if conversation is None:
        raise ApiError(404, "Conversation not found")
    return conversation


def record_event(conversation: Conversation, type_: str, data: dict[str, object]) -> ConversationEvent:
    event = ConversationEvent(
        organization_id=conversation.organization_id,
        conversation_id=conversation.id,
        type=type_,
        data=data,
        created_at=utcnow(),
    )
    db.session.add(event)
    return event


def publish_updated(conversation: Conversation, changes: dict[str, object]) -> None:
    """``conversation.updated`` to the organization's room with the conversation as the API shows it."""
    db.session.flush()
    publish(
        "conversation.updated",
        conversation.organization_id,
        {"conversation": ConversationOut.dump(conversation), "changes": changes},
    )
