"""Request and response models of the CRM area (validation and the OpenAPI document)."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    WithJsonSchema,
    field_validator,
)

from blueprints.crm.money import CURRENCIES, decimal_str, money_str, number_out, price_str
from core.pagination import MAX_LIMIT, LimitOffsetQuery
from core.responses import ResponseModel, WireInstant, WireOptionalText, WireText
from core.timeutil import get_zone
from core.validation import QueryModel, RequestModel

# ---------------------------------------------------------------------------------------------- values

Currency = Literal[
    "MXN", "USD", "EUR", "COP", "ARS", "BRL", "CLP", "PEN", "UYU", "BOB",
    "PYG", "CRC", "DOP", "GTQ", "HNL", "NIO", "PAB", "GBP", "CAD",
]  # fmt: skip
assert set(Currency.__args__) == set(CURRENCIES)  # type: ignore[attr-defined]

StageStatus = Literal["open", "won", "lost"]
DealStatus = Literal["open", "won", "lost"]
TicketState = Literal["new", "waiting_on_agent", "waiting_on_customer", "on_hold", "closed"]
TicketPriority = Literal["urgent", "high", "normal", "low"]
TicketSource = Literal["manual", "api", "automation", "form", "channel"]
TicketChannel = Literal["whatsapp", "voice", "email", "sms", "webchat", "messenger"]
LinkChannel = Literal["whatsapp", "voice", "email", "sms", "webchat", "messenger", "instagram"]
TaskType = Literal["to_do", "call", "email", "meeting", "follow_up"]
TaskStatus = Literal["pending", "in_progress", "completed"]
TaskPriority = Literal["low", "normal", "high", "urgent"]
IdentityKind = Literal["phone", "email"]

MAX_MONEY = Decimal("1000000000000000")  # 10^15, far above any deal and inside Numeric(20, 4)


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


CurrencyIn = Annotated[Currency, BeforeValidator(_upper)]
Money = Annotated[Decimal, Field(ge=0, le=MAX_MONEY, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
# An id the members area issued (a UUID or a custom id of up to 64 characters); the services check that
# it names a member of the organization.
MemberId = Annotated[str, Field(min_length=1, max_length=64)]
LongName = Annotated[str, Field(min_length=1, max_length=500)]

_KEY = re.compile(r"^[A-Za-z]{2,5}$")


def _check_timezone(value: str | None) -> str | None:
    if value:
        get_zone(value)
    return value or None


# ------------------------------------------------------------------------------------------------ paths


class OrgPath(BaseModel):
    organization_id: str


class IdPath(OrgPath):
    id: uuid.UUID


class DealItemPath(IdPath):
    itemId: uuid.UUID


class DealLinkPath(IdPath):
    linkId: uuid.UUID


class SummaryPath(OrgPath):
    pipelineId: uuid.UUID


class RefPath(OrgPath):
    reference: str


class ContactIdentityPath(IdPath):
    identity_id: uuid.UUID


class AccountContactPath(IdPath):
    contact_id: uuid.UUID


class RatePath(OrgPath):
    from_currency: str
    to_currency: str


# ------------------------------------------------------------------------------- pipelines and currency


class PipelineCreate(RequestModel):
    name: Name
    key: str = Field(description="2 to 5 letters, unique in the organization; stored upper-case")
    is_default: bool | None = None

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _KEY.match(value):
            raise ValueError("must be 2 to 5 letters (A-Z)")
        return value.upper()


class PipelineUpdate(RequestModel):
    name: Name | None = None
    key: str | None = None
    is_default: bool | None = None

    @field_validator("key")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None and not _KEY.match(value):
            raise ValueError("must be 2 to 5 letters (A-Z)")
        return value.upper() if value else value


class StageCreate(RequestModel):
    name: Name
    stage_order: int = Field(ge=0, description="0-based position; stages at or after it shift by one")
    probability: int | None = Field(None, ge=0, le=100, description="default: 100 won, 0 lost/open")
    status: StageStatus = "open"
    rotting_days: int | None = Field(None, ge=1, le=3650)


class StageUpdate(RequestModel):
    name: Name | None = None
    stage_order: int | None = Field(None, ge=0)
    probability: int | None = Field(None, ge=0, le=100)
    status: StageStatus | None = None
    rotting_days: int | None = Field(None, ge=1, le=3650)


class StageDeleteQuery(QueryModel):
    move_to_stage_id: uuid.UUID | None = Field(
        None, description="Move the stage's deals here first (same pipeline); without it, 409 if any"
    )


class BaseCurrencyBody(RequestModel):
    base_currency: CurrencyIn


class RateBody(RequestModel):
    from_currency: CurrencyIn
    to_currency: CurrencyIn
    rate: Decimal = Field(gt=0, le=Decimal("1000000000"), allow_inf_nan=False)


class SettingsUpdate(RequestModel):
    ticket_prefix: str | None = Field(None, pattern=r"^[A-Za-z][A-Za-z0-9]{0,9}$")


# ---------------------------------------------------------------------------------------------- deals


class DealContactIn(RequestModel):
    contact_id: uuid.UUID
    role: str | None = Field(None, max_length=120)
    is_primary: bool = False


def _primary_once(contacts: list[DealContactIn] | None) -> list[DealContactIn] | None:
    if contacts is not None:
        if sum(1 for c in contacts if c.is_primary) > 1:
            raise ValueError("at most one contact can be primary")
        if len({c.contact_id for c in contacts}) != len(contacts):
            raise ValueError("a contact is listed twice")
    return contacts


class DealCreate(RequestModel):
    name: LongName
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    amount: Money | None = None
    currency: CurrencyIn = "MXN"
    status: DealStatus | None = Field(None, description="default: the stage's status (open)")
    owner_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    expected_close_date: date | None = None
    conversation_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=50
    )
    contacts: list[DealContactIn] = Field(default_factory=list, max_length=100)

    _contacts = field_validator("contacts")(classmethod(lambda cls, v: _primary_once(v)))


class DealUpdate(RequestModel):
    name: LongName | None = None
    amount: Money | None = None
    currency: CurrencyIn | None = None
    status: DealStatus | None = None
    owner_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    expected_close_date: date | None = None
    pipeline_id: uuid.UUID | None = None
    stage_id: uuid.UUID | None = None
    contacts: list[DealContactIn] | None = Field(None, max_length=100, description="replaces the list")

    _contacts = field_validator("contacts")(classmethod(lambda cls, v: _primary_once(v)))


class DealStageBody(RequestModel):
    stage_id: uuid.UUID


class DealListQuery(LimitOffsetQuery):
    search: str | None = Field(None, max_length=200)
    pipeline_id: uuid.UUID | None = None
    stage_id: uuid.UUID | None = None
    owner_id: MemberId | None = None
    status: DealStatus | None = None
    account_id: uuid.UUID | None = None
    product_id: uuid.UUID | None = None
    amount_min: Decimal | None = Field(None, allow_inf_nan=False)
    amount_max: Decimal | None = Field(None, allow_inf_nan=False)
    unassigned: bool | None = None
    currency: CurrencyIn | None = None
    expected_close_before: date | None = None
    expected_close_after: date | None = None
    created_after: date | None = None
    created_before: date | None = None
    sort_by: Literal["amount", "created_at", "updated_at", "name", "expected_close_date"] = "created_at"
    sort_dir: Literal["asc", "desc"] = "desc"
    timezone: str | None = None

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_timezone(v)))


class LineItemCreate(RequestModel):
    name: LongName
    quantity: Decimal = Field(gt=0, le=Decimal("100000000"), allow_inf_nan=False)
    unit_price: Money
    product_id: uuid.UUID | None = None
    discount: Money = Decimal(0)
    currency: CurrencyIn | None = Field(None, description="must be the deal's currency (the default)")
    sku: str | None = Field(None, max_length=100)
    notes: str | None = Field(None, max_length=5000)


class LineItemUpdate(RequestModel):
    name: LongName | None = None
    quantity: Decimal | None = Field(None, gt=0, le=Decimal("100000000"), allow_inf_nan=False)
    unit_price: Money | None = None
    product_id: uuid.UUID | None = None
    discount: Money | None = None
    currency: CurrencyIn | None = None
    sku: str | None = Field(None, max_length=100)
    notes: str | None = Field(None, max_length=5000)


class DealConversationBody(RequestModel):
    conversation_id: str = Field(min_length=1, max_length=100)
    channel: LinkChannel | None = None
    linked_by: MemberId | None = None


class NoteBody(RequestModel):
    body: str = Field(min_length=1, max_length=10000)
    author_id: uuid.UUID | None = None


# -------------------------------------------------------------------------------------------- tickets


class TicketCreate(RequestModel):
    title: LongName
    source: TicketSource
    priority: TicketPriority = "normal"
    body_html: str | None = Field(None, max_length=200_000)
    requester_id: uuid.UUID | None = None
    assignee_member_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    ticket_type_id: uuid.UUID | None = None
    channel: TicketChannel | None = None
    conversation_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=50
    )


class TicketUpdate(RequestModel):
    title: LongName | None = None
    priority: TicketPriority | None = None
    body_html: str | None = Field(None, max_length=200_000)
    requester_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    ticket_type_id: uuid.UUID | None = None
    channel: TicketChannel | None = None
    conversation_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None, max_length=50, description="replaces the linked conversations"
    )
    state: TicketState | None = None
    assignee_member_id: MemberId | None = None


class TicketAssignBody(RequestModel):
    assignee_member_id: MemberId | None = Field(description="member id; null unassigns")
    assigned_by: MemberId | None = None


class TicketStateBody(RequestModel):
    state: TicketState


class TicketListQuery(LimitOffsetQuery):
    state: TicketState | None = None
    priority: TicketPriority | None = None
    assignee_member_id: MemberId | None = None
    unassigned: bool | None = None
    requester_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    search: str | None = Field(None, max_length=200)
    created_after: date | None = None
    created_before: date | None = None
    timezone: str | None = None

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_timezone(v)))


class NamedCreate(RequestModel):
    name: Name
    description: str | None = Field(None, max_length=5000)


class NamedUpdate(RequestModel):
    name: Name | None = None
    description: str | None = Field(None, max_length=5000)


# ---------------------------------------------------------------------------------------------- tasks


class TaskCreate(RequestModel):
    title: LongName
    type: TaskType = "to_do"
    priority: TaskPriority = "normal"
    due_date: datetime | None = Field(None, description="ISO 8601; without an offset it is UTC")
    owner_id: MemberId | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    notes: str | None = Field(None, max_length=10000)


class TaskUpdate(RequestModel):
    title: LongName | None = None
    type: TaskType | None = None
    priority: TaskPriority | None = None
    status: TaskStatus | None = None
    due_date: datetime | None = None
    owner_id: MemberId | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    notes: str | None = Field(None, max_length=10000)


class TaskListQuery(LimitOffsetQuery):
    owner_id: MemberId | None = None
    status: TaskStatus | None = None
    is_completed: bool | None = None
    type: TaskType | None = None
    priority: TaskPriority | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    due_before: date | None = None
    due_after: date | None = None
    overdue: bool | None = None
    search: str | None = Field(None, max_length=200)
    timezone: str | None = None
    limit: int = Field(20, ge=1, le=MAX_LIMIT)  # tasks default to 20 (spec); the rest inherit 100

    _tz = field_validator("timezone")(classmethod(lambda cls, v: _check_timezone(v)))


# --------------------------------------------------------------------------------- contacts, accounts


class IdentityIn(RequestModel):
    kind: IdentityKind
    value: str = Field(min_length=1, max_length=320)


class ContactCreate(RequestModel):
    name: Name
    job_title: str | None = Field(None, max_length=200)
    notes: str | None = Field(None, max_length=10000)
    identities: list[IdentityIn] = Field(default_factory=list, max_length=50)
    account_ids: list[uuid.UUID] = Field(default_factory=list, max_length=50)


class ContactUpdate(RequestModel):
    name: Name | None = None
    job_title: str | None = Field(None, max_length=200)
    notes: str | None = Field(None, max_length=10000)


class ContactListQuery(LimitOffsetQuery):
    search: str | None = Field(None, max_length=200, description="name, phone or email")
    account_id: uuid.UUID | None = None


class MergeBody(RequestModel):
    source_contact_id: uuid.UUID = Field(description="merged into the contact of the path, then deleted")


class AccountCreate(RequestModel):
    name: Name
    domain: str | None = Field(None, max_length=255)
    industry: str | None = Field(None, max_length=120)
    phone: str | None = Field(None, max_length=40)
    notes: str | None = Field(None, max_length=10000)


class AccountUpdate(RequestModel):
    name: Name | None = None
    domain: str | None = Field(None, max_length=255)
    industry: str | None = Field(None, max_length=120)
    phone: str | None = Field(None, max_length=40)
    notes: str | None = Field(None, max_length=10000)


class AccountListQuery(LimitOffsetQuery):
    search: str | None = Field(None, max_length=200)


class AccountContactBody(RequestModel):
    contact_id: uuid.UUID
    role: str | None = Field(None, max_length=120)


# ------------------------------------------------------------------------------------------- responses
# Each response shape is declared once: these models feed the OpenAPI document and also serialise the
# rows the services return (``Model.dump(row)``). Derived fields (amounts in the row's currency, nested
# summaries) are computed in ``derive``.


TextId = WireText
# A Decimal the JSON provider writes as a number with its exact decimal text (core.jsonio); dump such a
# model in python mode, as JSON mode would turn it into a string.
ExactNumber = Annotated[
    Decimal, WithJsonSchema({"type": "number", "description": "exact decimal value, never a float"})
]
OptionalTextId = WireOptionalText
Instant = WireInstant
OptionalInstant = WireOptionalText


class OutModel(ResponseModel):
    """The CRM's responses (``core.responses``; ``derive`` computes amounts and nested summaries)."""


