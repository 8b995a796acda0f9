"""Request and response models of the telecom area: they validate, document (OpenAPI) and serialise.

Each response shape is declared once here; ``Out.dump(row)`` builds the JSON body from an ORM row or a
service dataclass (derived fields in ``derive``). Names carry a ``Tel`` prefix where another area could
use the same word, since OpenAPI components are named by class.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, EmailStr, Field, ValidationInfo, field_validator

from blueprints.telecom.mexico import STATES
from blueprints.telecom.services.common import CURRENCY, pesos
from core.environments import LIVE, current_environment
from core.responses import ResponseModel, WireInstant, WireOptionalText
from core.validation import QueryModel, RequestModel

# Requests ----------------------------------------------------------------------------------------------

Metadata = Annotated[dict[str, Annotated[str, Field(max_length=500)]], Field(max_length=50)]
PersonType = Literal["person", "company"]
SimType = Literal["SIM", "ESIM"]


class TelListQuery(QueryModel):
    limit: int = Field(10, ge=1, le=100)
    starting_after: str | None = Field(None, max_length=40)


class UserListQuery(TelListQuery):
    status: Literal["active", "blocked", "deleted"] | None = None
    email: str | None = Field(None, max_length=254)


class UserCreate(RequestModel):
    email: EmailStr = Field(max_length=254)
    full_name: str = Field(min_length=1, max_length=200)
    person_type: PersonType = "person"
    phone_number: str | None = Field(None, max_length=30)
    birthday: date | None = None
    preferred_locale: str = Field("es-MX", min_length=2, max_length=35)
    metadata: Metadata = Field(default_factory=dict)


class UserUpdate(RequestModel):
    not_null: ClassVar[tuple[str, ...]] = ("email", "full_name", "person_type", "preferred_locale", "status")

    email: EmailStr | None = Field(None, max_length=254)
    full_name: str | None = Field(None, min_length=1, max_length=200)
    person_type: PersonType | None = None
    phone_number: str | None = Field(None, max_length=30)
    birthday: date | None = None
    preferred_locale: str | None = Field(None, min_length=2, max_length=35)
    status: Literal["active", "blocked"] | None = None
    metadata: Metadata | None = None


class UserPath(BaseModel):
    user_id: str = Field(max_length=40)


class AddressPath(UserPath):
    address_id: str = Field(max_length=40)


class AddressCreate(RequestModel):
    line1: str = Field(min_length=1, max_length=200)
    line2: str | None = Field(None, max_length=200)
    neighborhood: str | None = Field(None, max_length=120)
    city: str = Field(min_length=1, max_length=120)
    state: str = Field(
        min_length=2, max_length=60, description="ISO 3166-2:MX code (CMX) or the state's name"
    )
    postal_code: str = Field(min_length=1, max_length=10, description="5 digits")
    country: str = Field("MX", max_length=2)
    type: Literal["residential", "billing", "shipping"] = "residential"


class AddressUpdate(RequestModel):
    not_null: ClassVar[tuple[str, ...]] = ("line1", "city", "state", "postal_code", "country", "type")

    line1: str | None = Field(None, min_length=1, max_length=200)
    line2: str | None = Field(None, max_length=200)
    neighborhood: str | None = Field(None, max_length=120)
    city: str | None = Field(None, min_length=1, max_length=120)
    state: str | None = Field(None, min_length=2, max_length=60)
    postal_code: str | None = Field(None, min_length=1, max_length=10)
    country: str | None = Field(None, max_length=2)
    type: Literal["residential", "billing", "shipping"] | None = None


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


class KycDocument(RequestModel):
    type: Literal["ine", "passport", "curp_biometrica", "fm_migratoria", "acta_constitutiva"]
    number: str = Field(min_length=4, max_length=30, pattern=r"^[A-Za-z0-9-]+$")


class KycCreate(RequestModel):
    full_name: str = Field(min_length=1, max_length=200)
    curp: Annotated[str | None, BeforeValidator(_upper)] = Field(None, max_length=18)
    rfc: Annotated[str | None, BeforeValidator(_upper)] = Field(None, max_length=13)
    document: KycDocument


class KycPath(UserPath):
    kyc_id: str = Field(max_length=40)


class PlanPath(BaseModel):
    plan_id: str = Field(max_length=60)


class PlanListQuery(QueryModel):
    status: Literal["available", "archived"] = "available"


class TopupListQuery(QueryModel):
    plan: str | None = Field(None, max_length=60)


class OfferListQuery(QueryModel):
    country: str | None = Field(None, min_length=2, max_length=2)


class AreaCodeQuery(QueryModel):
    state: str | None = Field(None, max_length=60)
    code: str | None = Field(None, pattern=r"^\d{2,3}$")


class TransactionListQuery(TelListQuery):
    type: Literal["credit", "hold", "hold_release", "debit", "refund"] | None = None
    source_id: str | None = Field(None, max_length=40)


class TransactionPath(BaseModel):
    transaction_id: str = Field(max_length=40)


class SubscriptionCreate(RequestModel):
    type: SimType
    user: str = Field(max_length=40)
    plan: str = Field(max_length=60)
    # porting is declared before area_code: area_code's check reads it (pydantic validates in order).
    porting: str | None = Field(
        None, max_length=40, description="A pending porting (prt_…) whose number the line will take"
    )
    area_code: str | None = Field(
        None,
        pattern=r"^\d{2,3}$",
        validate_default=True,
        description="A new number in this area code; exactly one of area_code and porting",
    )
    metadata: Metadata = Field(default_factory=dict)

    @field_validator("area_code")
    @classmethod
    def _area_code_or_porting(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Exactly one: a new number or a ported one. Missing both reads as "area_code: Field required"
        # so the message names the usual field, with the alternative.
        porting = info.data.get("porting")
        if value is None and porting is None:
            raise ValueError("Field required (or porting, for a line that takes a ported number)")
        if value is not None and porting is not None:
            raise ValueError("send either area_code (a new number) or porting (a ported number), not both")
        return value


class SubscriptionListQuery(TelListQuery):
    status: (
        Literal["pending", "active", "suspending", "suspended", "resuming", "canceling", "ended"] | None
    ) = None
    user: str | None = Field(None, max_length=40)


class SubscriptionPath(BaseModel):
    subscription_id: str = Field(max_length=40)


class PlanChangeBody(RequestModel):
    plan: str = Field(max_length=60)
    when: Literal["now", "renewal"] = "now"


class SimChangeBody(RequestModel):
    type: SimType
    reason: Literal["lost", "stolen", "damaged", "device_change"]


class TopupBody(RequestModel):
    topup: str = Field(max_length=60)


# Responses ---------------------------------------------------------------------------------------------


Instant = WireInstant
OptionalInstant = WireOptionalText
Amount = Annotated[str, Field(description="MXN pesos as a decimal string, e.g. 199.00", examples=["199.00"])]


def livemode() -> bool:
    return current_environment() == LIVE


class Out(ResponseModel):
    """The telecom area's responses (``core.responses``)."""


