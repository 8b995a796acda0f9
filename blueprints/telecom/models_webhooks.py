"""Lifecycle webhooks: stored events, the partner's endpoints and each signed delivery of an event to one.

An event row is written in the same transaction as the change it reports (``services.common.publish``), so
an event exists exactly when its change committed, and its deliveries are rows too: a crash never loses a
delivery, and the delivery log is what a partner reads to debug their receiver. Endpoint secrets are
needed in clear to sign, so they are stored encrypted (Fernet), never hashed.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blueprints.telecom.models import new_id
from core.db import JSONType, TimestampMixin, db, utcnow


def _organization_column() -> Mapped[uuid.UUID]:
    return mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"), index=True)


class TelecomEvent(db.Model):
    """Something that happened to a partner's resource, kept 30 days (``GET /v1/partner/events``)."""

    __tablename__ = "telecom_events"
    __table_args__ = (
        Index("ix_telecom_events_org_created", "organization_id", "created_at"),
        Index("ix_telecom_events_org_type_created", "organization_id", "type", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("evt"))
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Set from the area's webhook clock (not a column default) so that tests can age events.
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class WebhookEndpoint(TimestampMixin, db.Model):
    __tablename__ = "telecom_webhook_endpoints"

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("whe"))
    organization_id: Mapped[uuid.UUID] = _organization_column()
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str | None] = mapped_column(String(500))
    enabled_events: Mapped[list[str]] = mapped_column(JSONType, default=list)
    status: Mapped[str] = mapped_column(String(16), default="enabled")
    disabled_reason: Mapped[str | None] = mapped_column(String(32))
    disabled_at: Mapped[datetime | None]
    # Fernet ciphertexts of ``whsec_…``; the previous secret signs too until it expires (a roll with overlap).
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    previous_secret_ciphertext: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None]
    # First failed attempt since the last 2xx: the endpoint is disabled once it has failed for 3 days.
    failing_since: Mapped[datetime | None]
    extra: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)


class WebhookDelivery(TimestampMixin, db.Model):
    """One event for one endpoint: its attempts, the last answer and when the next attempt is due."""

    __tablename__ = "telecom_webhook_deliveries"
    __table_args__ = (
        Index("ix_telecom_webhook_deliveries_endpoint_created", "endpoint_id", "created_at"),
        Index("ix_telecom_webhook_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("whd"))
    organization_id: Mapped[uuid.UUID] = _organization_column()
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("telecom_webhook_endpoints.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(ForeignKey("telecom_events.id", ondelete="CASCADE"), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(default=0)
    # Attempts of the automatic schedule only: a manual retry never shifts the backoff.
    automatic_attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None]
    manual_requested_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    last_response_status: Mapped[int | None]
    last_response_body: Mapped[str | None] = mapped_column(String(1024))
    last_error: Mapped[str | None] = mapped_column(String(300))
    last_duration_ms: Mapped[int | None]
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    completed_at: Mapped[datetime | None]
