"""The telecom area's tables. Ids are prefixed strings (``usr_…``) as partners see them; catalogue rows are
shared by every organization of an environment, everything else belongs to one organization.

Money is stored as integer centavos (``*_cents``) and shown as peso strings; ledger entries are immutable
(an update or delete of one raises before it reaches the database).
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, UniqueConstraint, event
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, db, utcnow


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _id_column(prefix: str) -> Mapped[str]:
    return mapped_column(String(40), primary_key=True, default=lambda: new_id(prefix))


def _organization_column() -> Mapped[uuid.UUID]:
    return mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"), index=True)


class TelecomUser(TimestampMixin, db.Model):
    __tablename__ = "telecom_users"
    __table_args__ = (UniqueConstraint("organization_id", "email", name="uq_telecom_users_org_email"),)

    id: Mapped[str] = _id_column("usr")
    organization_id: Mapped[uuid.UUID] = _organization_column()
    email: Mapped[str] = mapped_column(String(254))
    full_name: Mapped[str] = mapped_column(String(200))
    person_type: Mapped[str] = mapped_column(String(16), default="person")
    phone_number: Mapped[str | None] = mapped_column(String(20))
    birthday: Mapped[date | None]
    preferred_locale: Mapped[str] = mapped_column(String(35), default="es-MX")
    status: Mapped[str] = mapped_column(String(16), default="active")
    kyc_status: Mapped[str] = mapped_column(String(20), default="unverified")
    extra: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)


class Address(TimestampMixin, db.Model):
    __tablename__ = "telecom_addresses"

    id: Mapped[str] = _id_column("adr")
    organization_id: Mapped[uuid.UUID] = _organization_column()
    user_id: Mapped[str] = mapped_column(ForeignKey("telecom_users.id", ondelete="CASCADE"), index=True)
    line1: Mapped[str] = mapped_column(String(200))
    line2: Mapped[str | None] = mapped_column(String(200))
    neighborhood: Mapped[str | None] = mapped_column(String(120))
    city: Mapped[str] = mapped_column(String(120))
    state: Mapped[str] = mapped_column(String(3))
    postal_code: Mapped[str] = mapped_column(String(5))
    country: Mapped[str] = mapped_column(String(2), default="MX")
    type: Mapped[str] = mapped_column(String(16), default="residential")


class KycVerification(TimestampMixin, db.Model):
    __tablename__ = "telecom_kyc_verifications"

    id: Mapped[str] = _id_column("kyc")
    organization_id: Mapped[uuid.UUID] = _organization_column()
    user_id: Mapped[str] = mapped_column(ForeignKey("telecom_users.id", ondelete="CASCADE"), index=True)
    person_type: Mapped[str] = mapped_column(String(16))
    curp: Mapped[str | None] = mapped_column(String(18), index=True)
    rfc: Mapped[str | None] = mapped_column(String(13), index=True)
    full_name: Mapped[str] = mapped_column(String(200))
    document_type: Mapped[str] = mapped_column(String(32))
    document_number: Mapped[str] = mapped_column(String(30))
    status: Mapped[str] = mapped_column(String(20), default="processing")
    last_error_code: Mapped[str | None] = mapped_column(String(64))
    last_error_reason: Mapped[str | None] = mapped_column(String(300))
    validation_result: Mapped[str | None] = mapped_column(String(16))
    validation_source: Mapped[str | None] = mapped_column(String(16))
    validated_at: Mapped[datetime | None]
    folio: Mapped[str | None] = mapped_column(String(40), unique=True)
    verified_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]


class Plan(TimestampMixin, db.Model):
    __tablename__ = "telecom_plans"

    id: Mapped[str] = mapped_column(String(60), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    description: Mapped[str | None] = mapped_column(String(500))
    status: Mapped[str] = mapped_column(String(16), default="available")
    price_cents: Mapped[int] = mapped_column(BigInteger)
    validity_days: Mapped[int]
    data_bytes: Mapped[int | None] = mapped_column(BigInteger)
    voice_seconds: Mapped[int | None] = mapped_column(BigInteger)
    sms_messages: Mapped[int | None] = mapped_column(BigInteger)
    sim_types: Mapped[list[str]] = mapped_column(JSONType, default=list)
    coverage: Mapped[list[str]] = mapped_column(JSONType, default=list)


class TopupOffer(TimestampMixin, db.Model):
    __tablename__ = "telecom_topups"

    id: Mapped[str] = mapped_column(String(60), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    status: Mapped[str] = mapped_column(String(16), default="available")
    price_cents: Mapped[int] = mapped_column(BigInteger)
    validity_days: Mapped[int]
    data_bytes: Mapped[int | None] = mapped_column(BigInteger)
    voice_seconds: Mapped[int | None] = mapped_column(BigInteger)
    sms_messages: Mapped[int | None] = mapped_column(BigInteger)
    compatible_plans: Mapped[list[str]] = mapped_column(JSONType, default=list)


class EsimOffer(TimestampMixin, db.Model):
    __tablename__ = "telecom_esim_offers"

    id: Mapped[str] = mapped_column(String(60), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    status: Mapped[str] = mapped_column(String(16), default="available")
    scope: Mapped[str] = mapped_column(String(16))
    countries: Mapped[list[str]] = mapped_column(JSONType, default=list)
    data_bytes: Mapped[int | None] = mapped_column(BigInteger)
    validity_days: Mapped[int]
    price_cents: Mapped[int] = mapped_column(BigInteger)
    activation_policy: Mapped[str] = mapped_column(String(16), default="first_usage")
    has_phone_number: Mapped[bool] = mapped_column(default=False)


class AreaCode(db.Model):
    __tablename__ = "telecom_area_codes"

    code: Mapped[str] = mapped_column(String(3), primary_key=True)
    digits: Mapped[int]
    local_number_length: Mapped[int]
    states: Mapped[list[str]] = mapped_column(JSONType, default=list)
    cities: Mapped[list[str]] = mapped_column(JSONType, default=list)
    available_for_new_lines: Mapped[bool] = mapped_column(default=True)


class Balance(db.Model):
    """The running totals of an organization's ledger, and the row its writers lock to take turns."""

    __tablename__ = "telecom_balances"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    ledger_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    held_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class LedgerEntry(db.Model):
    __tablename__ = "telecom_ledger_entries"
    __table_args__ = (Index("ix_telecom_ledger_entries_org_created", "organization_id", "created_at"),)

    id: Mapped[str] = _id_column("txn")
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(16))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    source_object: Mapped[str | None] = mapped_column(String(20))
    source_id: Mapped[str | None] = mapped_column(String(40), index=True)
    description: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


