"""Internal notes on a conversation (never sent to the contact) and the audit trail."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from blueprints.audit import services as audit_log
from blueprints.inbox.models import ConversationEvent, ConversationNote
from blueprints.inbox.schemas import NoteOut
from blueprints.inbox.services.common import conversation_or_404, record_event
from blueprints.members.services.members import find_member
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.tenancy import find_for_org

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


def add_note(
    organization_id: uuid.UUID,
    conversation_id: str | uuid.UUID,
    content: str,
    *,
    member_id: str | None = None,
    actor: str | None = None,
) -> ConversationNote:
    """An internal note (never sent to the contact), written by ``member_id`` and/or a named ``actor``;
    400 for an unknown member. Audit event ``note_added``."""
    conversation = conversation_or_404(organization_id, conversation_id)
    if member_id and find_member(organization_id, member_id) is None:
        raise ApiError(400, "member_id: no member with this id in the organization", param="member_id")
    note = ConversationNote(
        organization_id=organization_id,
        conversation_id=conversation.id,
        content=content,
        member_id=member_id,
        actor=actor,
    )
    db.session.add(note)
    db.session.flush()
    record_event(
        conversation, "note_added", {"note_id": str(note.id), "member_id": member_id, "actor": actor}
    )
    publish("conversation.note_added", organization_id, NoteOut.dump(note))
    return note


def list_notes(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> list[ConversationNote]:
    conversation = conversation_or_404(organization_id, conversation_id)
    return list(
        db.session.scalars(
            select(ConversationNote)
            .where(ConversationNote.conversation_id == conversation.id)
            .order_by(ConversationNote.created_at, ConversationNote.id)
        )
    )


def delete_note(organization_id: uuid.UUID, conversation_id: str | uuid.UUID, note_id: str) -> None:
    conversation = conversation_or_404(organization_id, conversation_id)
    note = find_for_org(ConversationNote, note_id, organization_id)
    if note is None or note.conversation_id != conversation.id:
        raise ApiError(404, "Note not found")
    db.session.delete(note)
    audit_log.record("note.deleted", "note", note.id, organization_id=organization_id)
    record_event(conversation, "note_deleted", {"note_id": note_id})
    db.session.flush()


def list_events(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, types: list[str]
) -> list[ConversationEvent]:
    """The audit trail, oldest first; ``types`` (when given) filters, 400 for an unknown type."""
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise ApiError(400, f"types: unknown event type {unknown[0]!r} (known: {', '.join(EVENT_TYPES)})")
    conversation = conversation_or_404(organization_id, conversation_id)
    statement = select(ConversationEvent).where(ConversationEvent.conversation_id == conversation.id)
    if types:
        statement = statement.where(ConversationEvent.type.in_(types))
    return list(db.session.scalars(statement.order_by(ConversationEvent.created_at, ConversationEvent.id)))
