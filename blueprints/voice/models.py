"""The voice area's tables: the organization's numbers and its calls (docs/voice.md)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db

PROVIDERS = ("twilio", "simulator")
ENVS = ("live", "sandbox")
DIRECTIONS = ("inbound", "outbound")
TERMINAL = ("completed", "busy", "no_answer", "failed", "canceled")
STATUSES = ("queued", "ringing", "in_progress", *TERMINAL)
# A call never moves to a lower rank; a terminal call never changes (docs/voice.md, "States").
RANK = {"queued": 0, "ringing": 1, "in_progress": 2, **{status: 3 for status in TERMINAL}}


class VoiceNumber(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """A number the organization calls from and is called on; unique in a store (one organization's)."""

    __tablename__ = "voice_numbers"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[str] = mapped_column(String(32), unique=True)
    provider: Mapped[str] = mapped_column(String(16))
    env: Mapped[str] = mapped_column(String(16), default="live")
    account_sid: Mapped[str | None] = mapped_column(String(64), index=True)
    auth_token_encrypted: Mapped[str | None] = mapped_column(Text)
    # Who answers inbound calls: an AI member or a human member (member ids, no foreign key across areas).
    agent_id: Mapped[str | None] = mapped_column(String(64))
    member_id: Mapped[str | None] = mapped_column(String(64))

    @property
    def has_auth_token(self) -> bool:
        return bool(self.auth_token_encrypted)


class Call(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """One call, inbound or outbound, with its lifecycle as the provider reported it."""

    __tablename__ = "voice_calls"
    __table_args__ = (Index("ix_voice_calls_organization_id_created_at", "organization_id", "created_at"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    number_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("voice_numbers.id", ondelete="SET NULL"), index=True
    )
    direction: Mapped[str] = mapped_column(String(16))
    from_number: Mapped[str] = mapped_column(String(32))
    to_number: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    provider: Mapped[str] = mapped_column(String(16))
    provider_call_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    agent_id: Mapped[str | None] = mapped_column(String(64))
    member_id: Mapped[str | None] = mapped_column(String(64))
    contact_id: Mapped[str | None] = mapped_column(String(64), index=True)
    campaign_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    started_at: Mapped[datetime | None]
    answered_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    duration_seconds: Mapped[int | None] = mapped_column(Integer)
    ended_reason: Mapped[str | None] = mapped_column(String(32))
    recording_url: Mapped[str | None] = mapped_column(String(2048))
    transcript: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    summary: Mapped[str | None] = mapped_column(Text)
    transfer: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # The ConversationRelay session that took the call (set once, at its setup): a second socket opened
    # with the same token is refused, so one agent session runs per call.
    relay_session_id: Mapped[str | None] = mapped_column(String(64))
    # The highest status-callback SequenceNumber applied (-1: none yet); later or equal ones are ignored.
    last_sequence_number: Mapped[int] = mapped_column(Integer, default=-1)
    call_metadata: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)


CAMPAIGN_STATUSES = ("draft", "scheduled", "running", "paused", "completed", "canceled")
# pending (due at due_at, or at once) -> calling (claimed; its call placed and live) -> completed |
# pending again (busy, no_answer, failed: a retry) | exhausted (max_attempts reached) | failed (never again:
# refused, or the worker died while dialling) | canceled (the campaign was canceled before its turn)
RECIPIENT_STATES = ("pending", "calling", "completed", "failed", "exhausted", "canceled")


class VoiceCampaign(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """Outbound calls to many recipients, run on the core campaign engine (docs/voice.md, "Campaigns"):
    ``lease_owner``/``lease_expires_at`` are the engine's worker lease on this row."""

    __tablename__ = "voice_campaigns"
    __table_args__ = (
        Index("ix_voice_campaigns_organization_id_created_at", "organization_id", "created_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    agent_id: Mapped[str] = mapped_column(String(64))
    from_number: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="draft", index=True)
    window: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    max_concurrent: Mapped[int] = mapped_column(Integer)
    max_attempts: Mapped[int] = mapped_column(Integer)
    retry_minutes: Mapped[int] = mapped_column(Integer)
    recipients_total: Mapped[int] = mapped_column(Integer, default=0)
    rejected_total: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    # When the next run is due (the window opens, a retry falls due); the periodic sweep enqueues it then.
    next_run_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]


class VoiceCampaignRecipient(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """One number a campaign calls, with its attempts (``attempt_log``: call id and outcome of each)."""

    __tablename__ = "voice_campaign_recipients"
    __table_args__ = (
        Index("ix_voice_campaign_recipients_claim", "campaign_id", "state", "due_at"),
        Index("ix_voice_campaign_recipients_position", "campaign_id", "position"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    campaign_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("voice_campaigns.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    number: Mapped[str] = mapped_column(String(32))
    contact_id: Mapped[str | None] = mapped_column(String(64))
    variables: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    due_at: Mapped[datetime | None]
    # The call of the current attempt: set (and committed) before the provider is dialled.
    call_id: Mapped[uuid.UUID | None]
    attempt_log: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    error: Mapped[str | None] = mapped_column(String(200))