class Money(BaseModel):
    amount: Amount
    currency: Literal["MXN"] = CURRENCY

    @classmethod
    def of(cls, cents: int) -> Money:
        return cls(amount=pesos(cents) or "0.00")


class Allowances(BaseModel):
    data_bytes: int | None
    voice_seconds: int | None
    sms_messages: int | None

    @classmethod
    def of(cls, row: Any) -> Allowances:
        return cls(data_bytes=row.data_bytes, voice_seconds=row.voice_seconds, sms_messages=row.sms_messages)


class UserOut(Out):
    id: str
    object: Literal["user"] = "user"
    email: str
    full_name: str
    person_type: str
    phone_number: str | None
    birthday: date | None
    preferred_locale: str
    status: str
    kyc_status: str
    metadata: dict[str, Any]
    livemode: bool
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "user", "metadata": row.extra or {}, "livemode": livemode()}


class UserList(BaseModel):
    object: Literal["list"] = "list"
    data: list[UserOut]
    has_more: bool


class UserAddressOut(Out):
    id: str
    object: Literal["address"] = "address"
    user: str
    line1: str
    line2: str | None
    neighborhood: str | None
    city: str
    state: str
    state_name: str
    postal_code: str
    country: str
    type: str
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "address", "user": row.user_id, "state_name": STATES.get(row.state, row.state)}


