"""Request and response models of ``/v1/partner/portings`` (number portability). Components carry a
``Porting`` prefix: OpenAPI names them by class. The NIP appears in requests only: no response model
has a field for it (``nip_provided`` says whether one is on file)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from blueprints.telecom.schemas import Metadata, Out, TelListQuery, livemode
from core.responses import WireInstant, WireOptionalText
from core.validation import RequestModel

PortingStatus = Literal["pending", "requested", "declined", "completed", "canceled", "expired"]
Nip = Annotated[
    str,
    Field(
        pattern=r"^\d{4}$",
        description="The 4-digit NIP the holder received by texting NIP to 051 (write-only)",
        json_schema_extra={"writeOnly": True},
    ),
]


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


class PortingHolder(RequestModel):
    """The number's holder at the donor carrier: a person (CURP) or a company (RFC)."""

    full_name: str = Field(min_length=1, max_length=200)
    person_type: Literal["person", "company"] = "person"
    curp: Annotated[str | None, BeforeValidator(_upper)] = Field(None, max_length=18)
    rfc: Annotated[str | None, BeforeValidator(_upper)] = Field(None, max_length=13)


class PortingCreate(RequestModel):
    user: str = Field(max_length=40)
    phone_number: str = Field(min_length=1, max_length=30, description="The Mexican number to port, E.164")
    nip: Nip
    nip_issued_at: datetime = Field(description="When 051 sent the NIP; valid 5 calendar days from then")
    holder: PortingHolder
    metadata: Metadata = Field(default_factory=dict)


class PortingUpdate(RequestModel):
    """PATCH: only the sent fields change; ``nip`` and ``nip_issued_at`` go together."""

    nip: Nip | None = None
    nip_issued_at: datetime | None = None
    holder: PortingHolder | None = None
    metadata: Metadata | None = None

    @field_validator("holder", "metadata")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        # Field-level (not RequestModel.not_null) so the 400 names the field in ``param``.
        if value is None:
            raise ValueError("must not be null")
        return value


class PortingListQuery(TelListQuery):
    status: PortingStatus | None = None
    user: str | None = Field(None, max_length=40)
    phone_number: str | None = Field(None, max_length=30)


class PortingPath(BaseModel):
    porting_id: str = Field(max_length=40)


class PortingHolderOut(BaseModel):
    full_name: str
    person_type: str
    curp: str | None
    rfc: str | None


class PortingOut(Out):
    id: str
    object: Literal["porting"] = "porting"
    user: str
    subscription: str | None
    phone_number: str
    status: str
    nip_provided: bool
    nip_issued_at: WireInstant
    nip_expires_at: WireInstant
    holder: PortingHolderOut
    donor_provider: str | None
    declined_code: str | None
    declined_message: str | None
    declined_attempts: int
    last_declined_at: WireOptionalText
    requested_at: WireOptionalText
    scheduled_for: WireOptionalText
    completed_at: WireOptionalText
    canceled_at: WireOptionalText
    expired_at: WireOptionalText
    metadata: dict[str, Any]
    livemode: bool
    created_at: WireInstant
    updated_at: WireInstant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {
            "object": "porting",
            "user": row.user_id,
            "subscription": row.subscription_id,
            "nip_provided": row.nip is not None,
            "holder": PortingHolderOut(
                full_name=row.holder_full_name,
                person_type=row.holder_person_type,
                curp=row.holder_curp,
                rfc=row.holder_rfc,
            ),
            "metadata": row.extra or {},
            "livemode": livemode(),
        }


class PortingList(BaseModel):
    object: Literal["list"] = "list"
    data: list[PortingOut]
    has_more: bool