class StageOut(OutModel):
    id: TextId
    pipeline_id: TextId
    name: str
    stage_order: int
    probability: int
    status: StageStatus
    rotting_days: int | None = None


class PipelineOut(OutModel):
    id: TextId
    name: str
    key: str
    is_default: bool
    deal_counter: int
    stages: list[StageOut]
    created_at: Instant
    updated_at: Instant


class PipelineList(OutModel):
    data: list[PipelineOut]
    total: int


class RateOut(OutModel):
    from_currency: str
    to_currency: str
    rate: str = Field(description="decimal string: 1 from_currency = rate to_currency")
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"rate": decimal_str(row.rate)}


class CurrencyOut(OutModel):
    base_currency: str
    supported_currencies: list[str]
    rates: list[RateOut]


class SummaryStage(OutModel):
    stage_id: TextId
    stage_name: str
    stage_order: int
    status: str
    probability: int
    deal_count: int
    total_amount: ExactNumber
    weighted_amount: str
    currency: str
    unconverted_count: int

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        stage = row.stage
        return {
            "stage_id": stage.id,
            "stage_name": stage.name,
            "stage_order": stage.stage_order,
            "status": stage.status,
            "probability": stage.probability,
            "weighted_amount": money_str(row.weighted_amount, row.currency),
        }


