"""Request and response models of travel eSIMs (``/v1/partner/data_esims``). Every name starts with
``DataEsim`` because OpenAPI components are named by class and the area's other models share words."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field

from blueprints.telecom.models_data_esims import activation_code
from blueprints.telecom.schemas import (
    Amount,
    Instant,
    Metadata,
    Money,
    OptionalInstant,
    Out,
    TelListQuery,
    livemode,
)
from blueprints.telecom.services.common import CURRENCY, pesos
from core.validation import RequestModel

DataEsimStatus = Literal["provisioning", "failed", "not_active", "active", "depleted", "expired"]

# Requests ----------------------------------------------------------------------------------------------


class DataEsimCreate(RequestModel):
    offer: str = Field(max_length=60, description="An available eSIM offer (`off_…`)")
    user: str | None = Field(None, max_length=40, description="Optional: the traveller (`usr_…`, active)")
    metadata: Metadata = Field(
        default_factory=dict,
        description="At most 50 keys; in the sandbox `simulate` drives the simulator (docs/telecom.md)",
    )


class DataEsimListQuery(TelListQuery):
    status: DataEsimStatus | None = None
    user: str | None = Field(None, max_length=40)


class DataEsimPath(BaseModel):
    data_esim_id: str = Field(max_length=40)


class DataEsimTopupCreate(RequestModel):
    offer: str = Field(
        max_length=60,
        description="An available offer covering every country of the eSIM, unlimited for an unlimited eSIM",
    )


# Responses ---------------------------------------------------------------------------------------------


class DataEsimFailure(BaseModel):
    code: str
    message: str | None


class DataEsimOut(Out):
    id: str
    object: Literal["data_esim"] = "data_esim"
    offer: str
    user: str | None
    status: DataEsimStatus
    price: Money
    iccid: str | None
    activation_code: str | None = Field(
        description="`LPA:1$<SM-DP+ address>$<matching id>`; null until issued"
    )
    smdp_address: str | None
    matching_id: str | None
    activation_policy: str
    data_total_bytes: int | None = Field(description="Offer plus applied top-ups; null = unlimited")
    data_remaining_bytes: int | None = Field(description="As reported at `as_of`; null = unlimited")
    as_of: OptionalInstant = Field(description="When the supplier reported these figures")
    failure: DataEsimFailure | None
    metadata: dict[str, Any]
    livemode: bool
    activated_at: OptionalInstant
    expires_at: OptionalInstant
    depleted_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, view: Any) -> dict[str, Any]:
        """From a ``DataEsimView`` (row + ``as_of``) or a bare row (as last reported, e.g. in events)."""
        row = getattr(view, "esim", view)
        return {
            **{name: getattr(row, name) for name in cls.model_fields if hasattr(row, name)},
            "object": "data_esim",
            "offer": row.offer_id,
            "user": row.user_id,
            "price": Money.of(row.price_cents),
            "activation_code": activation_code(row),
            "as_of": getattr(view, "as_of", row.reported_at),
            "failure": DataEsimFailure(code=row.failure_code, message=row.failure_message)
            if row.failure_code
            else None,
            "metadata": row.extra or {},
            "livemode": livemode(),
        }


class DataEsimList(BaseModel):
    object: Literal["list"] = "list"
    data: list[DataEsimOut]
    has_more: bool


class DataEsimTopupOut(Out):
    id: str
    object: Literal["data_esim_topup"] = "data_esim_topup"
    data_esim: str
    offer: str
    status: Literal["processing", "completed", "failed"]
    amount: Amount
    currency: Literal["MXN"] = CURRENCY
    data_bytes: int | None = Field(description="Data the top-up adds; null = unlimited")
    validity_days: int
    failure: DataEsimFailure | None
    livemode: bool
    completed_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "data_esim_topup",
            "data_esim": row.data_esim_id,
            "offer": row.offer_id,
            "amount": pesos(row.amount_cents),
            "currency": CURRENCY,
            "failure": DataEsimFailure(code=row.failure_code, message=row.failure_message)
            if row.failure_code
            else None,
            "livemode": livemode(),
        }


class DataEsimTopupList(BaseModel):
    object: Literal["list"] = "list"
    data: list[DataEsimTopupOut]
    has_more: bool = False


class DataEsimUsageDay(BaseModel):
    date: date
    data_bytes: int


class DataEsimUsageOut(Out):
    object: Literal["data_esim_usage"] = "data_esim_usage"
    data_esim: str
    as_of: Instant
    days: list[DataEsimUsageDay]
    data_used_bytes: int
    data_remaining_bytes: int | None

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "data_esim_usage",
            "data_esim": row.esim.id,
            "as_of": row.as_of,
            "days": [DataEsimUsageDay(date=d.day, data_bytes=d.data_bytes) for d in row.days],
            "data_used_bytes": sum(d.data_bytes for d in row.days),
            "data_remaining_bytes": row.esim.data_remaining_bytes,
        }
