"""Wire shapes of organization addresses."""

from __future__ import annotations

from pydantic import BaseModel, RootModel


class OrgPath(BaseModel):
    organization_id: str


class AddressExtra(BaseModel):
    phone_number: str | None
    verified_name: str | None
    waba_id: str | None


class AddressOut(BaseModel):
    organization_id: str
    service: str
    address: str
    extra: AddressExtra
    status: str
    provider: str
    has_access_token: bool
    created_at: str
    updated_at: str


class AddressList(RootModel[list[AddressOut]]):
    pass
