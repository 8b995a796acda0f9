"""The delivery log of agent notifications: one row per target of a trigger (an e-mail address, a WhatsApp
number, the webhook), written in the transaction that records the trigger, so a crash never loses one,
and sent by a job that keeps the row's status, attempts and last error up to date."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db

CHANNELS = ("email", "whatsapp", "webhook")
# pending: queued, not tried yet; retrying: failed, next attempt at next_attempt_at; sent: accepted by the
# SMTP server, WhatsApp's provider or the receiver (2xx); failed: given up (permanent error, or attempts
# exhausted); skipped: not sendable by configuration (no SMTP server configured), with the reason.
STATUSES = ("pending", "retrying", "sent", "failed", "skipped")
OPEN_STATUSES = ("pending", "retrying")


class NotificationDelivery(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "notification_deliveries"
    __table_args__ = (
        # the agent's delivery log, newest first
        Index("ix_notification_deliveries_agent", "organization_id", "agent_id", "created_at"),
        # the sweep of due retries
        Index("ix_notification_deliveries_due", "status", "next_attempt_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    # The members area's id of the AI agent (no foreign key across areas) and its name when triggered.
    agent_id: Mapped[str] = mapped_column(String(64))
    agent_name: Mapped[str | None] = mapped_column(String(200))
    # One notification (one trigger) fans out to several deliveries sharing this id.
    notification_id: Mapped[str] = mapped_column(String(40), index=True)
    trigger: Mapped[str] = mapped_column(String(40))
    channel: Mapped[str] = mapped_column(String(16))
    target: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(String(500))
    # The receiver's HTTP status (webhook) or the SMTP server's reply code (email) of the last attempt.
    last_response_code: Mapped[int | None]
    sent_at: Mapped[datetime | None]
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