class Unconverted(OutModel):
    deal_id: TextId
    reference: str
    stage_id: TextId
    amount: str
    currency: str
    reason: str

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"amount": money_str(row.amount, row.currency)}


class ConversionOut(OutModel):
    currency: str
    rate: str
    method: str
    path: list[str]

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"rate": format(row.rate.normalize(), "f"), "path": list(row.path)}


class PipelineSummary(OutModel):
    pipeline_id: TextId
    base_currency: str
    total_amount: ExactNumber
    weighted_amount: str
    total_deals: int
    converted_deals: int
    complete: bool
    stages: list[SummaryStage]
    unconverted: list[Unconverted]
    conversions: list[ConversionOut]

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"weighted_amount": money_str(row.weighted_amount, row.base_currency)}

    @classmethod
    def dump(cls, row: Any) -> dict[str, Any]:
        # Python mode keeps the totals as Decimal, which the app's JSON provider writes as exact numbers
        # (JSON mode would turn them into strings); every other field is already text or a number.
        return cls.model_validate(row).model_dump()


class SettingsOut(OutModel):
    base_currency: str
    ticket_prefix: str
    ticket_counter: int


class DealContactOut(OutModel):
    contact_id: TextId
    role: str | None
    is_primary: bool


class DealConversationOut(OutModel):
    id: TextId
    deal_id: TextId
    conversation_id: str
    channel: str | None
    linked_by: str | None
    summary: str | None
    created_at: Instant


