"""``GET /v1/organizations``: the organizations that the caller's key resolves."""

from __future__ import annotations

from blueprints.organizations import services
from blueprints.organizations.schemas import OrganizationList, OrganizationOut
from core import auth
from core.openapi import API_KEY_ONLY, TAG_ORGANIZATIONS, AreaAPI, PlainError, error_responses

PREFIX = "/v1/organizations"

api = AreaAPI(
    "organizations_api",
    __name__,
    url_prefix=PREFIX,
    abp_tags=[TAG_ORGANIZATIONS],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


@api.get("", responses={200: OrganizationList}, strict_slashes=False)
def list_organizations() -> list[dict[str, object]]:
    """List the organizations the API key resolves (one per key)."""
    organization = services.get_organization(auth.current_organization_id())
    organizations = [organization] if organization else []
    return [OrganizationOut.of(o).model_dump() for o in organizations]
