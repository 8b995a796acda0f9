"""Wire shapes of organization addresses: each declared once; it documents the route and writes its JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, RootModel, field_validator, model_validator

from blueprints.channels.models import OrganizationAddress
from core.db import isoformat


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
