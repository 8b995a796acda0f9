"""The conversation changes other areas may make: the only writes to the ``conversations`` table from outside
the messaging area.

Conversations belong to messaging; the inbox works on them (assignment, team, archive, status, labels,
automation flows, deletion) by calling these functions, never by setting attributes itself, so one module
knows which column or ``extra`` key holds each field. They change the row in the session and flush where
a caller needs the database to see the change; they never commit (the caller's unit of work does) and
publish nothing (the caller knows which change it made and says so).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import delete as sql_delete
from sqlalchemy import update

from blueprints.messaging.extra import check_extra
from blueprints.messaging.models import Conversation
from core.db import db, utcnow

# The keys of ``extra`` kept in the JSON document; member_id, team_id and archived live in indexed columns.
_DOCUMENT_KEYS = frozenset({"labels", "team_name", "assignment", "flow_id", "flow_member_id"})


def _set_document(conversation: Conversation, **values: Any) -> None:
    unknown = set(values) - _DOCUMENT_KEYS
    if unknown:
        raise ValueError(f"not a conversation extra field: {', '.join(sorted(unknown))}")
    # a new dict, so the JSON column is seen as changed
    conversation.extra = {**(conversation.extra or {}), **values}


def set_custom_fields(conversation: Conversation, fields: Mapping[str, Any]) -> None:
    """The client's own ``extra`` keys, merged (a null value removes the key); 400 naming the field beyond
    the bounds of :mod:`blueprints.messaging.extra`."""
    stored = dict(conversation.extra or {})
    check_extra(stored, {key: value for key, value in fields.items() if value is not None})
    for key, value in fields.items():
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = value
    conversation.extra = stored


def touch(conversation: Conversation) -> None:
    conversation.updated_at = utcnow()


def rename(conversation: Conversation, name: str | None) -> None:
    conversation.name = name


def set_status(conversation: Conversation, status: str) -> None:
    conversation.status = status


def set_member(conversation: Conversation, member_id: str | None, assignment: dict[str, Any] | None) -> None:
    """The assigned member and the assignment record (``extra.assignment``) that goes with it."""
    conversation.member_id = member_id
    _set_document(conversation, assignment=assignment)


def set_assignment_record(conversation: Conversation, assignment: dict[str, Any] | None) -> None:
    _set_document(conversation, assignment=assignment)


def claim_member(conversation: Conversation, member_id: str, *, expected: str | None) -> bool:
    """Compare-and-set of the assigned member: succeeds only if the holder is still ``expected`` (None:
    nobody), so two concurrent assignments never both win. The row is refreshed either way."""
    db.session.flush()
    holder = Conversation.member_id.is_(None) if expected is None else Conversation.member_id == expected
    result = db.session.execute(
        update(Conversation)
        .where(Conversation.id == conversation.id, holder)
        .values(member_id=member_id, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        db.session.refresh(conversation)
        return False
    db.session.refresh(conversation, attribute_names=["member_id", "updated_at"])
    return True


def set_team(conversation: Conversation, team_id: str | None, team_name: str | None) -> None:
    conversation.team_id = team_id
    _set_document(conversation, team_name=team_name)


def set_archived(conversation: Conversation, archived_at: datetime | None) -> None:
    conversation.archived_at = archived_at


def set_labels(conversation: Conversation, names: list[str]) -> None:
    _set_document(conversation, labels=list(names))


def set_flow(conversation: Conversation, flow_id: str | None, flow_member_id: str | None) -> None:
    _set_document(conversation, flow_id=flow_id, flow_member_id=flow_member_id)


def set_flow_fields(conversation: Conversation, **fields: str | None) -> None:
    """``flow_id`` and/or ``flow_member_id`` as sent (a PATCH may send one of them)."""
    if set(fields) - {"flow_id", "flow_member_id"}:
        raise ValueError("only flow_id and flow_member_id")
    _set_document(conversation, **fields)


def clear_flow(conversation: Conversation) -> None:
    """Forget the automation flow entirely (the keys go, as the archive-and-clean update has always done)."""
    extra = dict(conversation.extra or {})
    extra.pop("flow_id", None)
    extra.pop("flow_member_id", None)
    conversation.extra = extra


def mark_opened_by_broadcast(conversation: Conversation, broadcast_id: uuid.UUID) -> None:
    """A conversation that a broadcast's send created carries the broadcast (existing ones keep theirs)."""
    if conversation.broadcast_id is None:
        conversation.broadcast_id = broadcast_id
        conversation.is_broadcast = True


def delete(conversation: Conversation) -> None:
    """Delete the conversation; its messages and the inbox's rows go with it (``ON DELETE CASCADE``)."""
    db.session.execute(sql_delete(Conversation).where(Conversation.id == conversation.id))