class UserAddressList(BaseModel):
    object: Literal["list"] = "list"
    data: list[UserAddressOut]
    has_more: bool = False


class TelDeleted(BaseModel):
    id: str
    object: str
    deleted: bool = True


class KycError(BaseModel):
    code: str
    reason: str | None


class KycValidation(BaseModel):
    result: str
    source: str
    validated_at: Instant


class KycDocumentOut(BaseModel):
    type: str
    number: str


class KycOut(Out):
    id: str
    object: Literal["kyc_verification"] = "kyc_verification"
    user: str
    person_type: str
    curp: str | None
    rfc: str | None
    full_name: str
    document: KycDocumentOut
    status: str
    last_error: KycError | None
    validation: KycValidation | None
    folio: str | None
    verified_at: OptionalInstant
    canceled_at: OptionalInstant
    livemode: bool
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "kyc_verification",
            "user": row.user_id,
            "document": KycDocumentOut(type=row.document_type, number=row.document_number),
            "last_error": KycError(code=row.last_error_code, reason=row.last_error_reason)
            if row.last_error_code
            else None,
            "validation": KycValidation(
                result=row.validation_result, source=row.validation_source, validated_at=row.validated_at
            )
            if row.validation_result
            else None,
            "livemode": livemode(),
        }


class KycList(BaseModel):
    object: Literal["list"] = "list"
    data: list[KycOut]
    has_more: bool = False


class PlanOut(Out):
    id: str
    object: Literal["plan"] = "plan"
    name: str
    description: str | None
    status: str
    price: Money
    validity_days: int
    allowances: Allowances
    sim_types: list[str]
    coverage: list[str]
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "plan", "price": Money.of(row.price_cents), "allowances": Allowances.of(row)}


class PlanList(BaseModel):
    object: Literal["list"] = "list"
    data: list[PlanOut]
    has_more: bool = False


class TopupOut(Out):
    id: str
    object: Literal["topup"] = "topup"
    name: str
    status: str
    price: Money
    validity_days: int
    allowances: Allowances
    compatible_plans: list[str]

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "topup", "price": Money.of(row.price_cents), "allowances": Allowances.of(row)}


class TopupList(BaseModel):
    object: Literal["list"] = "list"
    data: list[TopupOut]
    has_more: bool = False


class EsimOfferOut(Out):
    id: str
    object: Literal["esim_offer"] = "esim_offer"
    name: str
    status: str
    scope: str
    countries: list[str]
    data_bytes: int | None
    validity_days: int
    price: Money
    activation_policy: str
    has_phone_number: bool

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "esim_offer", "price": Money.of(row.price_cents)}


class EsimOfferList(BaseModel):
    object: Literal["list"] = "list"
    data: list[EsimOfferOut]
    has_more: bool = False


class AreaCodeOut(Out):
    id: str
    object: Literal["area_code"] = "area_code"
    code: str
    digits: int
    local_number_length: int
    states: list[str]
    cities: list[str]
    available_for_new_lines: bool

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"id": row.code, "object": "area_code"}


class AreaCodeList(BaseModel):
    object: Literal["list"] = "list"
    data: list[AreaCodeOut]
    has_more: bool = False


class BalanceOut(Out):
    object: Literal["balance"] = "balance"
    currency: Literal["MXN"] = CURRENCY
    available: Amount
    held: Amount
    ledger: Amount
    livemode: bool
    updated_at: OptionalInstant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "balance",
            "currency": CURRENCY,
            "available": pesos(row.available_cents),
            "held": pesos(row.held_cents),
            "ledger": pesos(row.ledger_cents),
            "livemode": livemode(),
        }


class SourceRef(BaseModel):
    object: str
    id: str


class TransactionOut(Out):
    id: str
    object: Literal["balance_transaction"] = "balance_transaction"
    type: str
    amount: Amount
    currency: Literal["MXN"] = CURRENCY
    balance_after: Amount
    source: SourceRef | None
    description: str
    created_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "balance_transaction",
            "currency": CURRENCY,
            "amount": pesos(row.amount_cents),
            "balance_after": pesos(row.balance_after_cents),
            "source": SourceRef(object=row.source_object, id=row.source_id) if row.source_id else None,
        }


