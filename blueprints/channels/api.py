"""``GET {msg}/addresses``: the organization's channel accounts (never their access tokens)."""

from __future__ import annotations

from flask_openapi3 import APIBlueprint, Tag

from blueprints.channels import services
from blueprints.channels.schemas import AddressList, AddressOut, OrgPath
from core import auth
from core.openapi import API_KEY_ONLY, PlainError, error_responses

api = APIBlueprint(
    "channels_api",
    __name__,
    url_prefix="/v2/messages/organizations/<organization_id>",
    abp_tags=[
        Tag(name="Organization addresses", description="Connected WhatsApp, Instagram and Messenger accounts")
    ],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


@api.get("/addresses", responses={200: AddressList})
def list_addresses(path: OrgPath) -> list[dict[str, object]]:
    """List the organization addresses; `status` `connected` or `active` can send."""
    return [AddressOut.dump(a) for a in services.list_addresses(auth.current_organization_id())]
