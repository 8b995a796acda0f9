"""Wire shapes of organization addresses and dead letters: each declared once; it documents the route and
writes its JSON."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from blueprints.channels.models import OrganizationAddress
from core.db import isoformat
from core.pagination import MAX_TAKE
from core.validation import QueryModel


class OrgPath(BaseModel):
    organization_id: str


class AddressExtra(BaseModel):
    phone_number: str | None = None
    verified_name: str | None = None
    waba_id: str | None = None


class AddressOut(BaseModel):
    """Never the access token: only whether there is one."""

    model_config = ConfigDict(from_attributes=True)

    organization_id: str
    service: str
    address: str
    extra: AddressExtra
    status: str
    provider: str
    has_access_token: bool
    created_at: str
    updated_at: str

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, value: Any) -> Any:
        if not isinstance(value, OrganizationAddress):
            return value
        extra = value.extra or {}
        return {
            "organization_id": str(value.organization_id),
            "service": value.service,
            "address": value.address,
            "extra": {key: extra.get(key) for key in AddressExtra.model_fields},
            "status": value.status,
            "provider": value.provider,
            "has_access_token": value.has_access_token,
            "created_at": value.created_at,
            "updated_at": value.updated_at,
        }

    @field_validator("created_at", "updated_at", mode="before")
    @classmethod
    def _iso(cls, value: Any) -> Any:
        return isoformat(value) if isinstance(value, datetime) else value

    @classmethod
    def dump(cls, address: OrganizationAddress) -> dict[str, Any]:
        return cls.model_validate(address).model_dump(mode="json")


class AddressList(RootModel[list[AddressOut]]):
    pass


class DeadLetterListQuery(QueryModel):
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


class DeadLetterOut(BaseModel):
    """An inbound item that could not be stored. ``raw`` is the item as received, as JSON text (NUL and
    lone surrogates as escapes), at most 16,384 characters (``raw_truncated``)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    organization_id: str | None
    received_at: str
    source: str = Field(description="`webhook/meta`")
    service: str | None
    organization_address: str | None
    reason: str
    raw: str
    raw_truncated: bool

    @field_validator("id", "organization_id", "received_at", mode="before")
    @classmethod
    def _wire(cls, value: Any) -> Any:
        if isinstance(value, uuid.UUID):
            return str(value)
        return isoformat(value) if isinstance(value, datetime) else value


class DeadLetterList(BaseModel):
    data: list[DeadLetterOut]
    total: int
    skip: int
    take: int
