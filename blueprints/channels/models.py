"""Organization addresses: the channel numbers and pages an organization sends from and receives on."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db

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
