"""Lookups shared by the inbox services: every one takes the caller's organization."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from blueprints.inbox.models import ConversationEvent
from blueprints.messaging.models import Conversation
from core.db import db, utcnow
from core.errors import ApiError


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
    identifier = as_uuid(conversation_id)
    conversation = None
    if identifier is not None:
        statement = (
            select(Conversation)
            .options(selectinload(Conversation.contact))
            .where(Conversation.id == identifier, Conversation.organization_id == organization_id)
        )
        if lock:
            statement = statement.with_for_update()
        conversation = db.session.scalar(statement)
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
