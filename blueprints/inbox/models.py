"""The inbox's own records around conversations: labels (catalogue and applied), automation flows bound to
labels, internal notes, the audit trail, routing rules per organization address, and broadcasts."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow


class Label(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """An organization's label catalogue. ``name_key`` (lower-cased) keeps names unique per organization."""

    __tablename__ = "labels"
    __table_args__ = (UniqueConstraint("organization_id", "name_key", name="uq_labels_organization_name"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(80))
    name_key: Mapped[str] = mapped_column(String(80))
    # manual (made by a person), automation (made by a flow), ai (applied by an AI agent),
    # conversation (first seen on a conversation, catalogued automatically)
    source: Mapped[str] = mapped_column(String(24), default="manual")
    color: Mapped[str | None] = mapped_column(String(16))
    description: Mapped[str | None] = mapped_column(Text)


class ConversationLabel(db.Model):
    """The labels applied to a conversation, one row each, so that lists can filter by label with an index
    on every backend. ``conversations.extra.labels`` is written from these rows in the same transaction."""

    __tablename__ = "conversation_labels"
    __table_args__ = (Index("ix_conversation_labels_org_name", "organization_id", "name_key"),)

    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    name_key: Mapped[str] = mapped_column(String(80), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    organization_id: Mapped[uuid.UUID] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Flow(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """An automation sequence bound to labels: applying a trigger label starts it for the conversation,
    applying an interrupt label stops it. The enriched-labels view reads these bindings."""

    __tablename__ = "flows"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(120))
    status: Mapped[str] = mapped_column(String(16), default="active")  # active, paused, draft
    trigger_labels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    interrupt_labels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    member_id: Mapped[str | None] = mapped_column(String(64))  # the AI agent that runs the flow
    steps: Mapped[list[Any]] = mapped_column(JSONType, default=list)


class ConversationNote(UUIDPrimaryKeyMixin, db.Model):
    """Internal notes: never sent to the contact."""

    __tablename__ = "conversation_notes"

    organization_id: Mapped[uuid.UUID] = mapped_column(index=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    content: Mapped[str] = mapped_column(Text)
    member_id: Mapped[str | None] = mapped_column(String(64))
    actor: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationEvent(UUIDPrimaryKeyMixin, db.Model):
    """The audit trail of a conversation (assignment, labels, archive, status, team, notes)."""

    __tablename__ = "conversation_events"
    __table_args__ = (Index("ix_conversation_events_conversation_created", "conversation_id", "created_at"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(index=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(32), index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MemberAssignment(db.Model):
    """When each member last received a conversation: the tie-breaker "longest idle" of routing."""

    __tablename__ = "member_assignments"

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    member_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_assigned_at: Mapped[datetime] = mapped_column(default=utcnow)


class RoutingRule(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """Where new and reactivated conversations of one organization address go: a team (then an available
    member of it) or an AI agent member."""

    __tablename__ = "routing_rules"
    __table_args__ = (
        UniqueConstraint("organization_id", "organization_address", name="uq_routing_rules_address"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    organization_address: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(16))  # team, member, none
    team_id: Mapped[str | None] = mapped_column(String(64))
    member_id: Mapped[str | None] = mapped_column(String(64))


class Broadcast(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "broadcasts"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str | None] = mapped_column(String(200))
    organization_address: Mapped[str] = mapped_column(String(64))
    meta_template_id: Mapped[str] = mapped_column(String(128))
    template_name: Mapped[str | None] = mapped_column(String(512))
    template_language: Mapped[str | None] = mapped_column(String(16))
    components: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    # scheduled -> sending -> completed | canceled
    status: Mapped[str] = mapped_column(String(16), default="sending", index=True)
    rate_per_second: Mapped[int] = mapped_column(Integer, default=80)
    total: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str | None] = mapped_column(String(120))
    completed_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    # When a ``scheduled`` broadcast starts sending (null: sent at once).
    scheduled_at: Mapped[datetime | None]
    # The worker sending it holds a lease, renewed with every recipient; another worker (a resume) may
    # take over only once the lease has expired, so two live workers never send the same broadcast.
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]


class BroadcastRecipient(UUIDPrimaryKeyMixin, db.Model):
    """One recipient of a broadcast. ``state`` moves queued -> sending -> sent | failed | skipped, each
    step committed, so a restarted worker never sends to a recipient that left ``queued``."""

    __tablename__ = "broadcast_recipients"
    __table_args__ = (
        UniqueConstraint("broadcast_id", "contact_address", name="uq_broadcast_recipients_address"),
        Index("ix_broadcast_recipients_broadcast_state", "broadcast_id", "state"),
    )

    broadcast_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("broadcasts.id", ondelete="CASCADE"))
    organization_id: Mapped[uuid.UUID] = mapped_column()
    position: Mapped[int] = mapped_column(Integer)
    contact_address: Mapped[str] = mapped_column(String(64))
    parameters: Mapped[list[Any] | None] = mapped_column(JSONType)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    message_id: Mapped[str | None] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    attempted_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
