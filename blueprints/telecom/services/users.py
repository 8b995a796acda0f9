"""Users (the partner's customers) and their Mexican addresses."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from blueprints.audit import services as audit_log
from blueprints.telecom.mexico import STATES, state_code
from blueprints.telecom.models import Address, Subscription, TelecomUser
from blueprints.telecom.services.common import CursorPage, conflict, cursor_page, invalid, publish
from core.db import db
from core.errors import not_found
from core.phones import InvalidPhoneNumber, normalize_phone
from core.tenancy import get_for_org

USER_STATUSES = ("active", "blocked", "deleted")
PERSON_TYPES = ("person", "company")
ADDRESS_TYPES = ("residential", "billing", "shipping")


@dataclass
class UserFields:
    email: str
    full_name: str
    person_type: str = "person"
    phone_number: str | None = None
    birthday: date | None = None
    preferred_locale: str = "es-MX"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class AddressFields:
    line1: str
    city: str
    state: str
    postal_code: str
    line2: str | None = None
    neighborhood: str | None = None
    country: str = "MX"
    type: str = "residential"


def _phone(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalize_phone(value, "MX")
    except InvalidPhoneNumber:
        raise invalid("phone_number", "not a valid phone number in E.164", "phone_number_invalid") from None


def _email(value: str) -> str:
    return value.strip().lower()


def _email_taken(organization_id: uuid.UUID, email: str, except_id: str | None = None) -> bool:
    statement = select(TelecomUser.id).where(
        TelecomUser.organization_id == organization_id, TelecomUser.email == email
    )
    if except_id is not None:
        statement = statement.where(TelecomUser.id != except_id)
    return db.session.scalar(statement) is not None


def _user_exists_error(email: str) -> Exception:
    return conflict("user_already_exists", f"A user with the email {email} already exists", "email")


def create_user(organization_id: uuid.UUID, fields: UserFields) -> TelecomUser:
    email = _email(fields.email)
    if _email_taken(organization_id, email):
        raise _user_exists_error(email)
    user = TelecomUser(
        organization_id=organization_id,
        email=email,
        full_name=fields.full_name,
        person_type=fields.person_type,
        phone_number=_phone(fields.phone_number),
        birthday=fields.birthday,
        preferred_locale=fields.preferred_locale,
        extra=dict(fields.metadata),
    )
    try:
        with db.session.begin_nested():  # a concurrent create with the same email loses here, as a 409
            db.session.add(user)
    except IntegrityError:
        raise _user_exists_error(email) from None
    publish("user.created", organization_id, {"id": user.id, "object": "user"})
    return user


def get_user(organization_id: uuid.UUID, user_id: str) -> TelecomUser:
    return get_for_org(TelecomUser, user_id, organization_id, "User")


def active_user(organization_id: uuid.UUID, user_id: str) -> TelecomUser:
    user = get_user(organization_id, user_id)
    if user.status != "active":
        raise conflict("user_not_active", f"The user is {user.status}", "user")
    return user


def list_users(
    organization_id: uuid.UUID,
    *,
    status: str | None = None,
    email: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[TelecomUser]:
    statement = select(TelecomUser).where(TelecomUser.organization_id == organization_id)
    if status is not None:
        statement = statement.where(TelecomUser.status == status)
    if email is not None:
        statement = statement.where(TelecomUser.email == _email(email))
    return cursor_page(TelecomUser, statement, organization_id, limit=limit, starting_after=starting_after)


def update_user(organization_id: uuid.UUID, user_id: str, changes: dict[str, Any]) -> TelecomUser:
    """Apply the sent fields; ``status`` moves only between ``active`` and ``blocked`` here."""
    user = get_user(organization_id, user_id)
    if user.status == "deleted":
        raise conflict("user_not_active", "The user is deleted")
    if "email" in changes:
        email = _email(changes["email"])
        if _email_taken(organization_id, email, except_id=user.id):
            raise _user_exists_error(email)
        user.email = email
    if "phone_number" in changes:
        user.phone_number = _phone(changes["phone_number"])
    if "status" in changes:
        if changes["status"] == "deleted":
            raise invalid("status", "use DELETE to delete a user")
        user.status = changes["status"]
    for name in ("full_name", "person_type", "birthday", "preferred_locale"):
        if name in changes:
            setattr(user, name, changes[name])
    if "metadata" in changes:
        user.extra = dict(changes["metadata"] or {})
    db.session.flush()
    publish("user.updated", organization_id, {"id": user.id, "object": "user"})
    return user


def delete_user(organization_id: uuid.UUID, user_id: str) -> TelecomUser:
    user = get_user(organization_id, user_id)
    if user.status == "deleted":
        return user
    open_lines = db.session.scalar(
        select(func.count())
        .select_from(Subscription)
        .where(
            Subscription.organization_id == organization_id,
            Subscription.user_id == user.id,
            Subscription.status != "ended",
        )
    )
    if open_lines:
        raise conflict(
            "user_has_active_subscriptions", f"The user has {open_lines} subscription(s) not ended"
        )
    user.status = "deleted"
    db.session.flush()
    audit_log.record("telecom_user.deleted", "telecom_user", user.id, organization_id=organization_id)
    publish("user.deleted", organization_id, {"id": user.id, "object": "user"})
    return user


# Addresses ---------------------------------------------------------------------------------------------


def _address_values(values: dict[str, Any]) -> dict[str, Any]:
    """Mexican rules: a 5-digit postal code, one of the 32 states (stored as its ISO code), country MX."""
    checked = dict(values)
    if "state" in checked:
        code = state_code(str(checked["state"]))
        if code is None:
            raise invalid(
                "state", "not a Mexican state (ISO 3166-2:MX code such as CMX, or the state's name)"
            )
        checked["state"] = code
    if "postal_code" in checked and not (
        len(checked["postal_code"]) == 5
        and checked["postal_code"].isascii()
        and checked["postal_code"].isdigit()
    ):
        raise invalid("postal_code", "must be exactly 5 digits")
    if "country" in checked and checked["country"] != "MX":
        raise invalid("country", "only MX is supported")
    return checked


def create_address(organization_id: uuid.UUID, user_id: str, fields: AddressFields) -> Address:
    user = active_user(organization_id, user_id)
    address = Address(organization_id=organization_id, user_id=user.id, **_address_values(asdict(fields)))
    db.session.add(address)
    db.session.flush()
    return address


def list_addresses(organization_id: uuid.UUID, user_id: str) -> list[Address]:
    user = get_user(organization_id, user_id)
    return list(
        db.session.scalars(
            select(Address)
            .where(Address.organization_id == organization_id, Address.user_id == user.id)
            .order_by(Address.created_at, Address.id)
        )
    )


def get_address(organization_id: uuid.UUID, user_id: str, address_id: str) -> Address:
    address = get_for_org(Address, address_id, organization_id, "Address")
    if address.user_id != get_user(organization_id, user_id).id:
        raise not_found("Address")  # another user's address reads as missing, like another org's
    return address


def update_address(
    organization_id: uuid.UUID, user_id: str, address_id: str, changes: dict[str, Any]
) -> Address:
    address = get_address(organization_id, user_id, address_id)
    active_user(organization_id, user_id)
    for name, value in _address_values(changes).items():
        setattr(address, name, value)
    db.session.flush()
    return address


def delete_address(organization_id: uuid.UUID, user_id: str, address_id: str) -> str:
    address = get_address(organization_id, user_id, address_id)
    db.session.delete(address)
    db.session.flush()
    return address.id


def state_name(code: str) -> str:
    return STATES.get(code, code)
