"""Internal notes on a conversation (never sent to the contact) and the audit trail."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from blueprints.inbox.models import ConversationEvent, ConversationNote
from blueprints.inbox.schemas import NoteIn
from blueprints.inbox.services.common import as_uuid, conversation_or_404, record_event
from blueprints.members.services.members import find_member
from core.db import db, isoformat
from core.errors import ApiError
from core.events import publish

# The spec names the first three; the rest are this service's (docs/inbox.md).
EVENT_TYPES = (
    "assignment",
    "label_added",
    "label_removed",
    "unassignment",
    "archived",
    "unarchived",
    "status_changed",
    "team_assigned",
    "team_removed",
    "note_added",
    "note_deleted",
    "flow_started",
    "flow_interrupted",
)


def serialize_note(note: ConversationNote) -> dict[str, Any]:
    return {
        "id": str(note.id),
        "conversation_id": str(note.conversation_id),
        "organization_id": str(note.organization_id),
        "content": note.content,
        "member_id": note.member_id,
        "actor": note.actor,
        "created_at": isoformat(note.created_at),
    }


def add_note(organization_id: uuid.UUID, conversation_id: str, body: NoteIn) -> dict[str, Any]:
    if as_uuid(body.organization_id) != organization_id:
        # the same answer as the members endpoint gives for this body field
        raise ApiError(400, "organization_id: must be the organization of the path", param="organization_id")
    conversation = conversation_or_404(organization_id, conversation_id)
    if body.member_id and find_member(organization_id, body.member_id) is None:
        raise ApiError(400, "member_id: no member with this id in the organization", param="member_id")
    note = ConversationNote(
        organization_id=organization_id,
        conversation_id=conversation.id,
        content=body.content,
        member_id=body.member_id,
        actor=body.actor,
    )
    db.session.add(note)
    db.session.flush()
    record_event(
        conversation,
        "note_added",
        {"note_id": str(note.id), "member_id": body.member_id, "actor": body.actor},
    )
    result = serialize_note(note)
    publish("conversation.note_added", organization_id, result)
    db.session.commit()
    return result


def list_notes(organization_id: uuid.UUID, conversation_id: str) -> dict[str, Any]:
    conversation = conversation_or_404(organization_id, conversation_id)
    notes = db.session.scalars(
        select(ConversationNote)
        .where(ConversationNote.conversation_id == conversation.id)
        .order_by(ConversationNote.created_at, ConversationNote.id)
    )
    data = [serialize_note(n) for n in notes]
    return {"data": data, "total": len(data)}


def delete_note(organization_id: uuid.UUID, conversation_id: str, note_id: str) -> dict[str, Any]:
    conversation = conversation_or_404(organization_id, conversation_id)
    identifier = as_uuid(note_id)
    note = db.session.get(ConversationNote, identifier) if identifier else None
    if note is None or note.conversation_id != conversation.id:
        raise ApiError(404, "Note not found")
    db.session.delete(note)
    record_event(conversation, "note_deleted", {"note_id": note_id})
    db.session.commit()
    return {"id": note_id, "deleted": True}


def serialize_event(event: ConversationEvent) -> dict[str, Any]:
    return {
        "id": str(event.id),
        "conversation_id": str(event.conversation_id),
        "type": event.type,
        "data": dict(event.data or {}),
        "created_at": isoformat(event.created_at),
    }


def list_events(organization_id: uuid.UUID, conversation_id: str, types: list[str]) -> list[dict[str, Any]]:
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise ApiError(400, f"types: unknown event type {unknown[0]!r} (known: {', '.join(EVENT_TYPES)})")
    conversation = conversation_or_404(organization_id, conversation_id)
    statement = select(ConversationEvent).where(ConversationEvent.conversation_id == conversation.id)
    if types:
        statement = statement.where(ConversationEvent.type.in_(types))
    events = db.session.scalars(statement.order_by(ConversationEvent.created_at, ConversationEvent.id))
    return [serialize_event(e) for e in events]
