"""Organization addresses: the channel numbers and pages an organization sends from and receives on."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow

SERVICES = ("whatsapp", "instagram", "messenger")
PROVIDERS = ("meta", "simulator")
# ``connected`` and ``active`` may send (the spec names both); ``reauth_required`` is set when the
# provider rejects the access token (Meta code 190) and cleared by connecting again with a new token.
ADDRESS_STATUSES = ("connected", "active", "disconnected", "reauth_required")
SENDABLE_STATUSES = ("connected", "active")


class OrganizationAddress(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """One channel account: a WhatsApp phone-number id, an Instagram account id or a Facebook Page id.

    ``address`` is the provider's id, the value webhooks carry, so it is unique per service within a
    store: one number belongs to one organization.
    """

    __tablename__ = "organization_addresses"
    __table_args__ = (
        UniqueConstraint("service", "address", name="uq_organization_addresses_service_address"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    service: Mapped[str] = mapped_column(String(16))
    address: Mapped[str] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(16), default="meta")
    status: Mapped[str] = mapped_column(String(24), default="connected")
    extra: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Fernet token (see channels.crypto); never serialised.
    access_token_encrypted: Mapped[str | None] = mapped_column(Text)

    @property
    def has_access_token(self) -> bool:
        return bool(self.access_token_encrypted)

    @property
    def can_send(self) -> bool:
        return self.status in SENDABLE_STATUSES


class DeadLetter(UUIDPrimaryKeyMixin, db.Model):
    """An inbound item (one message or status of a provider delivery) that could not be stored.

    ``raw`` is the item as received, as ASCII JSON text (a NUL or a lone surrogate stays an escape, so the
    text itself can always be stored), cut at ``RAW_LIMIT`` characters (``raw_truncated``). An item whose
    organization could not be determined has ``organization_id`` null: only operators see it (CLI).
    """

    __tablename__ = "webhook_dead_letters"

    organization_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    received_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    source: Mapped[str] = mapped_column(String(32))
    service: Mapped[str | None] = mapped_column(String(16))
    organization_address: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(String(500))
    raw: Mapped[str] = mapped_column(Text)
    raw_truncated: Mapped[bool] = mapped_column(default=False)
