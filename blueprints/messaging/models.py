"""Messaging contacts and their channel addresses, conversations, messages, and the backlog that makes
out-of-order statuses safe. (``Idempotency-Key`` records are core's: ``core.idempotency``.)"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, ordered_index, utcnow

DIRECTIONS = ("incoming", "outgoing")
# Outgoing statuses only move forward along this order; each reached status keeps its timestamp.
# ``failed`` ranks below ``delivered``: a late failure never hides a delivery that happened. ``unknown`` is
# the desk's: a send interrupted after ``pending`` whose provider cannot tell whether it went out
# (reconciled by ``sending.reconcile_stale``); any later news from the provider moves it on.
STATUS_RANK = {
    "pending": 0,
    "unknown": 1,
    "accepted": 2,
    "sent": 3,
    "failed": 4,
    "delivered": 5,
    "read": 6,
    "played": 7,
}
# Statuses only the desk sets: a provider's webhook naming one is ignored.
DESK_STATUSES = ("pending", "unknown")
INCOMING_STATUS = "received"


class Contact(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """A person the organization talks to, with one address per channel account they used."""

    __tablename__ = "messaging_contacts"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str | None] = mapped_column(String(200))
    # The CRM contact this person is (matched by normalised phone); a string: no foreign key across areas.
    crm_contact_id: Mapped[str | None] = mapped_column(String(64), index=True)
    extra: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)

    addresses: Mapped[list[ContactAddress]] = relationship(
        back_populates="contact",
        lazy="raise",
        cascade="all, delete-orphan",
        order_by="ContactAddress.created_at",
    )


class ContactAddress(UUIDPrimaryKeyMixin, db.Model):
    """``address`` is E.164 for WhatsApp (521/549 quirks folded) and the PSID/IGSID otherwise."""

    __tablename__ = "messaging_contact_addresses"
    __table_args__ = (
        UniqueConstraint(
            "organization_id", "service", "address", name="uq_messaging_contact_addresses_identity"
        ),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(index=True)
    contact_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("messaging_contacts.id", ondelete="CASCADE"), index=True
    )
    service: Mapped[str] = mapped_column(String(16))
    address: Mapped[str] = mapped_column(String(64), index=True)
    # The id the provider uses for this person (WhatsApp wa_id, which may keep the 521 form).
    provider_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    contact: Mapped[Contact] = relationship(back_populates="addresses", lazy="raise")


class Conversation(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """One thread per (organization address, contact, service).

    The ``extra`` fields that lists filter on are real indexed columns (member_id, team_id, archived_at,
    broadcast ids); the rest of ``extra`` (labels, team_name, assignment, flow ids) is a JSON document.
    """

    __tablename__ = "conversations"
    __table_args__ = (
        UniqueConstraint(
            "organization_id", "organization_address", "contact_id", "service", name="uq_conversations_thread"
        ),
        # The inbox's lists in their default order (newest activity first, conversations without messages
        # last), one partial index per desk tab, so a page is read off an index instead of sorting the
        # organization's conversations. Their order and WHERE clauses are in the migration (messaging_0005).
        ordered_index("ix_conversations_inbox", "organization_id", "last_message_at", "id"),
        ordered_index(
            "ix_conversations_inbox_member", "organization_id", "member_id", "last_message_at", "id"
        ),
        ordered_index("ix_conversations_inbox_unassigned", "organization_id", "last_message_at", "id"),
        ordered_index("ix_conversations_inbox_team", "organization_id", "team_id", "last_message_at", "id"),
        ordered_index("ix_conversations_inbox_archived", "organization_id", "last_message_at", "id"),
        # The API's default list (archived and not) in the same order (migration inbox_0003).
        ordered_index("ix_conversations_list", "organization_id", "last_message_at", "id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    contact_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("messaging_contacts.id"), index=True)
    organization_address: Mapped[str] = mapped_column(String(64), index=True)
    contact_address: Mapped[str] = mapped_column(String(64), index=True)
    service: Mapped[str] = mapped_column(String(16), index=True)
    status: Mapped[str] = mapped_column(String(16), default="active", index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    member_id: Mapped[str | None] = mapped_column(String(64), index=True)
    team_id: Mapped[str | None] = mapped_column(String(64), index=True)
    archived_at: Mapped[datetime | None] = mapped_column(index=True)
    last_message_at: Mapped[datetime | None] = mapped_column(index=True)
    last_incoming_at: Mapped[datetime | None] = mapped_column(index=True)
    broadcast_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    is_broadcast: Mapped[bool] = mapped_column(default=False, index=True)
    # Set when a template is sent without ``do_not_pause``: the AI agent stays quiet until resumed.
    ai_paused_at: Mapped[datetime | None]
    extra: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)

    contact: Mapped[Contact] = relationship(lazy="raise")


class Message(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "messages"
    __table_args__ = (
        # Deduplication of at-least-once webhooks: one row per provider message id per organization.
        UniqueConstraint("organization_id", "external_id", name="uq_messages_external_id"),
        # A conversation's messages in the message list's full order (migration inbox_0003).
        Index("ix_messages_conversation_order", "conversation_id", "timestamp", "created_at", "id"),
        # The last reply and the unanswered messages of a conversation (the desk's unread badge).
        Index("ix_messages_conversation_direction_timestamp", "conversation_id", "direction", "timestamp"),
        # The message list of the whole organization in its order, read backwards (migration inbox_0003).
        Index("ix_messages_organization_timestamp", "organization_id", "timestamp", "created_at", "id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(index=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    direction: Mapped[str] = mapped_column(String(16), index=True)
    service: Mapped[str] = mapped_column(String(16))
    organization_address: Mapped[str] = mapped_column(String(64))
    contact_address: Mapped[str] = mapped_column(String(64))
    external_id: Mapped[str | None] = mapped_column(String(255))
    # The provider's own time for incoming messages (the service window counts from it); creation time
    # for outgoing ones.
    timestamp: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    content: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    template: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    data: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    template_name: Mapped[str | None] = mapped_column(String(512))
    template_language: Mapped[str | None] = mapped_column(String(16))
    status: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    current_status: Mapped[str] = mapped_column(String(16), index=True)
    reply_to: Mapped[str | None] = mapped_column(String(255))
    member_id: Mapped[str | None] = mapped_column(String(64))
    # The Idempotency-Key a send ran under (core's scope and key), so the reconcile sweep can answer that
    # key with the outcome of a send whose request died (``sending.reconcile_stale``).
    idempotency_scope: Mapped[str | None] = mapped_column(String(255))
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    # Reactions of the contact to this message (WhatsApp ``reaction`` messages), one entry per reactor:
    # ``[{emoji, from, at}]``. A removed reaction stays as ``emoji: ""`` so that an older reaction
    # delivered late (Meta delivers at least once, in any order) cannot bring it back; readers show only
    # the entries with an emoji (``reactions.visible``).
    reactions: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)


class StatusBacklog(UUIDPrimaryKeyMixin, db.Model):
    """A status whose message is not known yet (the webhook outran the send's commit); applied when the
    message's provider id is stored."""

    __tablename__ = "message_status_backlog"
    __table_args__ = (
        UniqueConstraint("organization_id", "external_id", "status", name="uq_message_status_backlog_event"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(index=True)
    external_id: Mapped[str] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(16))
    timestamp: Mapped[datetime]
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CannedResponse(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """A saved reply of the organization, inserted in the composer by typing ``/<short_code>``."""

    __tablename__ = "canned_responses"
    __table_args__ = (
        UniqueConstraint("organization_id", "short_code", name="uq_canned_responses_organization_code"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    short_code: Mapped[str] = mapped_column(String(32))
    title: Mapped[str | None] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text)
