"""Request and response models of the CRM area (validation and the OpenAPI document).

The rules a request model applies are the CRM's value types (``rules.py``), the very types the verbs'
typed inputs (``drafts.py``) are checked with; the list query models are generated from the services'
filter dataclasses, so a list's parameters are written once.
"""

from __future__ import annotations

import uuid
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, Field, WithJsonSchema, create_model

from blueprints.crm.money import decimal_str, money_str, number_out, price_str
from blueprints.crm.rules import (
    AccountIds,
    BodyHtml,
    ConversationId,
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
    LinkChannel,
    LongName,
    LostReason,
    MemberId,
    Money,
    Name,
    Notes,
    NoteText,
    Phone,
    PipelineKey,
    Probability,
    ProductName,
    Quantity,
    Rate,
    Role,
    RottingDays,
    Sku,
    StageOrder,
    StageStatus,
    TaskPriority,
    TaskStatus,
    TaskType,
    TicketChannel,
    TicketPrefix,
    TicketPriority,
    TicketSource,
    TicketState,
    WebUrl,
)
from blueprints.crm.services.contacts import AccountFilters, ContactFilters
from blueprints.crm.services.deals import DealFilters
from blueprints.crm.services.products import ProductFilters
from blueprints.crm.services.tasks import TaskFilters
from blueprints.crm.services.tickets import TicketFilters
from core.pagination import LimitOffsetQuery
from core.responses import ResponseModel, WireInstant, WireOptionalText, WireText
from core.validation import QueryModel, RequestModel

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


# ----------------------------------------------------------------------------------------- list queries


def _list_query(name: str, filters: type[Any]) -> type[LimitOffsetQuery]:
    """A list's query model, generated from the service's filter dataclass: each parameter's type, rule
    and default are the dataclass field's, so the API and the pages build the same filters and no
    parameter is declared twice. ``limit`` and ``offset`` keep their place first (LimitOffsetQuery)."""
    hints = get_type_hints(filters, include_extras=True)
    definitions: dict[str, Any] = {
        field.name: (hints[field.name], field.default if field.default is not MISSING else ...)
        for field in dataclass_fields(filters)
    }
    return create_model(name, __base__=LimitOffsetQuery, __module__=__name__, **definitions)


DealListQuery = _list_query("DealListQuery", DealFilters)
TicketListQuery = _list_query("TicketListQuery", TicketFilters)
TaskListQuery = _list_query("TaskListQuery", TaskFilters)
ContactListQuery = _list_query("ContactListQuery", ContactFilters)
AccountListQuery = _list_query("AccountListQuery", AccountFilters)
ProductListQuery = _list_query("ProductListQuery", ProductFilters)


# ------------------------------------------------------------------------------- pipelines and currency


class PipelineCreate(RequestModel):
    name: Name
    key: PipelineKey = Field(description="2 to 5 letters, unique in the organization; stored upper-case")
    is_default: bool | None = None


class PipelineUpdate(RequestModel):
    name: Name | None = None
    key: PipelineKey | None = None
    is_default: bool | None = None


class StageCreate(RequestModel):
    name: Name
    stage_order: StageOrder = Field(description="0-based position; stages at or after it shift by one")
    probability: Probability | None = Field(None, description="default: 100 won, 0 lost/open")
    status: StageStatus = "open"
    rotting_days: RottingDays | None = None


class StageUpdate(RequestModel):
    name: Name | None = None
    stage_order: StageOrder | None = None
    probability: Probability | None = None
    status: StageStatus | None = None
    rotting_days: RottingDays | None = None


class StageDeleteQuery(QueryModel):
    move_to_stage_id: uuid.UUID | None = Field(
        None, description="Move the stage's deals here first (same pipeline); without it, 409 if any"
    )


class BaseCurrencyBody(RequestModel):
    base_currency: CurrencyIn


class RateBody(RequestModel):
    from_currency: CurrencyIn
    to_currency: CurrencyIn
    rate: Rate


class SettingsUpdate(RequestModel):
    ticket_prefix: TicketPrefix | None = None


# ---------------------------------------------------------------------------------------------- deals


class DealContactIn(RequestModel):
    contact_id: uuid.UUID
    role: Role | None = None
    is_primary: bool = False


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
    conversation_ids: ConversationIds = Field(default_factory=tuple)
    contacts: DealContacts[DealContactIn] = Field(default_factory=tuple)


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
    contacts: DealContacts[DealContactIn] | None = Field(None, description="replaces the list")


