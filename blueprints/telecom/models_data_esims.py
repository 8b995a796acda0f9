"""Travel eSIMs (``des_…``) bought from the eSIM offers catalogue, and their top-ups (``dtu_…``).

The supplier's figures (status, data remaining, activation and expiry) are copied onto the row each time
it is refreshed (``reported_at`` says when), so lists and filters read the last known state without asking
the supplier; prices are integer centavos, as everywhere in the area.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from blueprints.telecom.models import new_id
from core.db import JSONType, TimestampMixin, db


class DataEsim(TimestampMixin, db.Model):
    __tablename__ = "telecom_data_esims"
    __table_args__ = (Index("ix_telecom_data_esims_status", "status"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("des"))
    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[str | None] = mapped_column(ForeignKey("telecom_users.id"), index=True)
    offer_id: Mapped[str] = mapped_column(ForeignKey("telecom_esim_offers.id"))
    status: Mapped[str] = mapped_column(String(16), default="provisioning")
    price_cents: Mapped[int] = mapped_column(BigInteger)
    # What was sold, copied from the offer: a later catalogue load never changes a bought eSIM.
    offer_data_bytes: Mapped[int | None] = mapped_column(BigInteger)
    offer_validity_days: Mapped[int]
    activation_policy: Mapped[str] = mapped_column(String(16))
    iccid: Mapped[str | None] = mapped_column(String(22))
    smdp_address: Mapped[str | None] = mapped_column(String(120))
    matching_id: Mapped[str | None] = mapped_column(String(64))
    supplier: Mapped[str | None] = mapped_column(String(40))
    supplier_reference: Mapped[str | None] = mapped_column(String(64))
    data_total_bytes: Mapped[int | None] = mapped_column(BigInteger)
    data_remaining_bytes: Mapped[int | None] = mapped_column(BigInteger)
    low_data_notified: Mapped[bool] = mapped_column(default=False)
    issued_at: Mapped[datetime | None]
    activated_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]
    depleted_at: Mapped[datetime | None]
    reported_at: Mapped[datetime | None]
    failure_code: Mapped[str | None] = mapped_column(String(64))
    failure_message: Mapped[str | None] = mapped_column(String(300))
    extra: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)


class DataEsimTopup(TimestampMixin, db.Model):
    __tablename__ = "telecom_data_esim_topups"

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=lambda: new_id("dtu"))
    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    data_esim_id: Mapped[str] = mapped_column(
        ForeignKey("telecom_data_esims.id", ondelete="CASCADE"), index=True
    )
    offer_id: Mapped[str] = mapped_column(ForeignKey("telecom_esim_offers.id"))
    status: Mapped[str] = mapped_column(String(16), default="processing")
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    data_bytes: Mapped[int | None] = mapped_column(BigInteger)
    validity_days: Mapped[int]
    failure_code: Mapped[str | None] = mapped_column(String(64))
    failure_message: Mapped[str | None] = mapped_column(String(300))
    completed_at: Mapped[datetime | None]


def activation_code(esim: DataEsim) -> str | None:
    """The LPA activation code a phone reads (``LPA:1$<SM-DP+ address>$<matching id>``), once issued."""
    if esim.smdp_address and esim.matching_id:
        return f"LPA:1${esim.smdp_address}${esim.matching_id}"
    return None
