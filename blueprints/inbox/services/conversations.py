"""Finding conversations and changing them: the list with every filter of the spec, the PATCH that
implements the conversation state table, and DELETE."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy import Select, and_, delete, exists, func, or_, select
from sqlalchemy.orm import selectinload

from blueprints.inbox.models import ConversationLabel
from blueprints.inbox.schemas import ConversationListQuery, ConversationPatch
from blueprints.inbox.services import assignment, labels
from blueprints.inbox.services.common import as_uuid, conversation_or_404, record_event
from blueprints.messaging.models import Contact, Conversation, Message
from blueprints.messaging.serialize import serialize_conversation, serialize_message
from core.db import db, utcnow
from core.errors import ApiError
from core.events import publish
from core.hooks import hook
from core.pagination import paginate
from core.timeutil import as_utc


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _filtered(organization_id: uuid.UUID, query: ConversationListQuery) -> Select[tuple[Conversation]]:
    statement = select(Conversation).where(Conversation.organization_id == organization_id)
    if query.status == "archived":
        statement = statement.where(Conversation.archived_at.is_not(None))
    elif query.status == "active":
        statement = statement.where(Conversation.status == "active", Conversation.archived_at.is_(None))
    elif query.status == "closed":
        statement = statement.where(Conversation.status == "closed")
    if query.contact_id:
        statement = statement.where(Conversation.contact_id == _uuid_filter(query.contact_id, "contact_id"))
    if query.services:
        statement = statement.where(Conversation.service.in_(query.services))
    if query.no_labels:
        statement = statement.where(~exists().where(ConversationLabel.conversation_id == Conversation.id))
    elif query.label_names:
        keys = [name.lower() for name in query.label_names]
        statement = statement.where(
            exists().where(
                ConversationLabel.conversation_id == Conversation.id, ConversationLabel.name_key.in_(keys)
            )
        )
    if query.assigned_member_id:
        statement = statement.where(Conversation.member_id == query.assigned_member_id)
    if query.organization_address:
        statement = statement.where(Conversation.organization_address == query.organization_address)
    date_column = (
        Conversation.created_at if query.date_field == "created_at" else Conversation.last_message_at
    )
    if query.since:
        statement = statement.where(date_column >= as_utc(query.since))
    if query.until:
        statement = statement.where(date_column <= as_utc(query.until))
    if query.broadcast_id:
        statement = statement.where(
            Conversation.broadcast_id == _uuid_filter(query.broadcast_id, "broadcast_id")
        )
    if query.is_broadcast is not None:
        statement = statement.where(Conversation.is_broadcast.is_(query.is_broadcast))
    if query.crm_contact_id or query.search:
        statement = statement.join(Contact, Contact.id == Conversation.contact_id)
    if query.crm_contact_id:
        statement = statement.where(Contact.crm_contact_id == query.crm_contact_id)
    if query.search:
        pattern = _like(query.search.strip())
        statement = statement.where(
            or_(
                Contact.name.ilike(pattern, escape="\\"),
                Conversation.contact_address.ilike(pattern, escape="\\"),
                Conversation.name.ilike(pattern, escape="\\"),
            )
        )
    return statement


def _uuid_filter(value: str, field: str) -> uuid.UUID:
    identifier = as_uuid(value)
    if identifier is None:
        raise ApiError(400, f"{field}: must be a UUID")
    return identifier


def _ordered(
    statement: Select[tuple[Conversation]], query: ConversationListQuery
) -> Select[tuple[Conversation]]:
    column = {
        "last_message_timestamp": Conversation.last_message_at,
        "created_at": Conversation.created_at,
        "updated_at": Conversation.updated_at,
    }[query.order_by]
    direction = column.asc() if query.order == "asc" else column.desc()
    tie = Conversation.id.asc() if query.order == "asc" else Conversation.id.desc()
    # Conversations without messages sort last whichever the direction.
    return statement.order_by(column.is_(None), direction, tie)


def latest_messages(
    conversation_ids: list[uuid.UUID], per_conversation: int
) -> dict[uuid.UUID, list[Message]]:
    """The last ``per_conversation`` messages of each conversation, oldest first, in one query."""
    if not conversation_ids or per_conversation <= 0:
        return {}
    rank = (
        func.row_number()
        .over(partition_by=Message.conversation_id, order_by=(Message.timestamp.desc(), Message.id.desc()))
        .label("rank")
    )
    ranked = select(Message.id, rank).where(Message.conversation_id.in_(conversation_ids)).subquery()
    table = Message.__table__
    rows = db.session.execute(
        select(table)
        .join(ranked, ranked.c.id == table.c.id)
        .where(ranked.c.rank <= per_conversation)
        .order_by(table.c.conversation_id, table.c.timestamp, table.c.id)
    )
    grouped: dict[uuid.UUID, list[Any]] = defaultdict(list)
    for message in rows:
        grouped[message.conversation_id].append(message)
    return grouped


def list_conversations(organization_id: uuid.UUID, query: ConversationListQuery) -> dict[str, Any]:
    statement = _ordered(_filtered(organization_id, query), query).options(selectinload(Conversation.contact))
    page = paginate(statement, offset=query.skip, limit=query.take)
    messages = latest_messages([c.id for c in page.items], query.include_messages)
    data = []
    for conversation in page.items:
        item = serialize_conversation(conversation, conversation.contact)
        if query.include_messages:
            item["messages"] = [serialize_message(m) for m in messages.get(conversation.id, [])]
        data.append(item)
    return {"data": data, "total": page.total, "skip": query.skip, "take": query.take}


def update_conversation(
    organization_id: uuid.UUID, conversation_id: str, patch: ConversationPatch, *, actor: str = "api"
) -> dict[str, Any]:
    """Apply one PATCH: ``name``, ``status`` and ``extra`` merged field by field (only fields sent change).

    Rows of the spec's state table:
    - ``extra.archived`` = timestamp archives (assignment, team and labels kept);
    - archiving while also clearing ``member_id`` (archive and clean) clears the flow fields too, so a
      reactivated conversation goes through routing from the start;
    - ``extra.archived`` = null un-archives;
    - ``extra.member_id`` = id assigns (audit event ``assignment``), null unassigns (``unassignment``).
    """
    conversation = conversation_or_404(organization_id, conversation_id, lock=True)
    sent = patch.model_fields_set
    extra = dict(conversation.extra or {})
    changes: dict[str, Any] = {}
    if "name" in sent:
        conversation.name = patch.name
        changes["name"] = patch.name
    if "status" in sent and patch.status and patch.status != conversation.status:
        record_event(
            conversation, "status_changed", {"from": conversation.status, "to": patch.status, "by": actor}
        )
        conversation.status = patch.status
        changes["status"] = patch.status
    if patch.extra is not None:
        fields = patch.extra.model_fields_set
        values = patch.extra
        if "team_id" in fields or "team_name" in fields:
            team_id = values.team_id if "team_id" in fields else conversation.team_id
            team_name = values.team_name if "team_name" in fields else extra.get("team_name")
            assignment.set_team(conversation, team_id, team_name, by=actor)
            extra = dict(conversation.extra or {})
        if "labels" in fields:
            labels.apply_labels(conversation, values.labels or [], by=actor)
            extra = dict(conversation.extra or {})
        if "member_id" in fields:
            assigned_by = (values.assignment or {}).get("assigned_by") if values.assignment else None
            assignment.assign(conversation, values.member_id, assigned_by=assigned_by or "manual")
            extra = dict(conversation.extra or {})
        if "assignment" in fields and "member_id" not in fields:
            # with member_id, the assignment record is written by the assignment itself
            extra["assignment"] = values.assignment
        for key in ("flow_id", "flow_member_id"):
            if key in fields:
                extra[key] = getattr(values, key)
        if "archived" in fields:
            if values.archived is not None and conversation.archived_at is None:
                conversation.archived_at = as_utc(values.archived)
                cleaned = "member_id" in fields and values.member_id is None
                if cleaned:
                    extra.pop("flow_id", None)
                    extra.pop("flow_member_id", None)
                record_event(conversation, "archived", {"by": actor, "cleaned": cleaned})
            elif values.archived is not None:
                conversation.archived_at = as_utc(values.archived)
            elif values.archived is None and conversation.archived_at is not None:
                conversation.archived_at = None
                record_event(conversation, "unarchived", {"by": actor})
        conversation.extra = extra
        changes["extra"] = sorted(fields)
    conversation.updated_at = utcnow()
    db.session.flush()
    result = serialize_conversation(conversation, conversation.contact)
    publish("conversation.updated", organization_id, {"conversation": result, "changes": changes})
    db.session.commit()
    return result


def delete_conversation(organization_id: uuid.UUID, conversation_id: str) -> dict[str, Any]:
    """Delete a conversation with its messages, notes, labels and audit trail, unless another record still
    points to it (a deal or a ticket link): then 409, and the conversation should be archived instead."""
    conversation = conversation_or_404(organization_id, conversation_id)
    references = referencing_records(organization_id, str(conversation.id))
    if references:
        raise ApiError(
            409,
            "Conversation is linked to " + ", ".join(references) + "; unlink it first or archive it instead",
        )
    identifier = conversation.id
    db.session.execute(delete(Conversation).where(Conversation.id == identifier))
    publish("conversation.deleted", organization_id, {"conversation_id": str(identifier)})
    db.session.commit()
    return {"id": str(identifier), "deleted": True}


def referencing_records(organization_id: uuid.UUID, conversation_id: str) -> list[str]:
    """Which other records point to this conversation (CRM deal and ticket links), as readable phrases."""
    answers = conversation_references.answers(
        organization_id=organization_id, conversation_id=conversation_id
    )
    return [phrase for phrases in answers for phrase in phrases or ()]


conversation_references = hook(
    "inbox.conversation_references",
    'fn(organization_id, conversation_id) -> ["2 deals", ...]: areas that link conversations',
)


def active_counts(organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, int]:
    """Active conversations (status active, not archived) per member, derived in one query: a count that
    cannot drift, whatever happens concurrently."""
    rows = db.session.execute(
        select(Conversation.member_id, func.count())
        .where(
            Conversation.organization_id == organization_id,
            Conversation.member_id.in_(member_ids),
            and_(Conversation.status == "active", Conversation.archived_at.is_(None)),
        )
        .group_by(Conversation.member_id)
    )
    return {member_id: count for member_id, count in rows}
