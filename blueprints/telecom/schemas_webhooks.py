"""Request and response models of lifecycle webhooks and events (``/v1/partner/lifecycle-webhooks``,
``/v1/partner/events``). Names start with ``Webhook`` or ``Event``: OpenAPI components are named by class."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from blueprints.telecom.schemas import Instant, Metadata, OptionalInstant, Out, TelListQuery, livemode
from core.validation import RequestModel

# Requests ----------------------------------------------------------------------------------------------

EventTypeName = Annotated[str, Field(min_length=1, max_length=64)]
EnabledEvents = Annotated[
    list[EventTypeName],
    Field(
        min_length=1,
        max_length=64,
        description='Event types of the catalogue (`GET /v1/partner/events` lists what happened), or `["*"]`',
        examples=[["subscription.activated", "subscription.suspended"], ["*"]],
    ),
]
WebhookUrl = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        description="https URL of the receiver (public address; no credentials in the URL)",
        examples=["https://partner.example.mx/hooks/telecom"],
    ),
]


class WebhookEndpointCreate(RequestModel):
    url: WebhookUrl
    enabled_events: EnabledEvents
    description: str | None = Field(None, max_length=500)
    metadata: Metadata = Field(default_factory=dict)


class WebhookEndpointUpdate(RequestModel):
    not_null: ClassVar[tuple[str, ...]] = ("url", "enabled_events", "status", "metadata")

    url: WebhookUrl | None = None
    enabled_events: EnabledEvents | None = None
    description: str | None = Field(None, max_length=500)
    metadata: Metadata | None = None
    status: Literal["enabled", "disabled"] | None = None


class WebhookSecretRoll(RequestModel):
    expires_in: int = Field(
        0,
        ge=0,
        le=86400,
        description="Seconds the previous secret keeps signing beside the new one (0: it stops now)",
    )


class WebhookEndpointPath(BaseModel):
    endpoint_id: str = Field(max_length=40)


class WebhookDeliveryPath(BaseModel):
    delivery_id: str = Field(max_length=40)


class WebhookEndpointListQuery(TelListQuery):
    pass


class WebhookDeliveryListQuery(TelListQuery):
    status: Literal["pending", "succeeded", "failed"] | None = None
    event: str | None = Field(None, max_length=40)


class EventListQuery(TelListQuery):
    type: str | None = Field(None, max_length=64, description="One event type of the catalogue")


class EventPath(BaseModel):
    event_id: str = Field(max_length=40)


# Responses ---------------------------------------------------------------------------------------------


class WebhookEndpointOut(Out):
    id: str
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    url: str
    description: str | None
    enabled_events: list[str]
    status: Literal["enabled", "disabled"]
    disabled_reason: Literal["manual", "too_many_failures"] | None
    disabled_at: OptionalInstant
    previous_secret_expires_at: OptionalInstant = Field(
        description="While set and in the future, deliveries carry a second `v1` made with the old secret"
    )
    metadata: dict[str, Any]
    livemode: bool
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "webhook_endpoint", "metadata": row.extra or {}, "livemode": livemode()}


class WebhookEndpointWithSecret(WebhookEndpointOut):
    """Creation and ``roll_secret`` only: the one time the signing secret is shown."""

    secret: str = Field(description="`whsec_…`: keep it; it is not shown again", examples=["whsec_…"])

    @classmethod
    def of(cls, endpoint: Any, secret: str) -> dict[str, Any]:
        return {**WebhookEndpointOut.dump(endpoint), "secret": secret}


class WebhookEndpointList(BaseModel):
    object: Literal["list"] = "list"
    data: list[WebhookEndpointOut]
    has_more: bool


class WebhookEndpointDeleted(BaseModel):
    id: str
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    deleted: bool = True


class WebhookDeliveryResponse(BaseModel):
    status: int | None = Field(description="HTTP status of the receiver's answer (null: no answer)")
    body: str | None = Field(description="The first 1 KB of the answer's body")
    duration_ms: int | None


class WebhookDeliveryAttempt(BaseModel):
    attempted_at: Instant
    response_status: int | None
    duration_ms: int
    error: str | None
    manual: bool


class WebhookDeliveryOut(Out):
    id: str
    object: Literal["webhook_delivery"] = "webhook_delivery"
    endpoint: str
    event: str
    event_type: str
    status: Literal["pending", "succeeded", "failed"]
    attempts: int
    next_attempt_at: OptionalInstant
    last_attempt_at: OptionalInstant
    last_response: WebhookDeliveryResponse | None
    last_error: str | None = Field(description="`http_<status>`, `timeout: …`, `connection_error: …`, …")
    history: list[WebhookDeliveryAttempt] = Field(description="The last 20 attempts, oldest first")
    retry_requested: bool = Field(description="A manual retry is queued")
    completed_at: OptionalInstant
    created_at: Instant
    updated_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        answered = row.last_attempt_at is not None
        return {
            "object": "webhook_delivery",
            "endpoint": row.endpoint_id,
            "event": row.event_id,
            "last_response": WebhookDeliveryResponse(
                status=row.last_response_status, body=row.last_response_body, duration_ms=row.last_duration_ms
            )
            if answered
            else None,
            "history": row.history or [],
            "retry_requested": row.manual_requested_at is not None,
        }


class WebhookDeliveryList(BaseModel):
    object: Literal["list"] = "list"
    data: list[WebhookDeliveryOut]
    has_more: bool


class EventData(BaseModel):
    object: dict[str, Any] = Field(description="The resource as the API showed it when the event happened")

    model_config = {"extra": "allow"}


class EventOut(Out):
    id: str
    object: Literal["event"] = "event"
    type: str
    data: EventData
    livemode: bool
    created_at: Instant

    @classmethod
    def derive(cls, row: Any) -> dict[str, Any]:
        return {"object": "event", "data": row.data, "livemode": livemode()}


class EventList(BaseModel):
    object: Literal["list"] = "list"
    data: list[EventOut]
    has_more: bool
