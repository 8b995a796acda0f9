"""Finding or creating contacts and conversations in bulk, and moving message statuses forward.

Shared by webhook ingestion (hundreds of messages per delivery: a constant number of queries) and by
sends (one thread). Helpers here only flush; the unit of work of the caller commits.

Lock order. Two job workers drain different deliveries of one burst (SKIP LOCKED), but a burst from a few
senders puts the same contacts, conversations and messages in both their batches. Every writer here
therefore takes its locks table after table (contacts, their addresses, conversations, messages, the
status backlog) and, within a table, existing rows in primary-key order, in one statement, before it
changes any of them, and inserts new rows in the order of their unique key (an insert that meets
another transaction's uncommitted equal key waits for it, like a lock). Two writers then wait for each
other's commit in one direction only: a cycle of waits, a deadlock, cannot form (docs/channels.md, "Lock
order"). The locks are ``FOR NO KEY UPDATE``, the lock an UPDATE takes itself, so the foreign-key checks
of other writers (a message inserted into a locked conversation) never wait for them.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_, delete, or_, select
from sqlalchemy.orm import joinedload
from sqlalchemy.orm.attributes import set_committed_value

from blueprints.channels.models import OrganizationAddress
from blueprints.messaging.models import (
    STATUS_RANK,
    Contact,
    ContactAddress,
    Conversation,
    Message,
    StatusBacklog,
)
from core.db import UUIDPrimaryKeyMixin, db, for_update, isoformat, utcnow
from core.errors import ApiError
from core.hooks import hook
from core.phones import InvalidPhoneNumber, normalize_phone

T = TypeVar("T")
M = TypeVar("M", bound=UUIDPrimaryKeyMixin)
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


def lock_rows(model: type[M], ids: Iterable[uuid.UUID]) -> list[M]:
    """The rows of ``model`` with these primary keys, locked until the commit (``FOR NO KEY UPDATE``, read
    afresh) lowest id first. Sorted before they are cut into chunks, so the chunks follow one another in
    that same order (Python orders UUIDs as PostgreSQL does, byte by byte)."""
    rows: list[M] = []
    for part in chunks(sorted(set(ids))):
        statement = select(model).where(model.id.in_(part)).order_by(model.id)
        rows += db.session.scalars(for_update(statement, no_key=True))
    return rows


def lock_in_order(model: type[M], conditions: Sequence[tuple[ColumnElement[bool], int]]) -> list[M]:
    """The rows of ``model`` matching any of ``conditions`` (each with the number of values it binds),
    locked until the commit in primary-key order: one ``SELECT ... ORDER BY id FOR NO KEY UPDATE`` when
    they bind at most :data:`CHUNK` values together (a batch's usual case). Beyond that their ids are read
    first, unlocked, and locked by :func:`lock_rows`: statements of a chunk each would lock in an order of
    their own. A row that starts to match between the read and the lock is not locked; callers treat it
    as one written by a concurrent transaction (a new row they meet on its unique key)."""
    if not conditions:
        return []
    groups: list[list[ColumnElement[bool]]] = [[]]
    bound = 0
    for condition, values in conditions:
        if groups[-1] and bound + values > CHUNK:
            groups.append([])
            bound = 0
        groups[-1].append(condition)
        bound += values
    if len(groups) == 1:
        statement = select(model).where(or_(*groups[0])).order_by(model.id)
        return list(db.session.scalars(for_update(statement, no_key=True)))
    ids: set[uuid.UUID] = set()
    for group in groups:
        ids.update(db.session.scalars(select(model.id).where(or_(*group))))
    return lock_rows(model, ids)


def arrival_times(count: int) -> list[datetime]:
    """``count`` creation times one microsecond apart from now. Rows inserted in the order of their unique
    key (the lock order) get them in the order they arrived in, as if inserted one after the other: lists
    that break ties on ``created_at`` (messages of one second, contacts) keep the arrival order."""
    now = utcnow()
    return [now + timedelta(microseconds=n) for n in range(count)]


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


# A contact address's unique key: (organization, service, contact address).
IdentityKey = tuple[uuid.UUID, str, str]
# A conversation's unique key: (organization, organization address, contact, service).
ConversationKey = tuple[uuid.UUID, str, uuid.UUID, str]


def _identity_key(key: ThreadKey) -> IdentityKey:
    return (key.organization_id, key.service, key.contact_address)


def resolve_threads(requests: Iterable[ThreadRequest]) -> dict[ThreadKey, Thread]:
    """Contacts and conversations for every key, created when missing; about four queries in all.

    In the module's lock order: the existing contacts and addresses that change (a blank name filled, a
    new provider id) are locked first, by id; new contacts go in by their unique identity; then every
    conversation of the keys is locked in one statement, by id, and the new ones go in by their unique
    key (organization, organization address, contact, service)."""
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

    identities: dict[IdentityKey, ContactAddress] = {}
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

    # What the requests say of each person, in the order they arrived (as each request used to be applied
    # in turn): the first profile name fills a blank name, the last provider id given is kept.
    names: dict[IdentityKey, str] = {}
    provider_ids: dict[IdentityKey, str] = {}
    first: dict[IdentityKey, ThreadRequest] = {}
    for key, request in wanted.items():
        identity_key = _identity_key(key)
        first.setdefault(identity_key, request)
        if request.name:
            names.setdefault(identity_key, request.name)
        if request.provider_id:
            provider_ids[identity_key] = request.provider_id

    # Every new WhatsApp contact's CRM link in one question per organization, asked before the loop: a
    # lookup inside it would flush the contacts created before it (both were most of a burst's cost).
    crm_links: dict[uuid.UUID, dict[str, str]] = {}
    for organization_id, keys in by_org.items():
        new_numbers = [
            k.contact_address for k in keys if k.service == "whatsapp" and _identity_key(k) not in identities
        ]
        crm_links[organization_id] = resolve_crm_contacts(organization_id, new_numbers) if new_numbers else {}
    _fill_blanks(identities, names, provider_ids)
    missing = [identity_key for identity_key in first if identity_key not in identities]  # arrival order
    created_at = dict(zip(missing, arrival_times(len(missing)), strict=True))
    with db.session.no_autoflush:
        for identity_key in sorted(missing):  # inserted in the order of their unique key
            organization_id, service, contact_address = identity_key
            contact = Contact(
                id=uuid.uuid4(),
                organization_id=organization_id,
                name=names.get(identity_key),
                extra={},
                crm_contact_id=(
                    crm_links[organization_id].get(contact_address) if service == "whatsapp" else None
                ),
                created_at=created_at[identity_key],
                updated_at=created_at[identity_key],
            )
            identity = ContactAddress(
                id=uuid.uuid4(),
                organization_id=organization_id,
                contact_id=contact.id,
                service=service,
                address=contact_address,
                provider_id=provider_ids.get(identity_key, first[identity_key].provider_id),
                created_at=created_at[identity_key],
            )
            identity.contact = contact
            db.session.add_all([contact, identity])
            identities[identity_key] = identity
    db.session.flush()  # the contacts' locks and unique keys, all before the first conversation's

    contact_ids = sorted({identities[_identity_key(k)].contact_id for k in wanted})
    organizations = sorted(by_org)
    # Locked and read afresh: callers move last_message_at / last_incoming_at forward from what they read,
    # and two drainers' batches (SKIP LOCKED gives them different deliveries of one conversation) would
    # otherwise each write their own maximum, the later commit winning.
    locked = lock_in_order(
        Conversation,
        [
            (
                and_(Conversation.organization_id.in_(organizations), Conversation.contact_id.in_(part)),
                len(part) + len(organizations),
            )
            for part in chunks(contact_ids)
        ],
    )
    conversations: dict[ConversationKey, Conversation] = {
        (row.organization_id, row.organization_address, row.contact_id, row.service): row for row in locked
    }

    # The keys of the conversations to create, each with the first of its keys to arrive (two addresses of
    # one merged contact share a conversation per organization address)
    new: dict[ConversationKey, ThreadKey] = {}
    for key in wanted:
        identity = identities[_identity_key(key)]
        conversation_key = (key.organization_id, key.organization_address, identity.contact_id, key.service)
        if conversation_key not in conversations:
            new.setdefault(conversation_key, key)
    for conversation_key in sorted(new):  # inserted in the order of their unique key
        key = new[conversation_key]
        identity = identities[_identity_key(key)]
        conversation = Conversation(
            id=uuid.uuid4(),
            organization_id=key.organization_id,
            contact_id=identity.contact_id,
            organization_address=key.organization_address,
            contact_address=key.contact_address,
            service=key.service,
            status="active",
            name=identity.contact.name or wanted[key].name or key.contact_address,
            is_broadcast=False,
            extra={"labels": []},
        )
        db.session.add(conversation)
        conversations[conversation_key] = conversation

    threads: dict[ThreadKey, Thread] = {}
    for key in wanted:
        identity = identities[_identity_key(key)]
        conversation = conversations[
            (key.organization_id, key.organization_address, identity.contact_id, key.service)
        ]
        threads[key] = Thread(identity.contact, identity, conversation)
    db.session.flush()
    return threads


def _fill_blanks(
    identities: dict[IdentityKey, ContactAddress],
    names: dict[IdentityKey, str],
    provider_ids: dict[IdentityKey, str],
) -> None:
    """Existing contacts and addresses the requests change: a profile name fills a blank name (never
    overwrites one), a provider id that changed replaces it. The rows are locked first (contacts, then
    addresses, each by id) and decided on as locked, so a name another transaction has just filled is
    kept. Only their columns are read: the identities keep their loaded contacts."""
    contacts: dict[uuid.UUID, tuple[Contact, str]] = {}
    addresses: dict[uuid.UUID, tuple[ContactAddress, str]] = {}
    for identity_key, identity in identities.items():
        name = names.get(identity_key)
        if name and not identity.contact.name:
            contacts.setdefault(identity.contact_id, (identity.contact, name))
        provider_id = provider_ids.get(identity_key)
        if provider_id and identity.provider_id != provider_id:
            addresses[identity.id] = (identity, provider_id)
    for part in chunks(sorted(contacts)):
        statement = select(Contact.id, Contact.name).where(Contact.id.in_(part)).order_by(Contact.id)
        for contact_id, current in db.session.execute(for_update(statement, no_key=True)):
            contact, name = contacts[contact_id]
            if current:
                set_committed_value(contact, "name", current)
            else:
                contact.name = name
    for part in chunks(sorted(addresses)):
        statement = (
            select(ContactAddress.id, ContactAddress.provider_id)
            .where(ContactAddress.id.in_(part))
            .order_by(ContactAddress.id)
        )
        for address_id, current in db.session.execute(for_update(statement, no_key=True)):
            identity, provider_id = addresses[address_id]
            if current == provider_id:
                set_committed_value(identity, "provider_id", current)
            else:
                identity.provider_id = provider_id


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

    The messages are locked and read afresh first, by id (:func:`lock_rows`, the module's lock order):
    the send and the status webhook may both get here for one message (each re-checks after its own
    commit, so neither misses the other), and whoever comes second finds the backlog already applied and
    emptied."""
    lock_rows(Message, [message.id for message in messages if message.external_id])
    return apply_waiting(messages)