class LineItemOut(OutModel):
    id: TextId
    deal_id: TextId
    product_id: OptionalTextId
    name: str
    quantity: int | float
    unit_price: str
    discount: str
    total: str
    currency: str
    sku: str | None
    notes: str | None
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "quantity": number_out(row.quantity),
            "unit_price": price_str(row.unit_price, row.currency),
            "discount": money_str(row.discount, row.currency),
            "total": money_str(row.total, row.currency),
        }


class PipelineRef(OutModel):
    id: TextId
    name: str
    key: str


class StageRef(OutModel):
    id: TextId
    name: str
    stage_order: int
    probability: int
    status: StageStatus


class DealOut(OutModel):
    id: TextId
    organization_id: TextId
    number: int
    reference: str
    name: str
    amount: str
    currency: str
    status: DealStatus
    pipeline_id: TextId
    stage_id: TextId
    owner_id: str | None
    account_id: OptionalTextId
    expected_close_date: OptionalInstant
    stage_entered_at: Instant
    closed_at: OptionalInstant
    is_rotting: bool
    created_at: Instant
    updated_at: Instant
    pipeline: PipelineRef
    stage: StageRef
    contacts: list[DealContactOut]
    conversations: list[DealConversationOut]
    line_items: list[LineItemOut]

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"amount": money_str(row.amount, row.currency)}