class TransactionList(BaseModel):
    object: Literal["list"] = "list"
    data: list[TransactionOut]
    has_more: bool


class SimOut(BaseModel):
    iccid: str | None
    type: str
    status: str


class EsimOut(BaseModel):
    activation_code: str
    smdp_address: str
    matching_id: str


class PendingAction(BaseModel):
    order: str


class Period(BaseModel):
    start: Instant
    end: Instant


class SubscriptionOut(Out):
    id: str
    object: Literal["subscription"] = "subscription"
    user: str
    plan: str
    type: str
    status: str
    phone_number: str | None
    area_code: str
    sim: SimOut
    esim: EsimOut | None
    kyc_verification: str
    registration_folio: str
    registered_at: Instant
    pending_action: PendingAction | None
    scheduled_plan: str | None
    suspension_reason: str | None
    current_period: Period | None
    metadata: dict[str, Any]
    livemode: bool
    activated_at: OptionalInstant
    suspended_at: OptionalInstant
    canceled_at: OptionalInstant
    ended_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        esim = None
        if row.type == "ESIM" and row.esim_smdp_address and row.esim_matching_id:
            esim = EsimOut(
                activation_code=f"LPA:1${row.esim_smdp_address}${row.esim_matching_id}",
                smdp_address=row.esim_smdp_address,
                matching_id=row.esim_matching_id,
            )
        period = None
        if row.status not in ("pending", "ended") and row.period_start and row.period_end:
            period = Period(start=row.period_start, end=row.period_end)
        return {
            "object": "subscription",
            "user": row.user_id,
            "plan": row.plan_id,
            "sim": SimOut(iccid=row.iccid, type=row.type, status=row.sim_status),
            "esim": esim,
            "kyc_verification": row.kyc_verification_id,
            "pending_action": PendingAction(order=row.pending_order_id) if row.pending_order_id else None,
            "scheduled_plan": row.scheduled_plan_id,
            "current_period": period,
            "metadata": row.extra or {},
            "livemode": livemode(),
        }


class SubscriptionList(BaseModel):
    object: Literal["list"] = "list"
    data: list[SubscriptionOut]
    has_more: bool


class OrderFailure(BaseModel):
    code: str
    message: str | None


class OrderOut(Out):
    id: str
    object: Literal["order"] = "order"
    subscription: str
    type: str
    status: str
    amount: Amount | None
    currency: Literal["MXN"] = CURRENCY
    details: dict[str, Any]
    failure: OrderFailure | None
    completed_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "order",
            "subscription": row.subscription_id,
            "amount": pesos(row.amount_cents),
            "currency": CURRENCY,
            "details": {k: v for k, v in (row.details or {}).items() if k != "from_status"},
            "failure": OrderFailure(code=row.failure_code, message=row.failure_message)
            if row.failure_code
            else None,
        }


class OrderList(BaseModel):
    object: Literal["list"] = "list"
    data: list[OrderOut]
    has_more: bool = False


class SubscriptionAccepted(SubscriptionOut):
    """202: the line in its transitional state, and the order that will settle it."""

    order: OrderOut

    @classmethod
    def of(cls, subscription: Any, order: Any) -> dict[str, Any]:
        return {**SubscriptionOut.dump(subscription), "order": OrderOut.dump(order)}


class UsageDayOut(BaseModel):
    date: date
    data_bytes: int
    voice_seconds: int
    sms_messages: int


class UsageTotals(BaseModel):
    data_bytes: int
    voice_seconds: int
    sms_messages: int


class UsageOut(Out):
    object: Literal["usage"] = "usage"
    subscription: str
    period: Period
    as_of: Instant
    days: list[UsageDayOut]
    totals: UsageTotals
    allowance_remaining: Allowances

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "usage",
            "subscription": row.subscription.id,
            "period": Period(start=row.period_start, end=row.period_end),
            "days": [
                UsageDayOut(
                    date=d.day,
                    data_bytes=d.data_bytes,
                    voice_seconds=d.voice_seconds,
                    sms_messages=d.sms_messages,
                )
                for d in row.days
            ],
            "totals": UsageTotals(**row.totals),
            "allowance_remaining": Allowances(**row.remaining),
        }
