"""The CRM verbs' typed inputs: what a new record is made of (``...Draft``) and what a partial update
changes (``...Changes``), as small frozen dataclasses in the wire's field names.

Every field is annotated with its rule (``rules.py``), the same type the API's request model declares, so
a rule lives once: the request model refuses at the API's edge and documents the rule in OpenAPI, and
every verb checks its draft with :func:`check` whoever built it (the API from its request model, a desk
page from its form, the AI area's tools, the demo). A draft that breaks a rule is a
``rules.Refusal`` with the API's message, a stable code and the field's name.

**Changes and UNSET.** A field of a ``...Changes`` left at :data:`UNSET` was not sent and changes
nothing; ``None`` was sent as null and clears the field where it may be cleared (a PATCH's
``exclude_unset`` semantics): ``sent(changes.owner_id)`` is "the client said something about the owner",
``given(changes.name)`` "the client sent a name that is not null".
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from typing import (
    Any,
    TypeVar,
    get_type_hints,
)

from pydantic import TypeAdapter

from blueprints.crm.rules import (
    CONFIG,
    AccountIds,
    BodyHtml,
    ConversationIds,
    CurrencyIn,
    DealContacts,
    DealStatus,
    Description,
    Domain,
    Identities,
    IdentityKind,
    IdentityValue,
    Industry,
    ItemNotes,
    ItemPosition,
    ItemSku,
    JobTitle,
    LongName,
    MemberId,
    Money,
    Name,
    Notes,
    Phone,
    PipelineKey,
    Probability,
    ProductName,
    Quantity,
    Refusal,
    Role,
    RottingDays,
    Sku,
    StageOrder,
    StageStatus,
    TaskPriority,
    TaskStatus,
    TaskType,
    TicketChannel,
    TicketPriority,
    TicketSource,
    TicketState,
    WebUrl,
    check_value,
)
from core.changes import UNSET, Unset, given, sent, without_unset  # noqa: F401  (re-exported)

T = TypeVar("T")
D = TypeVar("D")


# ------------------------------------------------------------------------------ pipelines and stages


@dataclass(frozen=True)
class PipelineDraft:
    name: Name
    key: PipelineKey
    is_default: bool | None = None


@dataclass(frozen=True)
class PipelineChanges:
    name: Name | Unset | None = UNSET
    key: PipelineKey | Unset | None = UNSET
    is_default: bool | Unset | None = UNSET


@dataclass(frozen=True)
class StageDraft:
    name: Name
    stage_order: StageOrder
    probability: Probability | None = None  # default: 100 for a won stage, else 0
    status: StageStatus = "open"
    rotting_days: RottingDays | None = None


@dataclass(frozen=True)
class StageChanges:
    name: Name | Unset | None = UNSET
    stage_order: StageOrder | Unset | None = UNSET
    probability: Probability | Unset | None = UNSET
    status: StageStatus | Unset | None = UNSET
    rotting_days: RottingDays | Unset | None = UNSET


# --------------------------------------------------------------------------------- deals, line items


@dataclass(frozen=True)
class DealContactDraft:
    __pydantic_config__ = CONFIG

    contact_id: uuid.UUID
    role: Role | None = None
    is_primary: bool = False


@dataclass(frozen=True)
class DealDraft:
    name: LongName
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    amount: Money | None = None
    currency: CurrencyIn = "MXN"
    status: DealStatus | None = None  # default: the stage's status
    owner_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    expected_close_date: date | None = None
    conversation_ids: ConversationIds = ()
    contacts: DealContacts[DealContactDraft] = ()


@dataclass(frozen=True)
class DealChanges:
    name: LongName | Unset | None = UNSET
    amount: Money | Unset | None = UNSET
    currency: CurrencyIn | Unset | None = UNSET
    status: DealStatus | Unset | None = UNSET
    owner_id: MemberId | Unset | None = UNSET
    account_id: uuid.UUID | Unset | None = UNSET
    expected_close_date: date | Unset | None = UNSET
    pipeline_id: uuid.UUID | Unset | None = UNSET
    stage_id: uuid.UUID | Unset | None = UNSET
    contacts: DealContacts[DealContactDraft] | Unset | None = UNSET  # replaces the list


@dataclass(frozen=True)
class LineItemDraft:
    name: LongName
    quantity: Quantity
    unit_price: Money
    product_id: uuid.UUID | None = None
    discount: Money = Decimal(0)
    currency: CurrencyIn | None = None  # must be the deal's (the default)
    sku: ItemSku | None = None
    notes: ItemNotes | None = None


@dataclass(frozen=True)
class LineItemChanges:
    name: LongName | Unset | None = UNSET
    quantity: Quantity | Unset | None = UNSET
    unit_price: Money | Unset | None = UNSET
    product_id: uuid.UUID | Unset | None = UNSET
    discount: Money | Unset | None = UNSET
    currency: CurrencyIn | Unset | None = UNSET
    sku: ItemSku | Unset | None = UNSET
    notes: ItemNotes | Unset | None = UNSET
    position: ItemPosition | Unset | None = UNSET  # 0..n-1: the others shift


# -------------------------------------------------------------------- tickets, projects, ticket types


@dataclass(frozen=True)
class TicketDraft:
    title: LongName
    source: TicketSource
    priority: TicketPriority = "normal"
    body_html: BodyHtml | None = None  # sanitised by the verb
    requester_id: uuid.UUID | None = None
    assignee_member_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    ticket_type_id: uuid.UUID | None = None
    channel: TicketChannel | None = None
    conversation_ids: ConversationIds = ()


@dataclass(frozen=True)
class TicketChanges:
    title: LongName | Unset | None = UNSET
    priority: TicketPriority | Unset | None = UNSET
    body_html: BodyHtml | Unset | None = UNSET
    requester_id: uuid.UUID | Unset | None = UNSET
    account_id: uuid.UUID | Unset | None = UNSET
    project_id: uuid.UUID | Unset | None = UNSET
    ticket_type_id: uuid.UUID | Unset | None = UNSET
    channel: TicketChannel | Unset | None = UNSET
    conversation_ids: ConversationIds | Unset | None = UNSET  # replaces the linked conversations
    state: TicketState | Unset | None = UNSET
    assignee_member_id: MemberId | Unset | None = UNSET


@dataclass(frozen=True)
class NamedDraft:
    """A project or a ticket type."""

    name: Name
    description: Description | None = None


@dataclass(frozen=True)
class NamedChanges:
    name: Name | Unset | None = UNSET
    description: Description | Unset | None = UNSET


# -------------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class TaskDraft:
    title: LongName
    type: TaskType = "to_do"
    priority: TaskPriority = "normal"
    due_date: datetime | None = None  # without an offset it is UTC
    owner_id: MemberId | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    notes: Notes | None = None


@dataclass(frozen=True)
class TaskChanges:
    title: LongName | Unset | None = UNSET
    type: TaskType | Unset | None = UNSET
    priority: TaskPriority | Unset | None = UNSET
    status: TaskStatus | Unset | None = UNSET
    due_date: datetime | Unset | None = UNSET
    owner_id: MemberId | Unset | None = UNSET
    deal_id: uuid.UUID | Unset | None = UNSET
    ticket_id: uuid.UUID | Unset | None = UNSET
    contact_id: uuid.UUID | Unset | None = UNSET
    account_id: uuid.UUID | Unset | None = UNSET
    notes: Notes | Unset | None = UNSET


# ------------------------------------------------------------------------------- contacts, accounts


@dataclass(frozen=True)
class IdentityDraft:
    __pydantic_config__ = CONFIG

    kind: IdentityKind
    value: IdentityValue


@dataclass(frozen=True)
class ContactDraft:
    name: Name
    job_title: JobTitle | None = None
    notes: Notes | None = None
    identities: Identities[IdentityDraft] = ()
    account_ids: AccountIds[uuid.UUID] = ()


@dataclass(frozen=True)
class ContactChanges:
    name: Name | Unset | None = UNSET
    job_title: JobTitle | Unset | None = UNSET
    notes: Notes | Unset | None = UNSET


@dataclass(frozen=True)
class AccountDraft:
    name: Name
    domain: Domain | None = None
    industry: Industry | None = None
    phone: Phone | None = None
    notes: Notes | None = None


@dataclass(frozen=True)
class AccountChanges:
    name: Name | Unset | None = UNSET
    domain: Domain | Unset | None = UNSET
    industry: Industry | Unset | None = UNSET
    phone: Phone | Unset | None = UNSET
    notes: Notes | Unset | None = UNSET


# ----------------------------------------------------------------------------------------- products


@dataclass(frozen=True)
class ProductDraft:
    name: ProductName
    price: Money  # a unit price: up to 4 decimal places are kept
    currency: CurrencyIn = "MXN"
    sku: Sku | None = None  # unique in the organization
    description: Description | None = None
    url: WebUrl | None = None
    image_url: WebUrl | None = None
    active: bool = True


@dataclass(frozen=True)
class ProductChanges:
    # name, price, currency and active may not be cleared: the verb refuses a null (value_null)
    name: ProductName | Unset | None = UNSET
    price: Money | Unset | None = UNSET
    currency: CurrencyIn | Unset | None = UNSET
    sku: Sku | Unset | None = UNSET
    description: Description | Unset | None = UNSET
    url: WebUrl | Unset | None = UNSET
    image_url: WebUrl | Unset | None = UNSET
    active: bool | Unset | None = UNSET


# ----------------------------------------------------------------------------------------- checking

_ADAPTERS: dict[tuple[type[Any], str], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any], name: str) -> TypeAdapter[Any]:
    """The field's rule, built once per field (building a TypeAdapter costs far more than using it)."""
    found = _ADAPTERS.get((cls, name))
    if found is None:
        hint = get_type_hints(cls, include_extras=True)[name]
        found = _ADAPTERS[(cls, name)] = TypeAdapter(without_unset(hint), config=CONFIG)
    return found


