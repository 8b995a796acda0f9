"""Wire shapes of the organization lookup."""

from __future__ import annotations

from pydantic import BaseModel, RootModel

from blueprints.organizations.models import Organization
from core.db import isoformat


class OrganizationOut(BaseModel):
    id: str
    name: str
    products: list[str]
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, organization: Organization) -> OrganizationOut:
        return cls(
            id=str(organization.id),
            name=organization.name,
            products=list(organization.products or []),
            created_at=isoformat(organization.created_at) or "",
            updated_at=isoformat(organization.updated_at) or "",
        )


class OrganizationList(RootModel[list[OrganizationOut]]):
    pass
