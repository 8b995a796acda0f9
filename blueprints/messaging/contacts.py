"""Messaging contacts: CRUD and search, each with its channel addresses, and the CRM link."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import exists, func, or_, select, update
from sqlalchemy.orm import selectinload

from blueprints.messaging.models import (
    Contact,
    ContactAddress,
    Conversation,
)
from blueprints.messaging.schemas import (
    ContactIn,
    ContactListQuery,
    ContactPatch,
)
from blueprints.messaging.serialize import serialize_contact
from blueprints.messaging.threads import (
    contact_address_for,
    parse_uuid,
    resolve_crm_contact,
)
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.pagination import paginate
from core.phones import InvalidPhoneNumber, normalize_phone

# ---------------------------------------------------------------------------------------------------
# Messaging contacts


def _identities(organization_id: uuid.UUID, addresses: list[Any]) -> list[tuple[str, str]]:
    identities: list[tuple[str, str]] = []
    for position, item in enumerate(addresses):
        address = contact_address_for(item.service, item.address, f"addresses.{position}.address")
        if (item.service, address) in identities:
            raise ApiError(400, f"addresses.{position}: repeated address", param=f"addresses.{position}")
        identities.append((item.service, address))
    return identities


def _check_free(
    organization_id: uuid.UUID, identities: list[tuple[str, str]], contact_id: uuid.UUID | None
) -> None:
    if not identities:
        return
    taken = db.session.execute(
        select(ContactAddress.service, ContactAddress.address, ContactAddress.contact_id).where(
            ContactAddress.organization_id == organization_id,
            ContactAddress.address.in_([a for _, a in identities]),
        )
    ).all()
    for service, address, owner in taken:
        if (service, address) in identities and owner != contact_id:
            raise ApiError(409, f"Contact address {service}:{address} already belongs to another contact")


def _load_contact(organization_id: uuid.UUID, contact_id: str | uuid.UUID) -> Contact:
    identifier = parse_uuid(contact_id)
    contact = (
        db.session.scalar(
            select(Contact)
            .options(selectinload(Contact.addresses))
            .where(Contact.id == identifier, Contact.organization_id == organization_id)
        )
        if identifier
        else None
    )
    if contact is None:
        raise ApiError(404, "Contact not found")
    return contact


def create_contact(organization_id: uuid.UUID, body: ContactIn) -> dict[str, Any]:
    identities = _identities(organization_id, body.addresses)
    _check_free(organization_id, identities, None)
    crm_contact_id = body.crm_contact_id
    if crm_contact_id is None:
        crm_contact_id = next(
            (found for s, a in identities if (found := resolve_crm_contact(organization_id, s, a))), None
        )
    contact = Contact(
        id=uuid.uuid4(),
        organization_id=organization_id,
        name=body.name,
        crm_contact_id=crm_contact_id,
        extra=body.extra,
    )
    contact.addresses = [
        ContactAddress(organization_id=organization_id, service=s, address=a) for s, a in identities
    ]
    db.session.add(contact)
    db.session.flush()
    data = serialize_contact(contact)
    publish("contact.created", organization_id, data)
    db.session.commit()
    return data


def list_contacts(organization_id: uuid.UUID, query: ContactListQuery) -> dict[str, Any]:
    statement = (
        select(Contact)
        .options(selectinload(Contact.addresses))
        .where(Contact.organization_id == organization_id)
    )
    if query.search:
        pattern = f"%{query.search.lower()}%"
        statement = statement.where(
            or_(
                func.lower(Contact.name).like(pattern),
                exists().where(
                    ContactAddress.contact_id == Contact.id, func.lower(ContactAddress.address).like(pattern)
                ),
            )
        )
    if query.service:
        statement = statement.where(
            exists().where(ContactAddress.contact_id == Contact.id, ContactAddress.service == query.service)
        )
    if query.crm_contact_id:
        statement = statement.where(Contact.crm_contact_id == query.crm_contact_id)
    statement = statement.order_by(Contact.created_at.desc(), Contact.id)
    page = paginate(statement, offset=query.skip, limit=query.take)
    return {
        "data": [serialize_contact(c) for c in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


def get_contact(organization_id: uuid.UUID, contact_id: str) -> dict[str, Any]:
    return serialize_contact(_load_contact(organization_id, contact_id))


def update_contact(organization_id: uuid.UUID, contact_id: str, body: ContactPatch) -> dict[str, Any]:
    contact = _load_contact(organization_id, contact_id)
    sent = body.model_fields_set
    if "name" in sent:
        contact.name = body.name
    if "crm_contact_id" in sent:
        contact.crm_contact_id = body.crm_contact_id
    if "extra" in sent:
        contact.extra = {**(contact.extra or {}), **(body.extra or {})}
    if "addresses" in sent and body.addresses is not None:
        identities = _identities(organization_id, body.addresses)
        _check_free(organization_id, identities, contact.id)
        keep = {(a.service, a.address): a for a in contact.addresses}
        contact.addresses = [
            keep.get((s, a)) or ContactAddress(organization_id=organization_id, service=s, address=a)
            for s, a in identities
        ]
    db.session.flush()
    data = serialize_contact(contact)
    publish("contact.updated", organization_id, data)
    db.session.commit()
    return data


def delete_contact(organization_id: uuid.UUID, contact_id: str) -> None:
    contact = _load_contact(organization_id, contact_id)
    if db.session.scalar(select(Conversation.id).where(Conversation.contact_id == contact.id).limit(1)):
        raise ApiError(409, "Contact has conversations; delete or archive them first")
    db.session.delete(contact)
    publish("contact.deleted", organization_id, {"id": str(contact.id)})
    db.session.commit()


def link_crm_contact(
    organization_id: uuid.UUID,
    phone: str,
    crm_contact_id: str | None,
    *,
    only_if_linked_to: str | None = None,
) -> int:
    """For the CRM area: link the messaging contacts whose WhatsApp number is ``phone`` (any format) to
    a CRM contact (or unlink with None). ``only_if_linked_to`` touches only contacts still linked to that
    CRM contact (a number that went away from it). Returns how many contacts changed."""
    try:
        e164 = normalize_phone(phone)
    except InvalidPhoneNumber:
        return 0
    owners = select(ContactAddress.contact_id).where(
        ContactAddress.organization_id == organization_id,
        ContactAddress.service == "whatsapp",
        ContactAddress.address == e164,
    )
    conditions = [Contact.organization_id == organization_id, Contact.id.in_(owners)]
    if only_if_linked_to is not None:
        conditions.append(Contact.crm_contact_id == only_if_linked_to)
    changed = db.session.execute(
        update(Contact).where(*conditions).values(crm_contact_id=crm_contact_id)
    ).rowcount
    return int(changed or 0)


def move_crm_links(organization_id: uuid.UUID, source_crm_contact: str, target_crm_contact: str) -> int:
    """For the CRM's contact merge: contacts linked to the merged-away CRM contact now point at the
    surviving one. Returns how many conversations those contacts have (the ones that moved with them)."""
    contact_ids = list(
        db.session.scalars(
            select(Contact.id).where(
                Contact.organization_id == organization_id, Contact.crm_contact_id == source_crm_contact
            )
        )
    )
    if not contact_ids:
        return 0
    db.session.execute(
        update(Contact).where(Contact.id.in_(contact_ids)).values(crm_contact_id=target_crm_contact)
    )
    return int(
        db.session.scalar(
            select(func.count()).select_from(Conversation).where(Conversation.contact_id.in_(contact_ids))
        )
        or 0
    )