class DealList(OutModel):
    data: list[DealOut]
    total: int
    limit: int
    offset: int


class StageTime(OutModel):
    stage_id: TextId
    stage_name: str
    stage_order: int
    duration_ms: int
    is_current: bool
    visits: int


class StageTimes(OutModel):
    deal_id: TextId
    stages: list[StageTime]


class ActivityOut(OutModel):
    id: TextId
    deal_id: TextId
    type: str
    data: dict[str, Any]
    summary: str | None
    actor: str | None
    created_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"data": row.data or {}}


class ActivityList(OutModel):
    data: list[ActivityOut]
    total: int


class TicketOut(OutModel):
    id: TextId
    number: int
    reference: str
    title: str
    state: TicketState
    priority: TicketPriority
    source: TicketSource
    body_html: str | None
    requester_id: OptionalTextId
    assignee_member_id: str | None
    assigned_by: str | None
    assigned_at: OptionalInstant
    account_id: OptionalTextId
    project_id: OptionalTextId
    ticket_type_id: OptionalTextId
    channel: str | None
    conversation_ids: list[str]
    closed_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"conversation_ids": [c.conversation_id for c in row.conversations]}


class TicketList(OutModel):
    data: list[TicketOut]
    total: int
    limit: int
    offset: int


class StateChangeOut(OutModel):
    from_state: str | None
    to_state: str
    changed_by: str | None
    changed_at: Instant


class StateHistory(OutModel):
    ticket_id: TextId
    data: list[StateChangeOut]


class NamedOut(OutModel):
    id: TextId
    name: str
    description: str | None
    created_at: Instant
    updated_at: Instant


class NamedList(OutModel):
    data: list[NamedOut]
    total: int


class TaskDealRef(OutModel):
    id: TextId
    name: str
    reference: str


class TaskTicketRef(OutModel):
    id: TextId
    title: str
    reference: str


class NameRef(OutModel):
    id: TextId
    name: str