def apply_waiting(messages: Sequence[Message]) -> list[Message]:
    """The backlog's statuses for ``messages``, applied and dropped; the changed messages. The caller
    holds the messages' rows: locked, or inserted by its own transaction (which nobody else sees yet)."""
    by_org: dict[uuid.UUID, dict[str, Message]] = defaultdict(dict)
    for message in messages:
        if message.external_id:
            by_org[message.organization_id][message.external_id] = message
    changed: list[Message] = []
    for organization_id in sorted(by_org):
        by_external = by_org[organization_id]
        for part in chunks(sorted(by_external)):
            waiting = db.session.scalars(
                select(StatusBacklog).where(
                    StatusBacklog.organization_id == organization_id, StatusBacklog.external_id.in_(part)
                )
            ).all()
            if not waiting:
                continue
            # not session.delete: a row the other side already deleted must not fail this flush
            db.session.execute(
                delete(StatusBacklog)
                .where(StatusBacklog.id.in_(sorted(row.id for row in waiting)))
                .execution_options(synchronize_session=False)
            )
            for row in sorted(waiting, key=lambda r: STATUS_RANK.get(r.status, 0)):
                message = by_external[row.external_id]
                if apply_status(message, row.status, row.timestamp, row.error) and message not in changed:
                    changed.append(message)
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
