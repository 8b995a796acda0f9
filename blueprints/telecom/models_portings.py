"""Number portability (port-in) requests: a Mexican number moved from its donor carrier to a line of ours.

The NIP (4 digits the holder gets by texting "NIP" to 051, valid 5 calendar days) is write-only: the API
never returns it, and it is erased as soon as it can no longer be used (the port ended, or the ABD said it
was wrong or lapsed). ``nip_expires_at`` outlives it: it is when a porting not yet requested expires.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from blueprints.telecom.models import new_id
from core.db import JSONType, TimestampMixin, db

# A porting still moving: at most one per number and organization, and the ones the sweeps look at.
OPEN_STATUSES = ("pending", "requested", "declined")
FINAL_STATUSES = ("completed", "canceled", "expired")


class Porting(TimestampMixin, db.Model):
    __tablename__ = "telecom_portings"
    __table_args__ = (
        # the list (newest first, Stripe cursor) and its filters
        Index("ix_telecom_portings_org_created", "organization_id", "created_at"),
        Index("ix_telecom_portings_org_status", "organization_id", "status"),
        Index("ix_telecom_portings_org_phone", "organization_id", "phone_number"),
        # the sweeps: due outcomes and lapsing NIPs, across organizations
        Index("ix_telecom_portings_status_scheduled", "status", "scheduled_for"),
        Index("ix_telecom_portings_status_nip_expires", "status", "nip_expires_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("prt"))
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("telecom_users.id"), index=True)
    subscription_id: Mapped[str | None] = mapped_column(
        ForeignKey("telecom_subscriptions.id"), index=True, unique=True
    )
    phone_number: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    nip: Mapped[str | None] = mapped_column(String(4))
    nip_issued_at: Mapped[datetime]
    nip_expires_at: Mapped[datetime]
    holder_full_name: Mapped[str] = mapped_column(String(200))
    holder_person_type: Mapped[str] = mapped_column(String(16))
    holder_curp: Mapped[str | None] = mapped_column(String(18))
    holder_rfc: Mapped[str | None] = mapped_column(String(13))
    donor_provider: Mapped[str | None] = mapped_column(String(60))
    declined_code: Mapped[str | None] = mapped_column(String(40))
    declined_message: Mapped[str | None] = mapped_column(String(300))
    declined_attempts: Mapped[int] = mapped_column(default=0)
    last_declined_at: Mapped[datetime | None]
    requested_at: Mapped[datetime | None]
    scheduled_for: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    expired_at: Mapped[datetime | None]
    extra: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