@event.listens_for(LedgerEntry, "before_update")
@event.listens_for(LedgerEntry, "before_delete")
def _entries_are_immutable(mapper: Any, connection: Any, target: LedgerEntry) -> None:
    # A ledger is trusted because its history cannot change: corrections are new entries.
    raise RuntimeError(f"ledger entry {target.id} is immutable")


class Subscription(TimestampMixin, db.Model):
    __tablename__ = "telecom_subscriptions"

    id: Mapped[str] = _id_column("sub")
    organization_id: Mapped[uuid.UUID] = _organization_column()
    user_id: Mapped[str] = mapped_column(ForeignKey("telecom_users.id"), index=True)
    plan_id: Mapped[str] = mapped_column(ForeignKey("telecom_plans.id"))
    type: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    phone_number: Mapped[str | None] = mapped_column(String(20))
    area_code: Mapped[str] = mapped_column(String(3))
    iccid: Mapped[str | None] = mapped_column(String(22))
    sim_status: Mapped[str] = mapped_column(String(16), default="inactive")
    esim_smdp_address: Mapped[str | None] = mapped_column(String(120))
    esim_matching_id: Mapped[str | None] = mapped_column(String(64))
    kyc_verification_id: Mapped[str] = mapped_column(ForeignKey("telecom_kyc_verifications.id"))
    identity_number: Mapped[str] = mapped_column(String(18), index=True)
    registration_folio: Mapped[str] = mapped_column(String(50))
    registered_at: Mapped[datetime]
    pending_order_id: Mapped[str | None] = mapped_column(String(40))
    scheduled_plan_id: Mapped[str | None] = mapped_column(String(60))
    suspension_reason: Mapped[str | None] = mapped_column(String(40))
    period_start: Mapped[datetime | None]
    period_end: Mapped[datetime | None]
    activated_at: Mapped[datetime | None]
    suspended_at: Mapped[datetime | None]
    canceled_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    extra: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)


class Order(TimestampMixin, db.Model):
    __tablename__ = "telecom_orders"

    id: Mapped[str] = _id_column("ord")
    organization_id: Mapped[uuid.UUID] = _organization_column()
    subscription_id: Mapped[str] = mapped_column(ForeignKey("telecom_subscriptions.id"), index=True)
    type: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="processing")
    amount_cents: Mapped[int | None] = mapped_column(BigInteger)
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    failure_code: Mapped[str | None] = mapped_column(String(64))
    failure_message: Mapped[str | None] = mapped_column(String(300))
    completed_at: Mapped[datetime | None]
