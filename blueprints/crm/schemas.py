"""Request and response models of the CRM area (validation and the OpenAPI document)."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from blueprints.crm.money import CURRENCIES
from core.pagination import MAX_LIMIT, LimitOffsetQuery
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
    owner_id: uuid.UUID | None = None
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
    owner_id: uuid.UUID | None = None
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
    owner_id: uuid.UUID | None = None
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
    linked_by: uuid.UUID | None = None


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
    assignee_member_id: uuid.UUID | None = None
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
    assignee_member_id: uuid.UUID | None = None


class TicketAssignBody(RequestModel):
    assignee_member_id: uuid.UUID | None = Field(description="null unassigns")
    assigned_by: uuid.UUID | None = None


class TicketStateBody(RequestModel):
    state: TicketState


class TicketListQuery(LimitOffsetQuery):
    state: TicketState | None = None
    priority: TicketPriority | None = None
    assignee_member_id: uuid.UUID | None = None
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
    owner_id: uuid.UUID | None = None
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
    owner_id: uuid.UUID | None = None
    deal_id: uuid.UUID | None = None
    ticket_id: uuid.UUID | None = None
    contact_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    notes: str | None = Field(None, max_length=10000)


class TaskListQuery(LimitOffsetQuery):
    owner_id: uuid.UUID | None = None
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
# Documentation shapes: views return plain dicts built by blueprints.crm.serializers with these fields.


class StageOut(BaseModel):
    id: str
    pipeline_id: str
    name: str
    stage_order: int
    probability: int
    status: StageStatus
    rotting_days: int | None = None


class PipelineOut(BaseModel):
    id: str
    name: str
    key: str
    is_default: bool
    deal_counter: int
    stages: list[StageOut]
    created_at: str
    updated_at: str


class PipelineList(BaseModel):
    data: list[PipelineOut]
    total: int


class RateOut(BaseModel):
    from_currency: str
    to_currency: str
    rate: str = Field(description="decimal string: 1 from_currency = rate to_currency")
    updated_at: str


class CurrencyOut(BaseModel):
    base_currency: str
    supported_currencies: list[str]
    rates: list[RateOut]


class SummaryStage(BaseModel):
    stage_id: str
    stage_name: str
    stage_order: int
    status: str
    probability: int
    deal_count: int
    total_amount: str
    weighted_amount: str
    currency: str
    unconverted_count: int


class Unconverted(BaseModel):
    deal_id: str
    reference: str
    stage_id: str
    amount: str
    currency: str
    reason: str


class ConversionOut(BaseModel):
    currency: str
    rate: str
    method: str
    path: list[str]


class PipelineSummary(BaseModel):
    pipeline_id: str
    base_currency: str
    total_amount: str
    weighted_amount: str
    total_deals: int
    converted_deals: int
    complete: bool
    stages: list[SummaryStage]
    unconverted: list[Unconverted]
    conversions: list[ConversionOut]


class SettingsOut(BaseModel):
    base_currency: str
    ticket_prefix: str
    ticket_counter: int


class DealContactOut(BaseModel):
    contact_id: str
    role: str | None
    is_primary: bool


class DealConversationOut(BaseModel):
    id: str
    deal_id: str
    conversation_id: str
    channel: str | None
    linked_by: str | None
    summary: str | None
    created_at: str


class LineItemOut(BaseModel):
    id: str
    deal_id: str
    product_id: str | None
    name: str
    quantity: float
    unit_price: str
    discount: str
    total: str
    currency: str
    sku: str | None
    notes: str | None
    created_at: str
    updated_at: str


class DealOut(BaseModel):
    id: str
    organization_id: str
    number: int
    reference: str
    name: str
    amount: str
    currency: str
    status: DealStatus
    pipeline_id: str
    stage_id: str
    owner_id: str | None
    account_id: str | None
    expected_close_date: str | None
    stage_entered_at: str
    closed_at: str | None
    is_rotting: bool
    created_at: str
    updated_at: str
    pipeline: dict[str, Any]
    stage: dict[str, Any]
    contacts: list[DealContactOut]
    conversations: list[DealConversationOut]
    line_items: list[LineItemOut]


class DealList(BaseModel):
    data: list[DealOut]
    total: int
    limit: int
    offset: int


class StageTime(BaseModel):
    stage_id: str
    stage_name: str
    stage_order: int
    duration_ms: int
    is_current: bool
    visits: int


class StageTimes(BaseModel):
    deal_id: str
    stages: list[StageTime]


class ActivityOut(BaseModel):
    id: str
    deal_id: str
    type: str
    data: dict[str, Any]
    summary: str | None
    actor: str | None
    created_at: str


class ActivityList(BaseModel):
    data: list[ActivityOut]
    total: int


class TicketOut(BaseModel):
    id: str
    number: int
    reference: str
    title: str
    state: TicketState
    priority: TicketPriority
    source: TicketSource
    body_html: str | None
    requester_id: str | None
    assignee_member_id: str | None
    assigned_by: str | None
    assigned_at: str | None
    account_id: str | None
    project_id: str | None
    ticket_type_id: str | None
    channel: str | None
    conversation_ids: list[str]
    closed_at: str | None
    created_at: str
    updated_at: str


class TicketList(BaseModel):
    data: list[TicketOut]
    total: int
    limit: int
    offset: int


class StateChangeOut(BaseModel):
    from_state: str | None
    to_state: str
    changed_by: str | None
    changed_at: str


class StateHistory(BaseModel):
    ticket_id: str
    data: list[StateChangeOut]


class NamedOut(BaseModel):
    id: str
    name: str
    description: str | None
    created_at: str
    updated_at: str


class NamedList(BaseModel):
    data: list[NamedOut]
    total: int


class TaskOut(BaseModel):
    id: str
    organization_id: str
    title: str
    type: TaskType
    status: TaskStatus
    priority: TaskPriority
    due_date: str | None
    owner_id: str | None
    deal_id: str | None
    ticket_id: str | None
    contact_id: str | None
    account_id: str | None
    notes: str | None
    completed_at: str | None
    created_at: str
    updated_at: str
    deal: dict[str, Any] | None
    ticket: dict[str, Any] | None
    contact: dict[str, Any] | None
    account: dict[str, Any] | None


class TaskList(BaseModel):
    data: list[TaskOut]
    total: int
    limit: int
    offset: int


class IdentityOut(BaseModel):
    id: str
    kind: IdentityKind
    value: str
    created_at: str


class ContactOut(BaseModel):
    id: str
    name: str
    job_title: str | None
    notes: str | None
    identities: list[IdentityOut]
    accounts: list[dict[str, Any]]
    created_at: str
    updated_at: str


class ContactList(BaseModel):
    data: list[ContactOut]
    total: int
    limit: int
    offset: int


class MergeOut(BaseModel):
    contact: ContactOut
    merged_contact_id: str
    moved: dict[str, int]


class AccountOut(BaseModel):
    id: str
    name: str
    domain: str | None
    industry: str | None
    phone: str | None
    notes: str | None
    contacts: list[dict[str, Any]]
    created_at: str
    updated_at: str


class AccountList(BaseModel):
    data: list[AccountOut]
    total: int
    limit: int
    offset: int


class Deleted(BaseModel):
    id: str
    deleted: bool
