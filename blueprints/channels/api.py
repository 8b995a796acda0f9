"""``GET {msg}/addresses``: the organization's channel accounts (never their access tokens);
``GET {msg}/dead-letters``: inbound items that could not be stored."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import Tag

from blueprints.channels import dead_letters, services
from blueprints.channels.schemas import (
    AddressList,
    AddressOut,
    DeadLetterList,
    DeadLetterListQuery,
    DeadLetterOut,
    OrgPath,
)
from core import auth
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses

api = AreaAPI(
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


@api.get("/dead-letters", responses={200: DeadLetterList})
def list_dead_letters(path: OrgPath, query: DeadLetterListQuery) -> dict[str, Any]:
    """Inbound messages and statuses of the organization's addresses that could not be stored (refused at
    the edge of the webhook or failing in storage), newest first: `{data, total, skip, take}`."""
    page = dead_letters.list_for_organization(
        auth.current_organization_id(), skip=query.skip, take=query.take
    )
    return DeadLetterList(
        data=[DeadLetterOut.model_validate(row) for row in page.items],
        total=page.total,
        skip=query.skip,
        take=query.take,
    ).model_dump(mode="json")