def _plain(value: Any) -> Any:
    """Nested drafts as mappings, so that their fields are checked again rather than trusted."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def check(draft: D) -> D:
    """``draft`` with every sent field read by its rule (text trimmed, currencies upper-cased, strings
    parsed into decimals, ids and dates), or the first field's :class:`~blueprints.crm.rules.Refusal`.
    Fields are checked in their declared order, the request model's. A field still holding its declared
    default (that very object: ``None``, ``UNSET``, ``"normal"``) is the dataclass's own value and is not
    read again, so a list's filters cost only what was given."""
    values: dict[str, Any] = {}
    for field in fields(draft):  # type: ignore[arg-type]
        value = getattr(draft, field.name)
        if value is UNSET or value is field.default:
            continue
        values[field.name] = check_value(_adapter(type(draft), field.name), _plain(value), field.name)
    return replace(draft, **values) if values else draft  # type: ignore[type-var]


def parse(cls: type[D], values: Mapping[str, Any]) -> D:
    """A checked draft from values in the wire's field names (a request body, a page's form); names the
    draft does not have are ignored, as the request models ignore them. A required field left out is
    refused as ``value_required``."""
    known: dict[str, Any] = {}
    for field in fields(cls):  # type: ignore[arg-type]
        if field.name in values:
            known[field.name] = values[field.name]
        elif field.default is MISSING and field.default_factory is MISSING:
            raise Refusal(400, f"{field.name}: Field required", code="value_required", param=field.name)
    return check(cls(**known))
