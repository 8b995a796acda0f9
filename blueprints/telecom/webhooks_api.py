"""Lifecycle webhook endpoints, their delivery log and the events API, under ``/v1/partner``.

Parse, call ``services.webhooks`` / ``services.events``, serialise with ``schemas_webhooks``. The signing
secret appears only in the answers of creation and ``roll_secret``.
"""

from __future__ import annotations

from typing import Any

from blueprints.telecom.api import _blueprint, _org
from blueprints.telecom.schemas_webhooks import (
    EventList,
    EventListQuery,
    EventOut,
    EventPath,
    WebhookDeliveryList,
    WebhookDeliveryListQuery,
    WebhookDeliveryOut,
    WebhookDeliveryPath,
    WebhookEndpointCreate,
    WebhookEndpointDeleted,
    WebhookEndpointList,
    WebhookEndpointListQuery,
    WebhookEndpointOut,
    WebhookEndpointPath,
    WebhookEndpointUpdate,
    WebhookEndpointWithSecret,
    WebhookSecretRoll,
)
from blueprints.telecom.services import events, webhooks

Json = dict[str, Any]
Answer = tuple[Json, int]

webhooks_api = _blueprint(
    "webhooks",
    "Telecom: lifecycle webhooks",
    "Endpoints that receive signed events (`Partner-Signature`), and their delivery log",
)
events_api = _blueprint("events", "Telecom: events", "What happened to the partner's resources (30 days)")
BLUEPRINTS = (webhooks_api, events_api)


@webhooks_api.post("/lifecycle-webhooks", responses={201: WebhookEndpointWithSecret})
def create_endpoint(body: WebhookEndpointCreate) -> Answer:
    """Register an https endpoint for event types of the catalogue (or `["*"]`). The answer carries the
    signing `secret` (`whsec_…`), shown only here and by `roll_secret`. At most 16 per organization."""
    fields = webhooks.EndpointFields(
        url=body.url, enabled_events=body.enabled_events, description=body.description, metadata=body.metadata
    )
    endpoint, secret = webhooks.create_endpoint(_org(), fields)
    return WebhookEndpointWithSecret.of(endpoint, secret), 201


@webhooks_api.get("/lifecycle-webhooks", responses={200: WebhookEndpointList})
def list_endpoints(query: WebhookEndpointListQuery) -> Json:
    page = webhooks.list_endpoints(_org(), limit=query.limit, starting_after=query.starting_after)
    return WebhookEndpointList(
        data=[WebhookEndpointOut.model_validate(e) for e in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@webhooks_api.get("/lifecycle-webhooks/<endpoint_id>", responses={200: WebhookEndpointOut})
def get_endpoint(path: WebhookEndpointPath) -> Json:
    return WebhookEndpointOut.dump(webhooks.get_endpoint(_org(), path.endpoint_id))


@webhooks_api.patch("/lifecycle-webhooks/<endpoint_id>", responses={200: WebhookEndpointOut})
def update_endpoint(path: WebhookEndpointPath, body: WebhookEndpointUpdate) -> Json:
    """Change the sent fields. `status` `disabled` stops the endpoint's pending deliveries; `enabled`
    starts it again for new events (events of the disabled time are not sent; retry them by hand)."""
    return WebhookEndpointOut.dump(webhooks.update_endpoint(_org(), path.endpoint_id, body.sent_fields()))


@webhooks_api.delete("/lifecycle-webhooks/<endpoint_id>", responses={200: WebhookEndpointDeleted})
def delete_endpoint(path: WebhookEndpointPath) -> Json:
    deleted = webhooks.delete_endpoint(_org(), path.endpoint_id)
    return WebhookEndpointDeleted(id=deleted).model_dump(mode="json")


@webhooks_api.post(
    "/lifecycle-webhooks/<endpoint_id>/roll_secret", responses={200: WebhookEndpointWithSecret}
)
def roll_secret(path: WebhookEndpointPath, body: WebhookSecretRoll) -> Json:
    """A new signing secret (in the answer only). With `expires_in` the old secret keeps signing for that
    many seconds (a second `v1` in `Partner-Signature`), so the receiver can switch without a gap."""
    endpoint, secret = webhooks.roll_secret(_org(), path.endpoint_id, body.expires_in)
    return WebhookEndpointWithSecret.of(endpoint, secret)


@webhooks_api.get("/lifecycle-webhooks/<endpoint_id>/deliveries", responses={200: WebhookDeliveryList})
def list_deliveries(path: WebhookEndpointPath, query: WebhookDeliveryListQuery) -> Json:
    """The endpoint's delivery log, newest first; filters `status`, `event`."""
    page = webhooks.list_deliveries(
        _org(),
        path.endpoint_id,
        status=query.status,
        event_id=query.event,
        limit=query.limit,
        starting_after=query.starting_after,
    )
    return WebhookDeliveryList(
        data=[WebhookDeliveryOut.model_validate(d) for d in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@webhooks_api.get("/lifecycle-webhooks/deliveries/<delivery_id>", responses={200: WebhookDeliveryOut})
def get_delivery(path: WebhookDeliveryPath) -> Json:
    return WebhookDeliveryOut.dump(webhooks.get_delivery(_org(), path.delivery_id))


@webhooks_api.post("/lifecycle-webhooks/deliveries/<delivery_id>/retry", responses={202: WebhookDeliveryOut})
def retry_delivery(path: WebhookDeliveryPath) -> Answer:
    """Send the delivery's event again now (any status; 409 while the endpoint is disabled). The attempt
    runs in the background: read the delivery again for its outcome."""
    return WebhookDeliveryOut.dump(webhooks.request_retry(_org(), path.delivery_id)), 202


@events_api.get("/events", responses={200: EventList})
def list_events(query: EventListQuery) -> Json:
    """Events of the last 30 days, newest first; filter `type`."""
    page = events.list_events(_org(), type=query.type, limit=query.limit, starting_after=query.starting_after)
    rows = [EventOut.model_validate(e) for e in page.items]
    return EventList(data=rows, has_more=page.has_more).model_dump(mode="json")


@events_api.get("/events/<event_id>", responses={200: EventOut})
def get_event(path: EventPath) -> Json:
    """One event (404 once it is older than 30 days)."""
    return EventOut.dump(events.get_event(_org(), path.event_id))
