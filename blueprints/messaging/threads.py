"""Finding or creating contacts and conversations in bulk, and moving message statuses forward.

Shared by webhook ingestion (hundreds of messages per delivery: a constant number of queries) and by
sends (one thread). Helpers here only flush; the unit of work of the caller commits.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import delete, select
from sqlalchemy.orm import joinedload

from blueprints.channels.models import OrganizationAddress
from blueprints.messaging.models import (
    STATUS_RANK,
    Contact,
    ContactAddress,
    Conversation,
    Message,
    StatusBacklog,
)
from core.db import db, for_update, isoformat
from core.errors import ApiError
from core.hooks import hook
from core.phones import InvalidPhoneNumber, normalize_phone

T = TypeVar("T")
CHUNK = 500  # bound IN (...) lists: SQLite allows 32k parameters, PostgreSQL 65k; stay far below

# CRM link: the CRM area answers which of its contacts have these phone identities (wired in
# integrations). One question for all the new contacts of a batch: one query per contact was a third of
# a burst's drain time.
crm_contacts_for_phones = hook(
    "messaging.crm_contacts_for_phones",
    "fn(organization_id, phones) -> {phone (E.164): CRM contact id (str)} for the phones a contact has",
)
known_crm_contacts = hook(
    "messaging.known_crm_contacts",
    "fn(organization_id, contact_ids) -> the ids among them that name CRM contacts of the organization",
)


def check_crm_contact(organization_id: uuid.UUID, crm_contact_id: str | None) -> None:
    """A contact links only to a CRM contact of its own organization (404 otherwise). Without the CRM
    wired in (no receiver), any id is kept as given."""
    if crm_contact_id is None or not known_crm_contacts.receivers:
        return
    answers = known_crm_contacts.answers(organization_id=organization_id, contact_ids=[crm_contact_id])
    if not any(crm_contact_id in {str(i) for i in found or ()} for found in answers):
        raise ApiError(404, "CRM contact not found")


def resolve_crm_contacts(organization_id: uuid.UUID, phones: Iterable[str]) -> dict[str, str]:
    """The CRM contact of each WhatsApp number (E.164) that one has; numbers without are left out."""
    wanted = sorted(set(phones))
    found: dict[str, str] = {}
    for part in chunks(wanted):
        for answer in crm_contacts_for_phones.answers(organization_id=organization_id, phones=list(part)):
            for phone, contact_id in (answer or {}).items():
                found.setdefault(phone, contact_id)
    return found


def resolve_crm_contact(organization_id: uuid.UUID, service: str, address: str) -> str | None:
    if service != "whatsapp":
        return None
    return resolve_crm_contacts(organization_id, [address]).get(address)


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True)
class ThreadKey:
    organization_id: uuid.UUID
    service: str
    organization_address: str
    contact_address: str


@dataclass
class ThreadRequest:
    key: ThreadKey
    provider_id: str | None = None
    name: str | None = None


@dataclass
class Thread:
    contact: Contact
    contact_address: ContactAddress
    conversation: Conversation


def resolve_threads(requests: Iterable[ThreadRequest]) -> dict[ThreadKey, Thread]:
    """Contacts and conversations for every key, created when missing; about four queries in all."""
    wanted: dict[ThreadKey, ThreadRequest] = {}
    for request in requests:
        known = wanted.get(request.key)
        if known is None:
            wanted[request.key] = request
        elif request.name and not known.name:
            known.name = request.name
    if not wanted:
        return {}
    by_org: dict[uuid.UUID, list[ThreadKey]] = defaultdict(list)
    for key in wanted:
        by_org[key.organization_id].append(key)

    identities: dict[tuple[uuid.UUID, str, str], ContactAddress] = {}
    for organization_id, keys in by_org.items():
        addresses = sorted({k.contact_address for k in keys})
        for part in chunks(addresses):
            rows = db.session.scalars(
                select(ContactAddress)
                .options(joinedload(ContactAddress.contact))
                .where(ContactAddress.organization_id == organization_id, ContactAddress.address.in_(part))
            )
            for row in rows:
                identities[(organization_id, row.service, row.address)] = row

    # Every new WhatsApp contact's CRM link in one question per organization, asked before the loop: a
    # lookup inside it would flush the contacts created before it (both were most of a burst's cost).
    crm_links: dict[uuid.UUID, dict[str, str]] = {}
    for organization_id, keys in by_org.items():
        new_numbers = [
            k.contact_address
            for k in keys
            if k.service == "whatsapp" and (organization_id, k.service, k.contact_address) not in identities
        ]
        crm_links[organization_id] = resolve_crm_contacts(organization_id, new_numbers) if new_numbers else {}
    with db.session.no_autoflush:
        for key, request in wanted.items():
            identity_key = (key.organization_id, key.service, key.contact_address)
            identity = identities.get(identity_key)
            if identity is None:
                contact = Contact(
                    id=uuid.uuid4(),
                    organization_id=key.organization_id,
                    name=request.name,
                    extra={},
                    crm_contact_id=(
                        crm_links[key.organization_id].get(key.contact_address)
                        if key.service == "whatsapp"
                        else None
                    ),
                )
                identity = ContactAddress(
                    id=uuid.uuid4(),
                    organization_id=key.organization_id,
                    contact_id=contact.id,
                    service=key.service,
                    address=key.contact_address,
                    provider_id=request.provider_id,
                )
                identity.contact = contact
                db.session.add_all([contact, identity])
                identities[identity_key] = identity
            else:
                if request.name and not identity.contact.name:
                    identity.contact.name = request.name  # a profile name fills a blank, never overwrites
                if request.provider_id and identity.provider_id != request.provider_id:
                    identity.provider_id = request.provider_id

    conversations: dict[tuple[uuid.UUID, str, uuid.UUID, str], Conversation] = {}
    for organization_id, keys in by_org.items():
        contact_ids = sorted(
            {identities[(organization_id, k.service, k.contact_address)].contact_id for k in keys}
        )
        for part in chunks(contact_ids):
            # Locked and read afresh: callers move last_message_at / last_incoming_at forward from what
            # they read, and two drainers' batches (SKIP LOCKED gives them different deliveries of one
            # conversation) would otherwise each write their own maximum, the later commit winning.
            rows = db.session.scalars(
                for_update(
                    select(Conversation)
                    .where(Conversation.organization_id == organization_id, Conversation.contact_id.in_(part))
                    .order_by(Conversation.id)
                )
            )
            for row in rows:
                conversations[(organization_id, row.organization_address, row.contact_id, row.service)] = row

    threads: dict[ThreadKey, Thread] = {}
    for key, request in wanted.items():
        identity = identities[(key.organization_id, key.service, key.contact_address)]
        conversation_key = (key.organization_id, key.organization_address, identity.contact_id, key.service)
        conversation = conversations.get(conversation_key)
        if conversation is None:
            conversation = Conversation(
                id=uuid.uuid4(),
                organization_id=key.organization_id,
                contact_id=identity.contact_id,
                organization_address=key.organization_address,
                contact_address=key.contact_address,
                service=key.service,
                status="active",
                name=identity.contact.name or request.name or key.contact_address,
                is_broadcast=False,
                extra={"labels": []},
            )
            db.session.add(conversation)
            conversations[conversation_key] = conversation
        threads[key] = Thread(identity.contact, identity, conversation)
    db.session.flush()
    return threads


def thread_for(address: OrganizationAddress, contact_address: str, provider_id: str | None = None) -> Thread:
    key = ThreadKey(address.organization_id, address.service, address.address, contact_address)
    return resolve_threads([ThreadRequest(key, provider_id)])[key]


def apply_status(
    message: Message, status: str, timestamp: datetime, error: dict[str, Any] | None = None
) -> bool:
    """Record ``status`` on an outgoing message; True when anything changed.

    Statuses never move backwards (``read`` then a late ``delivered`` keeps ``read``) but every status
    keeps its own timestamp, the earliest one seen when a duplicate brings another.
    """
    if status not in STATUS_RANK or message.direction != "outgoing":
        return False
    statuses = dict(message.status or {})
    stamp = isoformat(timestamp)
    changed = False
    if status not in statuses or (stamp and str(statuses[status]) > stamp):
        statuses[status] = stamp
        changed = True
    if error and status == "failed" and statuses.get("error") != error:
        statuses["error"] = error
        changed = True
    if STATUS_RANK[status] > STATUS_RANK.get(message.current_status, -1):
        message.current_status = status
        changed = True
    if changed:
        message.status = statuses  # a new dict so the JSON column is seen as changed
    return changed


def mark_failed(message: Message, error: dict[str, Any], timestamp: datetime) -> None:
    statuses = dict(message.status or {})
    statuses["failed"] = isoformat(timestamp)
    statuses["error"] = error
    message.status = statuses
    message.current_status = "failed"


def apply_backlog(messages: Sequence[Message]) -> list[Message]:
    """Statuses that arrived before their message's provider id was stored; applied now and dropped.

    The messages are locked and read afresh first (:func:`for_update`): the send and the status webhook may
    both get here for one message (each re-checks after its own commit, so neither misses the other), and
    whoever comes second finds the backlog already applied and emptied."""
    by_org: dict[uuid.UUID, dict[str, Message]] = defaultdict(dict)
    for message in messages:
        if message.external_id:
            by_org[message.organization_id][message.external_id] = message
    changed: list[Message] = []
    for organization_id, by_external in by_org.items():
        for part in chunks(sorted(by_external)):
            locked = db.session.scalars(
                for_update(
                    select(Message)
                    .where(Message.organization_id == organization_id, Message.external_id.in_(part))
                    .order_by(Message.external_id)
                )
            ).all()
            current = {m.external_id: m for m in locked}
            waiting = db.session.scalars(
                select(StatusBacklog).where(
                    StatusBacklog.organization_id == organization_id, StatusBacklog.external_id.in_(part)
                )
            ).all()
            for row in sorted(waiting, key=lambda r: STATUS_RANK.get(r.status, 0)):
                message = current.get(row.external_id) or by_external[row.external_id]
                if apply_status(message, row.status, row.timestamp, row.error) and message not in changed:
                    changed.append(message)
            if waiting:
                # not session.delete: a row the other side already deleted must not fail this flush
                db.session.execute(
                    delete(StatusBacklog)
                    .where(StatusBacklog.id.in_([row.id for row in waiting]))
                    .execution_options(synchronize_session=False)
                )
                for row in waiting:
                    db.session.expunge(row)
    return changed


def parse_uuid(value: str | uuid.UUID | None) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


def contact_address_for(service: str, raw: str, field_name: str) -> str:
    """WhatsApp numbers in E.164 (with or without ``+``; 521/549 quirks folded); other ids as given."""
    if service != "whatsapp":
        value = raw.strip()
        if not value:
            raise ApiError(400, f"{field_name}: must not be empty", param=field_name)
        return value
    try:
        return normalize_phone(raw)
    except InvalidPhoneNumber:
        raise ApiError(400, f"{field_name}: not a valid phone number", param=field_name) from None
