"""The delivery log of an AI agent's notifications, under the members area's paths
(``/v1/members/organizations/{organization_id}/...``, its error format ``{statusCode, message}``)."""

from __future__ import annotations

import uuid
from typing import Any

from flask_openapi3 import Tag

from blueprints.notifications import senders, services
from blueprints.notifications.schemas import (
    AgentPath,
    DeliveryList,
    DeliveryListQuery,
    DeliveryOut,
    DeliveryPath,
    OrgPath,
    SigningSecretOut,
)
from core import auth
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses

TAG = Tag(
    name="Members: AI agent notifications",
    description="Deliveries of an AI agent's notifications (e-mail, WhatsApp, signed webhooks)",
)

api = AreaAPI(
    "notifications_api",
    __name__,
    url_prefix="/v1/members/organizations/<organization_id>",
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses={**error_responses(PlainError), "409": PlainError},
)
auth.protect(api)


def _org() -> uuid.UUID:
    return auth.current_organization_id()


@api.get("/members/<agent_id>/notifications/deliveries", responses={200: DeliveryList})
def list_deliveries(path: AgentPath, query: DeliveryListQuery) -> dict[str, Any]:
    """The agent's notification deliveries, newest first, with status, attempts and the last error."""
    filters = services.DeliveryFilters(
        status=query.status,
        trigger=query.trigger,
        channel=query.channel,
        offset=query.offset,
        limit=query.limit,
    )
    page = services.list_deliveries(_org(), path.agent_id, filters)
    return DeliveryList.dump(
        {"data": page.items, "total": page.total, "page": query.page, "limit": query.limit}
    )


@api.get("/members/<agent_id>/notifications/deliveries/<delivery_id>", responses={200: DeliveryOut})
def get_delivery(path: DeliveryPath) -> dict[str, Any]:
    return DeliveryOut.dump(services.get_delivery(_org(), path.agent_id, path.delivery_id))


@api.post("/members/<agent_id>/notifications/deliveries/<delivery_id>/retry", responses={200: DeliveryOut})
def retry_delivery(path: DeliveryPath) -> dict[str, Any]:
    """Send a failed or skipped delivery again (queued now, with a fresh attempt budget); 409 once sent."""
    return DeliveryOut.dump(services.request_retry(_org(), path.agent_id, path.delivery_id))


@api.get("/notifications/signing-secret", responses={200: SigningSecretOut})
def signing_secret(path: OrgPath) -> dict[str, Any]:
    """The secret that signs the organization's notification webhooks (`AgentDesk-Signature`)."""
    return SigningSecretOut.dump(
        {
            "secret": senders.signing_secret(_org()),
            "header": senders.SIGNATURE_HEADER,
            "scheme": "t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>",
        }
    )
