"""Rules for organization addresses: connecting one, listing them, finding the one a webhook names."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from blueprints.audit import services as audit_log
from blueprints.channels.crypto import encrypt_token
from blueprints.channels.models import (
    ADDRESS_STATUSES,
    PROVIDERS,
    SENDABLE_STATUSES,
    SERVICES,
    OrganizationAddress,
)
from blueprints.channels.provider_ids import id_form
from blueprints.channels.schemas import AddressOut
from blueprints.organizations.models import Organization
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.phones import InvalidPhoneNumber, normalize_phone


@dataclass(frozen=True)
class Connection:
    service: str
    address: str
    provider: str = "meta"
    phone_number: str | None = None
    waba_id: str | None = None
    verified_name: str | None = None
    access_token: str | None = None
    status: str = "connected"


def connect_address(organization_id: uuid.UUID, connection: Connection) -> OrganizationAddress:
    """Create the address, or update it when the organization connects it again (new token, new name).

    Connecting again with a token clears ``reauth_required``. An address owned by another organization is
    refused: webhooks name only the address, so it must lead to exactly one organization.
    """
    if connection.service not in SERVICES:
        raise ApiError(400, f"service: must be one of {', '.join(SERVICES)}", param="service")
    if connection.provider not in PROVIDERS:
        raise ApiError(400, f"provider: must be one of {', '.join(PROVIDERS)}", param="provider")
    if connection.status not in ADDRESS_STATUSES:
        raise ApiError(400, f"status: must be one of {', '.join(ADDRESS_STATUSES)}", param="status")
    address_id = connection.address.strip()
    if not address_id or len(address_id) > 64:
        raise ApiError(400, "address: must be 1-64 characters", param="address")
    # Both ids become segments of the provider's URLs (sends, template lists): only the provider's form.
    ids = id_form(connection.provider)
    ids.check(address_id, "address")
    waba_id = (connection.waba_id or "").strip() or None
    if waba_id is not None:
        ids.check(waba_id, "waba_id")
    if db.session.get(Organization, organization_id) is None:
        raise ApiError(404, f"Organization {organization_id} not found")
    phone_number = None
    if connection.phone_number:
        try:
            phone_number = normalize_phone(connection.phone_number)
        except InvalidPhoneNumber as exc:
            raise ApiError(400, f"phone_number: {exc}", param="phone_number") from exc
    existing = db.session.scalar(
        select(OrganizationAddress).where(
            OrganizationAddress.service == connection.service, OrganizationAddress.address == address_id
        )
    )
    if existing is not None and existing.organization_id != organization_id:
        raise ApiError(409, f"address: {address_id} is connected to another organization", param="address")
    record = existing or OrganizationAddress(
        organization_id=organization_id, service=connection.service, address=address_id, extra={}
    )
    extra = dict(record.extra or {})
    for key, value in (
        ("phone_number", phone_number),
        ("waba_id", waba_id),
        ("verified_name", connection.verified_name),
    ):
        if value:
            extra[key] = value
    record.extra = extra
    record.provider = connection.provider
    record.status = connection.status
    if connection.access_token:
        record.access_token_encrypted = encrypt_token(connection.access_token.strip())
    if existing is None:
        db.session.add(record)
    db.session.flush()
    audit_log.record(
        "channel.connected",
        "organization_address",
        f"{record.service}:{record.address}",
        [name for name, value in vars(connection).items() if value],
        organization_id=organization_id,
    )
    publish("organization_address.connected", organization_id, AddressOut.dump(record))
    return record


def list_addresses(organization_id: uuid.UUID) -> list[OrganizationAddress]:
    return list(
        db.session.scalars(
            select(OrganizationAddress)
            .where(OrganizationAddress.organization_id == organization_id)
            .order_by(OrganizationAddress.created_at, OrganizationAddress.address)
        )
    )


def get_address(organization_id: uuid.UUID, address: str) -> OrganizationAddress | None:
    return db.session.scalar(
        select(OrganizationAddress).where(
            OrganizationAddress.organization_id == organization_id,
            OrganizationAddress.address == address.strip(),
        )
    )


def addresses_by_provider_id(keys: set[tuple[str, str]]) -> dict[tuple[str, str], OrganizationAddress]:
    """Addresses for (service, provider id) pairs named by a webhook delivery, in one query."""
    if not keys:
        return {}
    rows = db.session.scalars(
        select(OrganizationAddress).where(OrganizationAddress.address.in_({address for _, address in keys}))
    )
    return {(row.service, row.address): row for row in rows if (row.service, row.address) in keys}


def connected_services(organization_id: uuid.UUID) -> list[str]:
    """The services (``whatsapp``, ``instagram``, ``messenger``) with an address that can send."""
    return list(
        db.session.scalars(
            select(OrganizationAddress.service)
            .where(
                OrganizationAddress.organization_id == organization_id,
                OrganizationAddress.status.in_(SENDABLE_STATUSES),
            )
            .distinct()
            .order_by(OrganizationAddress.service)
        )
    )
