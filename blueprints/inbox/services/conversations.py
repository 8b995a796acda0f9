"""Finding conversations and changing them: the list with every filter of the spec, the verbs a page or an
API route calls (assign, unassign, set_team, archive, archive_and_clean, unarchive, add_label,
remove_label, set_status, add_note), the PATCH that composes them along the spec's state table, and DELETE.

Every verb takes the organization, the conversation id and plain values, plus the ``actor`` (who did it,
``core.auth.current_actor()`` at the caller); it locks the conversation, changes it through the messaging
area's ``conversation_state`` functions, writes the audit trail, publishes ``conversation.updated`` and
returns the conversation. None of them commits: the caller's unit of work does, once.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Select, exists, func, select, union_all
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.inbox.models import ConversationLabel
from blueprints.inbox.services import assignment, labels
from blueprints.inbox.services.common import as_uuid, conversation_or_404, publish_updated, record_event
from blueprints.messaging import conversation_state
from blueprints.messaging.extra import KNOWN_KEYS
from blueprints.messaging.models import Contact, Conversation, Message
from core.db import db, utcnow
from core.errors import ApiError
from core.events import publish
from core.hooks import hook
from core.pagination import (
    FILTERED_TOTAL_COUNT_CAP,
    TOTAL_COUNT_CAP,
    CursorPage,
    Keyset,
    Page,
    count_of,
    keyset_paginate,
    paginate,
)
from core.textsearch import contains, text_index
from core.timeutil import as_utc

STATUSES = ("active", "closed")
# the extra fields of the spec's "archive and clean" row
ARCHIVE_AND_CLEAN = ("archived", "member_id", "assignment", "team_id", "team_name", "labels")


class Unset:
    """A keyword argument not given (None is a value: it clears the field)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()

# The search's text indexes (migration inbox_0003): a conversation's name and contact address, and the
# name of its contact.
CONVERSATION_TEXT = text_index("conversations", "name", "contact_address")
CONTACT_TEXT = text_index("messaging_contacts", "name")


@dataclass(frozen=True)
class ConversationFilter:
    """The list's filters (every one optional) and its order and window."""

    search: str | None = None
    status: str | None = None  # active, closed or archived
    contact_id: str | None = None
    services: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    no_labels: bool = False
    assigned_member_id: str | None = None
    organization_address: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    date_field: str = "created_at"
    order_by: str = "last_message_timestamp"
    order: str = "desc"
    broadcast_id: str | None = None
    is_broadcast: bool | None = None
    crm_contact_id: str | None = None
    # The desk's tabs: archived or not (whatever the status), nobody assigned, one of these teams, and
    # these conversations only (a live row refresh asks whether one conversation still belongs to a tab).
    archived: bool | None = None
    unassigned: bool = False
    team_ids: list[str] | None = None
    ids: list[uuid.UUID] = field(default_factory=list)
    skip: int = 0
    take: int = 20
    include_messages: int = 0
    # Keyset pagination instead of skip: None is offset mode; "" the first page, then each page's
    # next_cursor (core.pagination.keyset_paginate).
    cursor: str | None = None
    # Count the total up to this many rows (None: TOTAL_COUNT_CAP, or FILTERED_TOTAL_COUNT_CAP with a label
    # or a search). The desk asks 0, "is there a next page?" (it counts its tabs apart): the count stops
    # one row past the page.
    total_cap: int | None = None


@dataclass(frozen=True)
class ConversationPage:
    items: list[Conversation]
    total: int
    # with include_messages: the last N messages of each conversation, oldest first
    messages: dict[uuid.UUID, list[Message]]
    # in keyset mode: the cursor of the next page (None on the last one)
    next_cursor: str | None = None
    # false when the count stopped at core.pagination.TOTAL_COUNT_CAP: ``total`` is then a lower bound
    total_is_exact: bool = True


def _filtered(organization_id: uuid.UUID, query: ConversationFilter) -> Select[tuple[Conversation]]:
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
    elif query.labels:
        keys = [name.lower() for name in query.labels]
        statement = statement.where(
            exists().where(
                ConversationLabel.conversation_id == Conversation.id, ConversationLabel.name_key.in_(keys)
            )
        )
    if query.assigned_member_id:
        statement = statement.where(Conversation.member_id == query.assigned_member_id)
    if query.organization_address:
        statement = statement.where(Conversation.organization_address == query.organization_address)
    if query.archived is not None:
        archived = Conversation.archived_at.is_not(None)
        statement = statement.where(archived if query.archived else ~archived)
    if query.unassigned:
        statement = statement.where(Conversation.member_id.is_(None))
    if query.team_ids is not None:
        statement = statement.where(Conversation.team_id.in_(query.team_ids))
    if query.ids:
        statement = statement.where(Conversation.id.in_(query.ids))
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
    if query.crm_contact_id:
        statement = statement.join(Contact, Contact.id == Conversation.contact_id)
        statement = statement.where(Contact.crm_contact_id == query.crm_contact_id)
    if query.search and query.search.strip():
        statement = statement.where(Conversation.id.in_(_searched(organization_id, query.search.strip())))
    return statement


