"""The organizations area as core's authentication reads it (``core.auth.Tenancy``): API keys through
the process's key cache, an organization's existence and products. Connected at start-up in
``blueprints/integrations``; core itself imports no area."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from blueprints.organizations import services
from blueprints.organizations.models import Organization
from core.auth import AuthenticatedKey
from core.db import db


class OrganizationTenancy:
    def authenticate_key(self, plaintext: str, environment: str, now: datetime) -> AuthenticatedKey | None:
        return services.authenticate_key(plaintext, environment, now)

    def record_key_use(self, key_id: uuid.UUID, now: datetime, touch_after: timedelta) -> None:
        services.touch_api_key(key_id, now, touch_after)

    def organization_exists(self, organization_id: uuid.UUID) -> bool:
        return db.session.get(Organization, organization_id) is not None

    def organization_products(self, organization_id: uuid.UUID) -> tuple[str, ...]:
        organization = db.session.get(Organization, organization_id)
        return tuple(organization.products or ()) if organization is not None else ()


TENANCY = OrganizationTenancy()
