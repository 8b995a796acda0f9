"""Contacts with phone/email identities, accounts (companies) and contact merge."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from email_validator import EmailNotValidError, validate_email
from pydantic import Field
from sqlalchemy import delete, exists, func, or_, select, union_all, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.crm import hooks
from blueprints.crm.drafts import (
    AccountChanges,
    AccountDraft,
    ContactChanges,
    ContactDraft,
    check,
    given,
    sent,
)
from blueprints.crm.models import (
    AccountContact,
    ContactIdentity,
    CrmAccount,
    CrmContact,
    CrmTask,
    DealContact,
    Ticket,
)
from blueprints.crm.rules import (
    IdentityKind,
    IdentityValue,
    Limit,
    Offset,
    Refusal,
    Role,
    Rule,
    Search,
    missing,
)
from blueprints.crm.services.common import get_ref, savepoint
from core.db import db, utcnow
from core.events import publish
from core.pagination import Page, paginate
from core.phones import InvalidPhoneNumber, normalize_phone
from core.textsearch import contains, text_index

CONTACT_LOAD = (
    selectinload(CrmContact.identities),
    selectinload(CrmContact.account_links).joinedload(AccountContact.account),
)
ACCOUNT_LOAD = (selectinload(CrmAccount.contact_links).joinedload(AccountContact.contact),)


def normalize_identity(kind: str, value: str, param: str = "value") -> str:
    """A phone in E.164 or an email as stored, or 400 ``identity_invalid`` naming ``param``."""
    if kind == "phone":
        try:
            return normalize_phone(value)
        except InvalidPhoneNumber as error:
            raise Refusal(400, f"{param}: {error}", code="identity_invalid", param=param) from None
    try:
        # Deliverability (DNS) is not checked: no network from a request; case folded for matching.
        return validate_email(value, check_deliverability=False).normalized.lower()
    except EmailNotValidError as error:
        raise Refusal(400, f"{param}: {error}", code="identity_invalid", param=param) from None


def _duplicate(kind: str, value: str, param: str) -> Refusal:
    return Refusal(
        409, f"A contact with the {kind} {value} already exists", code="identity_taken", param=param
    )


def get_contact(organization_id: uuid.UUID, contact_id: uuid.UUID, param: str | None = None) -> CrmContact:
    """The contact with its identities and accounts; 404 naming ``param`` when the id came in a field."""
    contact = db.session.scalars(
        select(CrmContact)
        .where(CrmContact.id == contact_id, CrmContact.organization_id == organization_id)
        .options(*CONTACT_LOAD)
        .execution_options(populate_existing=True)
    ).first()
    if contact is None:
        raise missing("Contact", param)
    return contact


def _add_identity(contact: CrmContact, kind: str, raw: str, param: str) -> ContactIdentity:
    value = normalize_identity(kind, raw, param)
    taken = db.session.scalar(
        select(ContactIdentity.contact_id).where(
            ContactIdentity.organization_id == contact.organization_id,
            ContactIdentity.kind == kind,
            ContactIdentity.value == value,
        )
    )
    if taken is not None or any(i.kind == kind and i.value == value for i in contact.identities):
        raise _duplicate(kind, value, param)
    identity = ContactIdentity(
        organization_id=contact.organization_id, kind=kind, value=value, created_at=utcnow()
    )
    contact.identities.append(identity)
    _publish_identity("crm.contact_identity_added", contact, kind, value)
    return identity


def _publish_identity(name: str, contact: CrmContact, kind: str, value: str) -> None:
    """Other areas match their own records on identities (messaging links its contacts by phone)."""
    if contact.id is None:
        db.session.flush()
    publish(name, contact.organization_id, {"contact_id": str(contact.id), "kind": kind, "value": value})


def _taken_concurrently(kind_value: str, param: str) -> Refusal:
    return Refusal(
        409, f"A contact with this {kind_value} already exists", code="identity_taken", param=param
    )


def create_contact(organization_id: uuid.UUID, draft: ContactDraft) -> CrmContact:
    """A contact with its identities (phones in E.164, emails lower-cased; a taken one is 409) and its
    accounts."""
    draft = check(draft)
    now = utcnow()
    contact = CrmContact(
        organization_id=organization_id,
        name=draft.name,
        job_title=draft.job_title,
        notes=draft.notes,
        created_at=now,
        updated_at=now,
        identities=[],
        account_links=[],
    )
    linked: set[uuid.UUID] = set()
    for index, account_id in enumerate(draft.account_ids):
        if account_id not in linked:
            get_ref(CrmAccount, account_id, organization_id, "Account", f"account_ids.{index}")
            contact.account_links.append(AccountContact(account_id=account_id, created_at=now))
            linked.add(account_id)
    try:
        with savepoint():
            db.session.add(contact)
            for index, identity in enumerate(draft.identities):
                _add_identity(contact, identity.kind, identity.value, f"identities.{index}.value")
            db.session.flush()
    except IntegrityError:  # a concurrent request registered the same identity first
        raise _taken_concurrently("identity", "identities") from None
    return get_contact(organization_id, contact.id)


def update_contact(organization_id: uuid.UUID, contact_id: uuid.UUID, changes: ContactChanges) -> CrmContact:
    changes = check(changes)
    contact = get_contact(organization_id, contact_id)
    if given(changes.name):
        contact.name = changes.name
    if sent(changes.job_title):
        contact.job_title = changes.job_title
    if sent(changes.notes):
        contact.notes = changes.notes
    contact.updated_at = utcnow()
    return get_contact(organization_id, contact.id)


def delete_contact(organization_id: uuid.UUID, contact_id: uuid.UUID) -> None:
    """Identities and links go with it; tickets and tasks keep existing without the contact."""
    contact = get_contact(organization_id, contact_id)
    db.session.delete(contact)
    audit_log.record("crm_contact.deleted", "crm_contact", contact.id, organization_id=organization_id)


# The rules of the verbs that take plain values.
_KIND = Rule[str](IdentityKind)
_VALUE = Rule[str](IdentityValue)
_ROLE = Rule[str | None](Role | None)


def add_identity(organization_id: uuid.UUID, contact_id: uuid.UUID, kind: str, value: str) -> CrmContact:
    kind = _KIND.check(kind, "kind")
    value = _VALUE.check(value, "value")
    contact = get_contact(organization_id, contact_id)
    try:
        with savepoint():
            _add_identity(contact, kind, value, "value")
            contact.updated_at = utcnow()
            db.session.flush()
    except IntegrityError:  # a concurrent request registered the same identity first
        raise _taken_concurrently(kind, "value") from None
    return get_contact(organization_id, contact.id)


def remove_identity(organization_id: uuid.UUID, contact_id: uuid.UUID, identity_id: uuid.UUID) -> CrmContact:
    contact = get_contact(organization_id, contact_id)
    identity = next((i for i in contact.identities if i.id == identity_id), None)
    if identity is None:
        raise missing("Identity")
    contact.identities.remove(identity)
    contact.updated_at = utcnow()
    _publish_identity("crm.contact_identity_removed", contact, identity.kind, identity.value)
    return get_contact(organization_id, contact.id)


# The lists' search (migration crm_0004: trigram indexes, core.textsearch).
CONTACT_TEXT = text_index("crm_contacts", "name")
IDENTITY_TEXT = text_index("crm_contact_identities", "value")
ACCOUNT_TEXT = text_index("crm_accounts", "name", "domain")


@dataclass(frozen=True)
class ContactFilters:
    """The contact list's filters; the API's query model is generated from them."""

    limit: Limit = 100
    offset: Offset = 0
    search: Annotated[Search | None, Field(description="name, phone or email")] = None
    account_id: uuid.UUID | None = None


def list_contacts(organization_id: uuid.UUID, query: ContactFilters) -> Page[CrmContact]:
    query = check(query)
    conditions: list[Any] = [CrmContact.organization_id == organization_id]
    if query.search:
        texts = [query.search]
        # A phone typed any way ("+52 55 1234 5678", "5215512345678") is searched in its E.164 form too.
        with contextlib.suppress(InvalidPhoneNumber):
            texts.append(normalize_phone(query.search))
        # One text-index lookup per table (names, identities) rather than an OR across them that no
        # index serves; not correlated: each stands alone.
        by_name = select(CrmContact.id).where(
            CrmContact.organization_id == organization_id, contains(CONTACT_TEXT, CrmContact, query.search)
        )
        by_identity = select(ContactIdentity.contact_id).where(
            ContactIdentity.organization_id == organization_id,
            or_(*[contains(IDENTITY_TEXT, ContactIdentity, text) for text in texts]),
        )
        conditions.append(CrmContact.id.in_(union_all(by_name.correlate(None), by_identity.correlate(None))))
    if query.account_id is not None:
        conditions.append(
            exists().where(
                AccountContact.contact_id == CrmContact.id, AccountContact.account_id == query.account_id
            )
        )
    statement = (
        select(CrmContact).where(*conditions).order_by(CrmContact.name, CrmContact.id).options(*CONTACT_LOAD)
    )
    return paginate(statement, offset=query.offset, limit=query.limit)


@dataclass(frozen=True)
class MergeResult:
    contact: CrmContact
    merged_contact_id: uuid.UUID
    moved: dict[str, int]


def merge_contacts(organization_id: uuid.UUID, target_id: uuid.UUID, source_id: uuid.UUID) -> MergeResult:
    """Move everything the CRM holds for ``source`` to ``target`` in one transaction, then delete the
    source: identities, deal links (a deal linked to both keeps one link, primary if either was),
    tickets (requester), tasks, account links; conversations through the messaging area's hook."""
    if target_id == source_id:
        raise Refusal(
            400,
            "source_contact_id: cannot merge a contact into itself",
            code="merge_into_itself",
            param="source_contact_id",
        )
    target = get_contact(organization_id, target_id)
    source = get_contact(organization_id, source_id, param="source_contact_id")
    moved: dict[str, int] = {}
    moved["identities"] = db.session.execute(
        update(ContactIdentity)
        .where(ContactIdentity.contact_id == source.id)
        .values(contact_id=target.id)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]

    target_links = {
        link.deal_id: link
        for link in db.session.scalars(select(DealContact).where(DealContact.contact_id == target.id))
    }
    deals = 0
    for link in db.session.scalars(select(DealContact).where(DealContact.contact_id == source.id)).all():
        existing = target_links.get(link.deal_id)
        if existing is not None:
            existing.is_primary = existing.is_primary or link.is_primary
            existing.role = existing.role or link.role
            db.session.delete(link)
        else:
            link.contact_id = target.id
        deals += 1
    moved["deals"] = deals
    moved["tickets"] = db.session.execute(
        update(Ticket)
        .where(Ticket.organization_id == organization_id, Ticket.requester_id == source.id)
        .values(requester_id=target.id)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    moved["tasks"] = db.session.execute(
        update(CrmTask)
        .where(CrmTask.organization_id == organization_id, CrmTask.contact_id == source.id)
        .values(contact_id=target.id)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    target_accounts = {link.account_id for link in target.account_links}
    accounts = 0
    for link in list(source.account_links):
        if link.account_id not in target_accounts:
            target.account_links.append(
                AccountContact(account_id=link.account_id, role=link.role, created_at=link.created_at)
            )
            accounts += 1
        source.account_links.remove(link)
    moved["accounts"] = accounts
    moved["conversations"] = hooks.run_contact_merge_hooks(organization_id, source.id, target.id)
    db.session.flush()
    db.session.execute(delete(CrmContact).where(CrmContact.id == source.id))
    target.updated_at = utcnow()
    return MergeResult(get_contact(organization_id, target.id), source_id, moved)


# ----------------------------------------------------------------------------------------------- accounts


def get_account(organization_id: uuid.UUID, account_id: uuid.UUID) -> CrmAccount:
    account = db.session.scalars(
        select(CrmAccount)
        .where(CrmAccount.id == account_id, CrmAccount.organization_id == organization_id)
        .options(*ACCOUNT_LOAD)
        .execution_options(populate_existing=True)
    ).first()
    if account is None:
        raise missing("Account")
    return account


def create_account(organization_id: uuid.UUID, draft: AccountDraft) -> CrmAccount:
    draft = check(draft)
    now = utcnow()
    account = CrmAccount(
        organization_id=organization_id,
        name=draft.name,
        domain=draft.domain,
        industry=draft.industry,
        phone=draft.phone,
        notes=draft.notes,
        created_at=now,
        updated_at=now,
    )
    db.session.add(account)
    db.session.flush()
    return get_account(organization_id, account.id)


# The fields of an account that a null clears.
ACCOUNT_FIELDS = ("domain", "industry", "phone", "notes")


def update_account(organization_id: uuid.UUID, account_id: uuid.UUID, changes: AccountChanges) -> CrmAccount:
    changes = check(changes)
    account = get_account(organization_id, account_id)
    if given(changes.name):
        account.name = changes.name
    for name in ACCOUNT_FIELDS:
        value = getattr(changes, name)
        if sent(value):
            setattr(account, name, value)
    account.updated_at = utcnow()
    return get_account(organization_id, account.id)


def delete_account(organization_id: uuid.UUID, account_id: uuid.UUID) -> None:
    """Contacts stay (only the links go); deals, tickets and tasks keep existing without the account."""
    account = get_account(organization_id, account_id)
    db.session.delete(account)
    audit_log.record("account.deleted", "account", account.id, organization_id=organization_id)


@dataclass(frozen=True)
class AccountFilters:
    """The account list's filters; the API's query model is generated from them."""

    limit: Limit = 100
    offset: Offset = 0
    search: Search | None = None  # name or domain


def list_accounts(organization_id: uuid.UUID, query: AccountFilters) -> Page[CrmAccount]:
    query = check(query)
    conditions: list[Any] = [CrmAccount.organization_id == organization_id]
    if query.search:
        conditions.append(contains(ACCOUNT_TEXT, CrmAccount, query.search))
    statement = (
        select(CrmAccount).where(*conditions).order_by(CrmAccount.name, CrmAccount.id).options(*ACCOUNT_LOAD)
    )
    return paginate(statement, offset=query.offset, limit=query.limit)


def link_contact(
    organization_id: uuid.UUID, account_id: uuid.UUID, contact_id: uuid.UUID, role: str | None
) -> CrmAccount:
    role = _ROLE.check(role, "role")
    account = get_account(organization_id, account_id)
    get_ref(CrmContact, contact_id, organization_id, "Contact", "contact_id")
    existing = next((link for link in account.contact_links if link.contact_id == contact_id), None)
    if existing is None:
        try:
            with savepoint():
                account.contact_links.append(
                    AccountContact(contact_id=contact_id, role=role, created_at=utcnow())
                )
                db.session.flush()
        except IntegrityError:  # linked concurrently: the link is there, which is what was asked
            pass
    else:
        existing.role = role  # linking again updates the role: idempotent
    return get_account(organization_id, account_id)


def unlink_contact(organization_id: uuid.UUID, account_id: uuid.UUID, contact_id: uuid.UUID) -> CrmAccount:
    account = get_account(organization_id, account_id)
    link = next((link for link in account.contact_links if link.contact_id == contact_id), None)
    if link is None:
        raise missing("Contact")
    account.contact_links.remove(link)
    return get_account(organization_id, account_id)


def merge_preview(organization_id: uuid.UUID, target_id: uuid.UUID, source_id: uuid.UUID) -> dict[str, int]:
    """What :func:`merge_contacts` would move from ``source`` to ``target``, counted the way it counts
    (deal links, tickets requested, tasks, identities; accounts the target is not on yet), for a
    confirmation before the merge. Conversations are the messaging area's: the page counts them. Refuses
    as the merge does (itself, either contact unknown)."""
    if target_id == source_id:
        raise Refusal(
            400,
            "source_contact_id: cannot merge a contact into itself",
            code="merge_into_itself",
            param="source_contact_id",
        )
    target = get_contact(organization_id, target_id)
    source = get_contact(organization_id, source_id, param="source_contact_id")
    target_accounts = {link.account_id for link in target.account_links}

    def count(statement: Any) -> int:
        return int(db.session.scalar(statement) or 0)

    return {
        "identities": len(source.identities),
        "deals": count(
            select(func.count()).select_from(DealContact).where(DealContact.contact_id == source.id)
        ),
        "tickets": count(
            select(func.count())
            .select_from(Ticket)
            .where(Ticket.organization_id == organization_id, Ticket.requester_id == source.id)
        ),
        "tasks": count(
            select(func.count())
            .select_from(CrmTask)
            .where(CrmTask.organization_id == organization_id, CrmTask.contact_id == source.id)
        ),
        "accounts": sum(1 for link in source.account_links if link.account_id not in target_accounts),
    }