def _searched(organization_id: uuid.UUID, text: str) -> Any:
    """Ids of the conversations whose name, contact address or contact's name contains ``text``: two
    lookups in the text indexes (core.textsearch), one per table, so each side is an index search rather
    than an OR across a join that no index can serve. Not correlated: they stand alone."""
    by_conversation = select(Conversation.id).where(
        Conversation.organization_id == organization_id, contains(CONVERSATION_TEXT, Conversation, text)
    )
    by_contact = (
        select(Conversation.id)
        .join(Contact, Contact.id == Conversation.contact_id)
        .where(Contact.organization_id == organization_id, contains(CONTACT_TEXT, Contact, text))
    )
    return union_all(by_conversation.correlate(None), by_contact.correlate(None))


def _uuid_filter(value: str, field: str) -> uuid.UUID:
    identifier = as_uuid(value)
    if identifier is None:
        raise ApiError(400, f"{field}: must be a UUID")
    return identifier


def _keyset(query: ConversationFilter) -> Keyset:
    column = {
        "last_message_timestamp": Conversation.last_message_at,
        "created_at": Conversation.created_at,
        "updated_at": Conversation.updated_at,
    }[query.order_by]
    return Keyset(
        (column, Conversation.id),
        descending=query.order == "desc",
        nullable_first=query.order_by == "last_message_timestamp",
    )


def _ordered(
    statement: Select[tuple[Conversation]], query: ConversationFilter
) -> Select[tuple[Conversation]]:
    column = _keyset(query).columns[0]
    direction = column.asc() if query.order == "asc" else column.desc()
    tie = Conversation.id.asc() if query.order == "asc" else Conversation.id.desc()
    # Conversations without messages sort last whichever the direction; spelled NULLS LAST so that the
    # default order (newest activity first) is read off the ix_conversations_inbox* indexes.
    return statement.order_by(direction.nulls_last(), tie)


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


def list_conversations(organization_id: uuid.UUID, query: ConversationFilter) -> ConversationPage:
    statement = _ordered(_filtered(organization_id, query), query).options(selectinload(Conversation.contact))
    next_cursor = None
    if query.cursor is not None:
        sort = f"{query.order_by}:{query.order}"
        page: Page[Conversation] | CursorPage[Conversation] = keyset_paginate(
            statement,
            _keyset(query),
            cursor=query.cursor,
            limit=query.take,
            sort=sort,
            offset=query.skip,
            count_cap=_total_cap(query),
        )
        next_cursor = page.next_cursor
    else:
        page = paginate(statement, offset=query.skip, limit=query.take, count_cap=_total_cap(query))
    messages = latest_messages([c.id for c in page.items], query.include_messages)
    return ConversationPage(page.items, page.total, messages, next_cursor, page.total_is_exact)


def _total_cap(query: ConversationFilter) -> int:
    if query.total_cap is not None:
        return query.total_cap
    searched = bool(query.search and query.search.strip())
    return FILTERED_TOTAL_COUNT_CAP if searched or query.labels else TOTAL_COUNT_CAP


def count_conversations(organization_id: uuid.UUID, query: ConversationFilter) -> int:
    """How many conversations the filters find (the desk's tab counts), in one query."""
    return count_of(_filtered(organization_id, query))


