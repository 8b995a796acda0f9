"""Organizations (tenants) and their API keys. Each environment's store holds its own copy."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow

PRODUCTS = ("SIM", "ESIM", "TRAVEL_ESIM")


class Organization(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "organizations"

    name: Mapped[str] = mapped_column(String(200))
    products: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # The IANA zone the desk shows times in (its people's wall clock); the API always speaks UTC.
    timezone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")

    api_keys: Mapped[list[ApiKey]] = relationship(back_populates="organization", lazy="raise")

    def has_product(self, product: str) -> bool:
        return product in (self.products or [])


class ApiKey(UUIDPrimaryKeyMixin, db.Model):
    """A secret key, stored as its SHA-256 digest; ``prefix`` is the part shown in listings."""

    __tablename__ = "api_keys"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    environment: Mapped[str] = mapped_column(String(16))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(120))
    active: Mapped[bool] = mapped_column(default=True)
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    organization: Mapped[Organization] = relationship(back_populates="api_keys", lazy="raise")