class DealStageBody(RequestModel):
    stage_id: uuid.UUID
    lost_reason: LostReason | None = Field(
        None,
        description="why the deal was lost (1-500 characters after trimming); only with a stage whose "
        "status is `lost` (400 naming `lost_reason` otherwise); kept in the move's `stage_changed` "
        "activity as `data.lost_reason`",
    )


class LineItemCreate(RequestModel):
    name: LongName
    quantity: Quantity
    unit_price: Money
    product_id: uuid.UUID | None = None
    discount: Money = Decimal(0)
    currency: CurrencyIn | None = Field(None, description="must be the deal's currency (the default)")
    sku: ItemSku | None = None
    notes: ItemNotes | None = None


class LineItemUpdate(RequestModel):
    name: LongName | None = None
    quantity: Quantity | None = None
    unit_price: Money | None = None
    product_id: uuid.UUID | None = None
    discount: Money | None = None
    currency: CurrencyIn | None = None
    sku: ItemSku | None = None
    notes: ItemNotes | None = None
    position: ItemPosition | None = Field(
        None,
        description="0-based place among the deal's line items: the others shift so positions stay 0..n-1; "
        "beyond the last item is 400 (code position_out_of_range)",
    )


class DealConversationBody(RequestModel):
    conversation_id: ConversationId
    channel: LinkChannel | None = None
    linked_by: MemberId | None = None


class NoteBody(RequestModel):
    body: NoteText
    author_id: uuid.UUID | None = None


# -------------------------------------------------------------------------------------------- tickets


class TicketCreate(RequestModel):
    title: LongName
    source: TicketSource
    priority: TicketPriority = "normal"
    body_html: BodyHtml | None = None
    requester_id: uuid.UUID | None = None
    assignee_member_id: MemberId | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    ticket_type_id: uuid.UUID | None = None
    channel: TicketChannel | None = None
    conversation_ids: ConversationIds = Field(default_factory=tuple)


class TicketUpdate(RequestModel):
    title: LongName | None = None
    priority: TicketPriority | None = None
    body_html: BodyHtml | None = None
    requester_id: uuid.UUID | None = None
    account_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    ticket_type_id: uuid.UUID | None = None
    channel: TicketChannel | None = None
    conversation_ids: ConversationIds | None = Field(None, description="replaces the linked conversations")
    state: TicketState | None = None
    assignee_member_id: MemberId | None = None


class TicketAssignBody(RequestModel):
    assignee_member_id: MemberId | None = Field(description="member id; null unassigns")
    assigned_by: MemberId | None = None


class TicketStateBody(RequestModel):
    state: TicketState


class NamedCreate(RequestModel):
    name: Name
    description: Description | None = None


class NamedUpdate(RequestModel):
    name: Name | None = None
    description: Description | None = None


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
    notes: Notes | None = None


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
    notes: Notes | None = None


# --------------------------------------------------------------------------------- contacts, accounts


class IdentityIn(RequestModel):
    kind: IdentityKind
    value: IdentityValue


class ContactCreate(RequestModel):
    name: Name
    job_title: JobTitle | None = None
    notes: Notes | None = None
    identities: Identities[IdentityIn] = Field(default_factory=tuple)
    account_ids: AccountIds[uuid.UUID] = Field(default_factory=tuple)


class ContactUpdate(RequestModel):
    name: Name | None = None
    job_title: JobTitle | None = None
    notes: Notes | None = None


class MergeBody(RequestModel):
    source_contact_id: uuid.UUID = Field(description="merged into the contact of the path, then deleted")


class AccountCreate(RequestModel):
    name: Name
    domain: Domain | None = None
    industry: Industry | None = None
    phone: Phone | None = None
    notes: Notes | None = None


class AccountUpdate(RequestModel):
    name: Name | None = None
    domain: Domain | None = None
    industry: Industry | None = None
    phone: Phone | None = None
    notes: Notes | None = None


class AccountContactBody(RequestModel):
    contact_id: uuid.UUID
    role: Role | None = None


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
    position: int = Field(description="0-based place among the deal's line items (0..n-1)")
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


class ProductCreate(RequestModel):
    name: ProductName
    price: Money = Field(description="unit price in `currency`, up to 4 decimal places")
    currency: CurrencyIn = "MXN"
    sku: Sku | None = Field(None, description="unique in the organization")
    description: Description | None = None
    url: WebUrl | None = Field(None, description="the product's page (http or https)")
    image_url: WebUrl | None = Field(None, description="a picture of the product")
    active: bool = True


class ProductUpdate(RequestModel):
    name: ProductName | None = None
    price: Money | None = None
    currency: CurrencyIn | None = None
    sku: Sku | None = None
    description: Description | None = None
    url: WebUrl | None = None
    image_url: WebUrl | None = None
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