def _locked(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> Conversation:
    return conversation_or_404(organization_id, conversation_id, lock=True)


def _changed(conversation: Conversation, changes: dict[str, Any]) -> Conversation:
    conversation_state.touch(conversation)
    publish_updated(conversation, changes)
    return conversation


# ---- the steps the verbs and the PATCH are made of (on a conversation already locked) --------------------


def _status(conversation: Conversation, status: str, *, actor: str) -> bool:
    if status == conversation.status:
        return False
    record_event(conversation, "status_changed", {"from": conversation.status, "to": status, "by": actor})
    conversation_state.set_status(conversation, status)
    return True


def _archive(conversation: Conversation, at: datetime, *, actor: str, cleaned: bool) -> None:
    """Archive (a second archive only moves the timestamp); ``cleaned`` also forgets the automation flow,
    so a reactivated conversation goes through routing from the start."""
    if conversation.archived_at is not None:
        conversation_state.set_archived(conversation, as_utc(at))
        return
    conversation_state.set_archived(conversation, as_utc(at))
    if cleaned:
        conversation_state.clear_flow(conversation)
    record_event(conversation, "archived", {"by": actor, "cleaned": cleaned})


def _unarchive(conversation: Conversation, *, actor: str) -> None:
    if conversation.archived_at is not None:
        conversation_state.set_archived(conversation, None)
        record_event(conversation, "unarchived", {"by": actor})


def _labels_now(conversation: Conversation) -> list[str]:
    return list((conversation.extra or {}).get("labels") or [])


# ---- verbs -----------------------------------------------------------------------------------------------


def assign(
    organization_id: uuid.UUID,
    conversation_id: str | uuid.UUID,
    member_id: str,
    *,
    actor: str,
    assigned_by: str = "manual",
) -> Conversation:
    """Assign to a member (400 ``extra.member_id`` for an unknown one): audit event ``assignment`` and an
    ``extra.assignment`` record ``{member_id, assigned_by, assigned_at}``."""
    conversation = _locked(organization_id, conversation_id)
    assignment.assign_member(conversation, member_id, assigned_by=assigned_by)
    return _changed(conversation, {"extra": ["member_id"]})


def unassign(organization_id: uuid.UUID, conversation_id: str | uuid.UUID, *, actor: str) -> Conversation:
    conversation = _locked(organization_id, conversation_id)
    assignment.unassign_member(conversation, actor=actor)
    return _changed(conversation, {"extra": ["member_id"]})


def set_team(
    organization_id: uuid.UUID,
    conversation_id: str | uuid.UUID,
    team_id: str | None,
    team_name: str | None = None,
    *,
    actor: str,
) -> Conversation:
    """Set the team (``team_name`` defaults to the team's name; 400 for an unknown team) or, with None,
    remove it. No member is looked up: that is ``assignment.assign_team``."""
    conversation = _locked(organization_id, conversation_id)
    assignment.change_team(conversation, team_id, team_name, actor=actor)
    return _changed(conversation, {"extra": ["team_id", "team_name"]})


def archive(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, *, actor: str, at: datetime | None = None
) -> Conversation:
    """Archive; assignment, team and labels are kept."""
    conversation = _locked(organization_id, conversation_id)
    _archive(conversation, at or utcnow(), actor=actor, cleaned=False)
    return _changed(conversation, {"extra": ["archived"]})


def archive_and_clean(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, *, actor: str, at: datetime | None = None
) -> Conversation:
    """Archive, unassign, clear the team, the labels and the automation flow: a reactivated conversation
    is routed from the start (the spec's "archive and clean")."""
    conversation = _locked(organization_id, conversation_id)
    assignment.change_team(conversation, None, None, actor=actor)
    labels.apply_labels(conversation, [], by=actor)
    assignment.unassign_member(conversation, actor=actor)
    conversation_state.set_assignment_record(conversation, None)
    conversation_state.clear_flow(conversation)
    _archive(conversation, at or utcnow(), actor=actor, cleaned=True)
    return _changed(conversation, {"extra": sorted(ARCHIVE_AND_CLEAN)})


def unarchive(organization_id: uuid.UUID, conversation_id: str | uuid.UUID, *, actor: str) -> Conversation:
    conversation = _locked(organization_id, conversation_id)
    _unarchive(conversation, actor=actor)
    return _changed(conversation, {"extra": ["archived"]})


def add_label(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, name: str, *, actor: str
) -> Conversation:
    """Apply one label (catalogued if new; starts or interrupts the flows bound to it). Applying a label
    the conversation already carries (ignoring case) changes nothing."""
    conversation = _locked(organization_id, conversation_id)
    labels.apply_labels(conversation, [*_labels_now(conversation), labels.clean_name(name)], by=actor)
    return _changed(conversation, {"extra": ["labels"]})


def remove_label(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, name: str, *, actor: str
) -> Conversation:
    conversation = _locked(organization_id, conversation_id)
    key = labels.label_key(name)
    kept = [n for n in _labels_now(conversation) if labels.label_key(n) != key]
    labels.apply_labels(conversation, kept, by=actor)
    return _changed(conversation, {"extra": ["labels"]})


def set_status(
    organization_id: uuid.UUID, conversation_id: str | uuid.UUID, status: str, *, actor: str
) -> Conversation:
    """``active`` or ``closed`` (archiving is not a status: see ``archive``)."""
    if status not in STATUSES:
        raise ApiError(400, f"status: must be one of {', '.join(STATUSES)}", param="status")
    conversation = _locked(organization_id, conversation_id)
    changed = _status(conversation, status, actor=actor)
    return _changed(conversation, {"status": status} if changed else {})


# ---- the PATCH -------------------------------------------------------------------------------------------


def update_conversation(
    organization_id: uuid.UUID,
    conversation_id: str | uuid.UUID,
    *,
    actor: str,
    name: str | Unset | None = UNSET,
    status: str | Unset | None = UNSET,
    extra: Mapping[str, Any] | None = None,
) -> Conversation:
    """One PATCH: ``name``, ``status`` and the ``extra`` fields sent (only those change), made of the verbs'
    steps in a fixed order so that every row of the spec's state table holds:

    - ``extra.archived`` = timestamp archives (assignment, team and labels kept): ``archive``;
    - archiving while also clearing ``member_id`` forgets the flow fields too (with ``team_id``,
      ``team_name``, ``assignment`` null and ``labels`` [] as well it is ``archive_and_clean``);
    - ``extra.archived`` = null un-archives: ``unarchive``;
    - ``extra.member_id`` = id assigns (``assigned_by`` from ``extra.assignment``), null unassigns;
    - ``extra.team_id`` / ``team_name``: ``set_team``; ``extra.labels`` replaces the labels; ``status``:
      ``set_status``;
    - any other ``extra`` key is the client's own: stored as sent (null removes it), within the bounds of
      ``messaging.extra`` (50 keys, 2 KB a value).

    One ``conversation.updated`` is published for the whole PATCH.
    """
    conversation = _locked(organization_id, conversation_id)
    changes: dict[str, Any] = {}
    if not isinstance(name, Unset):
        conversation_state.rename(conversation, name)
        changes["name"] = name
    if isinstance(status, str) and _status(conversation, status, actor=actor):
        changes["status"] = status
    if extra is not None:
        fields = set(extra)
        if "team_id" in fields or "team_name" in fields:
            team_id = extra["team_id"] if "team_id" in fields else conversation.team_id
            team_name = (
                extra["team_name"] if "team_name" in fields else (conversation.extra or {}).get("team_name")
            )
            assignment.change_team(conversation, team_id, team_name, actor=actor)
        if "labels" in fields:
            labels.apply_labels(conversation, extra["labels"] or [], by=actor)
        if "member_id" in fields:
            if extra["member_id"] is None:
                assignment.unassign_member(conversation, actor=actor)
            else:
                record = extra.get("assignment") or {}
                assigned_by = record.get("assigned_by") or "manual"
                assignment.assign_member(conversation, extra["member_id"], assigned_by=assigned_by)
        elif "assignment" in fields:
            # with member_id, the assignment record is written by the assignment itself
            conversation_state.set_assignment_record(conversation, extra["assignment"])
        flow = {key: extra[key] for key in ("flow_id", "flow_member_id") if key in fields}
        if flow:
            conversation_state.set_flow_fields(conversation, **flow)
        custom = {key: extra[key] for key in fields if key not in KNOWN_KEYS}
        if custom:
            conversation_state.set_custom_fields(conversation, custom)
        if "archived" in fields:
            if extra["archived"] is not None:
                cleaned = "member_id" in fields and extra["member_id"] is None
                _archive(conversation, extra["archived"], actor=actor, cleaned=cleaned)
            else:
                _unarchive(conversation, actor=actor)
        changes["extra"] = sorted(fields)
    return _changed(conversation, changes)


def delete_conversation(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> uuid.UUID:
    """Delete a conversation with its messages, notes, labels and audit trail, unless another record still
    points to it (a deal or a ticket link): then 409, and the conversation should be archived instead.
    Returns the id of the conversation deleted."""
    conversation = conversation_or_404(organization_id, conversation_id)
    references = referencing_records(organization_id, str(conversation.id))
    if references:
        raise ApiError(
            409,
            "Conversation is linked to " + ", ".join(references) + "; unlink it first or archive it instead",
        )
    identifier = conversation.id
    conversation_state.delete(conversation)
    audit_log.record("conversation.deleted", "conversation", identifier, organization_id=organization_id)
    publish("conversation.deleted", organization_id, {"conversation_id": str(identifier)})
    return identifier


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
