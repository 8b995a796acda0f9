"""Messaging contacts: CRUD and search, each with its channel addresses, and the CRM link."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import exists, func, or_, select, update
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.messaging.models import (
    Contact,
    ContactAddress,
    Conversation,
)
from blueprints.messaging.schemas import ContactOut
from blueprints.messaging.threads import (
    check_crm_contact,
    contact_address_for,
    resolve_crm_contact,
)
from core.db import db
from core.errors import ApiError
from core.events import publish
from core.pagination import Page, paginate
from core.phones import InvalidPhoneNumber, normalize_phone
from core.tenancy import find_for_org
from core.text import LIKE_ESCAPE, contains_pattern


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()  # a field the caller did not send: it keeps its value

# ---------------------------------------------------------------------------------------------------
# Messaging contacts


def _identities(addresses: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    identities: list[tuple[str, str]] = []
    for position, (service, raw) in enumerate(addresses):
        address = contact_address_for(service, raw, f"addresses.{position}.address")
        if (service, address) in identities:
            raise ApiError(400, f"addresses.{position}: repeated address", param=f"addresses.{position}")
        identities.append((service, address))
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


def get_contact(organization_id: uuid.UUID, contact_id: str | uuid.UUID) -> Contact:
    contact = find_for_org(Contact, contact_id, organization_id, options=[selectinload(Contact.addresses)])
    if contact is None:
        raise ApiError(404, "Contact not found")
    return contact


def create_contact(
    organization_id: uuid.UUID,
    *,
    name: str | None = None,
    addresses: Sequence[tuple[str, str]] = (),
    crm_contact_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Contact:
    """A contact with its channel addresses ((service, address) pairs; WhatsApp numbers become E.164).
    Without ``crm_contact_id`` it is linked to the CRM contact that has one of its phone numbers."""
    identities = _identities(addresses)
    _check_free(organization_id, identities, None)
    check_crm_contact(organization_id, crm_contact_id)
    if crm_contact_id is None:
        crm_contact_id = next(
            (found for s, a in identities if (found := resolve_crm_contact(organization_id, s, a))), None
        )
    contact = Contact(
        id=uuid.uuid4(),
        organization_id=organization_id,
        name=name,
        crm_contact_id=crm_contact_id,
        extra=dict(extra or {}),
    )
    contact.addresses = [
        ContactAddress(organization_id=organization_id, service=s, address=a) for s, a in identities
    ]
    db.session.add(contact)
    db.session.flush()
    publish("contact.created", organization_id, ContactOut.dump(contact))
    return contact


def list_contacts(
    organization_id: uuid.UUID,
    *,
    search: str | None = None,
    service: str | None = None,
    crm_contact_id: str | None = None,
    skip: int = 0,
    take: int = 20,
) -> Page[Contact]:
    """Newest first; ``search`` finds the text (wildcards taken literally) in names and addresses."""
    statement = (
        select(Contact)
        .options(selectinload(Contact.addresses))
        .where(Contact.organization_id == organization_id)
    )
    if search:
        pattern = contains_pattern(search.lower())
        statement = statement.where(
            or_(
                func.lower(Contact.name).like(pattern, escape=LIKE_ESCAPE),
                exists().where(
                    ContactAddress.contact_id == Contact.id,
                    func.lower(ContactAddress.address).like(pattern, escape=LIKE_ESCAPE),
                ),
            )
        )
    if service:
        statement = statement.where(
            exists().where(ContactAddress.contact_id == Contact.id, ContactAddress.service == service)
        )
    if crm_contact_id:
        statement = statement.where(Contact.crm_contact_id == crm_contact_id)
    statement = statement.order_by(Contact.created_at.desc(), Contact.id)
    return paginate(statement, offset=skip, limit=take)


def update_contact(
    organization_id: uuid.UUID,
    contact_id: str | uuid.UUID,
    *,
    name: str | _Unset | None = UNSET,
    crm_contact_id: str | _Unset | None = UNSET,
    extra: dict[str, Any] | None = None,
    addresses: Sequence[tuple[str, str]] | None = None,
) -> Contact:
    """Change what is given: ``extra`` is merged into the stored one; ``addresses`` replaces the list."""
    contact = get_contact(organization_id, contact_id)
    if not isinstance(name, _Unset):
        contact.name = name
    if not isinstance(crm_contact_id, _Unset):
        check_crm_contact(organization_id, crm_contact_id)
        contact.crm_contact_id = crm_contact_id
    if extra is not None:
        contact.extra = {**(contact.extra or {}), **extra}
    if addresses is not None:
        identities = _identities(addresses)
        _check_free(organization_id, identities, contact.id)
        keep = {(a.service, a.address): a for a in contact.addresses}
        contact.addresses = [
            keep.get((s, a)) or ContactAddress(organization_id=organization_id, service=s, address=a)
            for s, a in identities
        ]
    db.session.flush()
    publish("contact.updated", organization_id, ContactOut.dump(contact))
    return contact


def delete_contact(organization_id: uuid.UUID, contact_id: str | uuid.UUID) -> None:
    contact = get_contact(organization_id, contact_id)
    if db.session.scalar(select(Conversation.id).where(Conversation.contact_id == contact.id).limit(1)):
        raise ApiError(409, "Contact has conversations; delete or archive them first")
    db.session.delete(contact)
    audit_log.record("contact.deleted", "contact", contact.id, organization_id=organization_id)
    publish("contact.deleted", organization_id, {"id": str(contact.id)})


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