class TaskOut(OutModel):
    id: TextId
    organization_id: TextId
    title: str
    type: TaskType
    status: TaskStatus
    priority: TaskPriority
    due_date: OptionalInstant
    owner_id: str | None
    deal_id: OptionalTextId
    ticket_id: OptionalTextId
    contact_id: OptionalTextId
    account_id: OptionalTextId
    notes: str | None
    completed_at: OptionalInstant
    created_at: Instant
    updated_at: Instant
    deal: TaskDealRef | None
    ticket: TaskTicketRef | None
    contact: NameRef | None
    account: NameRef | None


class TaskList(OutModel):
    data: list[TaskOut]
    total: int
    limit: int
    offset: int


class IdentityOut(OutModel):
    id: TextId
    kind: IdentityKind
    value: str
    created_at: Instant


class LinkedName(OutModel):
    id: TextId
    name: str
    role: str | None


class CrmContactOut(OutModel):
    id: TextId
    name: str
    job_title: str | None
    notes: str | None
    identities: list[IdentityOut]
    accounts: list[LinkedName]
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "accounts": [
                {"id": link.account.id, "name": link.account.name, "role": link.role}
                for link in row.account_links
            ]
        }


class CrmContactList(OutModel):
    data: list[CrmContactOut]
    total: int
    limit: int
    offset: int


class MergeOut(OutModel):
    contact: CrmContactOut
    merged_contact_id: TextId
    moved: dict[str, int]


class AccountOut(OutModel):
    id: TextId
    name: str
    domain: str | None
    industry: str | None
    phone: str | None
    notes: str | None
    contacts: list[LinkedName]
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "contacts": [
                {"id": link.contact.id, "name": link.contact.name, "role": link.role}
                for link in row.contact_links
            ]
        }


class AccountList(OutModel):
    data: list[AccountOut]
    total: int
    limit: int
    offset: int


class Deleted(OutModel):
    id: TextId
    deleted: bool


# -------------------------------------------------------------------------------------------- products


def _web_url(value: str | None) -> str | None:
    """An absolute http(s) URL, or None for an empty value."""
    if value is None or not value.strip():
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL")
    return value.strip()


Sku = Annotated[str, Field(min_length=1, max_length=100)]


class ProductCreate(RequestModel):
    name: Annotated[str, Field(min_length=1, max_length=300)]
    price: Money = Field(description="unit price in `currency`, up to 4 decimal places")
    currency: CurrencyIn = "MXN"
    sku: Sku | None = Field(None, description="unique in the organization")
    description: str | None = Field(None, max_length=5000)
    url: str | None = Field(None, max_length=2048, description="the product's page (http or https)")
    image_url: str | None = Field(None, max_length=2048, description="a picture of the product")
    active: bool = True

    _urls = field_validator("url", "image_url")(classmethod(lambda cls, v: _web_url(v)))


class ProductUpdate(RequestModel):
    name: Annotated[str, Field(min_length=1, max_length=300)] | None = None
    price: Money | None = None
    currency: CurrencyIn | None = None
    sku: Sku | None = None
    description: str | None = Field(None, max_length=5000)
    url: str | None = Field(None, max_length=2048)
    image_url: str | None = Field(None, max_length=2048)
    active: bool | None = None

    _urls = field_validator("url", "image_url")(classmethod(lambda cls, v: _web_url(v)))


class ProductListQuery(LimitOffsetQuery):
    q: str | None = Field(None, max_length=200, description="words found in the name, SKU or description")
    active: bool | None = None


class ProductOut(OutModel):
    id: TextId
    organization_id: TextId
    sku: str | None
    name: str
    description: str | None
    price: str = Field(description="decimal string (at least the currency's minor units, at most 4 places)")
    currency: str
    url: str | None
    image_url: str | None
    active: bool
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"price": price_str(row.price, row.currency)}


class ProductList(OutModel):
    data: list[ProductOut]
    total: int
    limit: int
    offset: int


class ProductDeleted(OutModel):
    id: TextId
    deleted: bool = Field(description="true: removed; false: archived (line items reference it)")
    archived: bool
