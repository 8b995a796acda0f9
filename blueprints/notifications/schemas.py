"""Request and response models of the notifications area (the OpenAPI document takes them from here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from blueprints.notifications.models import CHANNELS, STATUSES
from core.pagination import PageLimitQuery
from core.responses import ResponseModel, WireObject, WireOptionalText, WireText

Channel = Literal["email", "whatsapp", "webhook"]
Status = Literal["pending", "retrying", "sent", "failed", "skipped"]
assert set(Channel.__args__) == set(CHANNELS) and set(Status.__args__) == set(STATUSES)  # type: ignore[attr-defined]


class OrgPath(BaseModel):
    organization_id: str


class AgentPath(OrgPath):
    agent_id: str


class DeliveryPath(AgentPath):
    delivery_id: str


class DeliveryListQuery(PageLimitQuery):
    status: Status | None = None
    trigger: str | None = Field(None, max_length=40, description="`end_of_call` or a tool name")
    channel: Channel | None = None


class DeliveryOut(ResponseModel):
    id: WireText
    notification_id: str = Field(description="shared by the deliveries of one trigger")
    agent_id: str
    agent_name: str | None
    trigger: str
    channel: Channel
    target: str
    status: Status
    attempts: int
    next_attempt_at: WireOptionalText
    last_attempt_at: WireOptionalText
    last_error: str | None
    last_response_code: int | None = Field(description="the receiver's HTTP status, or the SMTP reply code")
    sent_at: WireOptionalText
    payload: WireObject = Field(description="the notification as the webhook receives it")
    created_at: WireText
    updated_at: WireText


class DeliveryList(ResponseModel):
    data: list[DeliveryOut]
    total: int
    page: int
    limit: int


class SigningSecretOut(ResponseModel):
    secret: str = Field(description="HMAC-SHA256 key of the `AgentDesk-Signature` header (`whsec_…`)")
    header: str
    scheme: str
