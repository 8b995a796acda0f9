"""Request and response models of the voice area: the validation, the OpenAPI shapes and the
serialisers (``Model.dump(row)``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from blueprints.voice.models import STATUSES, Call, VoiceNumber
from core.db import isoformat
from core.pagination import MAX_TAKE
from core.validation import QueryModel, RequestModel

Status = Literal["queued", "ringing", "in_progress", "completed", "busy", "no_answer", "failed", "canceled"]
assert set(Status.__args__) == set(STATUSES)  # type: ignore[attr-defined]


class OrgPath(BaseModel):
    organization_id: str


class NumberPath(OrgPath):
    number_id: str


class CallPath(OrgPath):
    call_id: str


# ---- numbers ----------------------------------------------------------------------------------------------


class RoutesTo(BaseModel):
    type: Literal["agent", "member", "default", "none"]
    id: str | None = None


class NumberOut(BaseModel):
    id: str
    organization_id: str
    number: str
    provider: str
    env: str
    account_sid: str | None
    has_auth_token: bool
    agent_id: str | None
    member_id: str | None
    routes_to: RoutesTo
    created_at: str
    updated_at: str

    @classmethod
    def dump(cls, number: VoiceNumber, default_agent: str | None = None) -> dict[str, Any]:
        if number.agent_id:
            routes = {"type": "agent", "id": number.agent_id}
        elif number.member_id:
            routes = {"type": "member", "id": number.member_id}
        elif default_agent:
            routes = {"type": "default", "id": default_agent}
        else:
            routes = {"type": "none", "id": None}
        return {
            "id": str(number.id),
            "organization_id": str(number.organization_id),
            "number": number.number,
            "provider": number.provider,
            "env": number.env,
            "account_sid": number.account_sid,
            "has_auth_token": number.has_auth_token,
            "agent_id": number.agent_id,
            "member_id": number.member_id,
            "routes_to": routes,
            "created_at": isoformat(number.created_at),
            "updated_at": isoformat(number.updated_at),
        }


class NumberList(BaseModel):
    data: list[NumberOut]
    total: int
    skip: int
    take: int


class NumberListQuery(QueryModel):
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


class NumberPatch(RequestModel):
    """Exactly one of ``agent_id`` (an AI member) or ``member_id`` (a human member); ``null`` clears."""

    agent_id: str | None = Field(None, max_length=64)
    member_id: str | None = Field(None, max_length=64)


# ---- calls ------------------------------------------------------------------------------------------------


class CallCreate(RequestModel):
    to: str = Field(max_length=40, description="E.164, e.g. +525512345678")
    from_number: str | None = Field(None, max_length=40, description="One of the organization's numbers")
    agent_id: str | None = Field(None, max_length=64)
    member_id: str | None = Field(None, max_length=64)
    contact_id: str | None = Field(None, max_length=64)
    metadata: dict[str, Any] | None = Field(None, max_length=50)


class TranscriptEntry(BaseModel):
    speaker: Literal["agent", "caller", "member"]
    text: str
    at_ms: int


class TransferOut(BaseModel):
    """The hand-off of an AI-answered call to a person (docs/voice.md, "Calls")."""

    target: str | None = Field(description="the rule's target: an E.164 number or a member id; null: no rule")
    target_type: Literal["phone", "member"] | None
    rule: str | None = Field(description="the `call_transfers` rule's name")
    reason: str = Field(description="the agent's note")
    dial: str | None = Field(description="the number the call was dialled to; null: nobody to dial")
    at: str


class CallOut(BaseModel):
    model_config = {"populate_by_name": True}

    id: str
    organization_id: str
    direction: Literal["inbound", "outbound"]
    from_: str = Field(alias="from")
    to: str
    status: Status
    provider: str
    provider_call_id: str | None
    number_id: str | None
    agent_id: str | None
    member_id: str | None
    contact_id: str | None
    campaign_id: str | None
    started_at: str | None
    answered_at: str | None
    ended_at: str | None
    duration_seconds: int | None
    ended_reason: str | None
    recording_url: str | None
    transcript: list[TranscriptEntry]
    summary: str | None
    transfer: TransferOut | None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str

    @classmethod
    def dump(cls, call: Call) -> dict[str, Any]:
        return {
            "id": str(call.id),
            "organization_id": str(call.organization_id),
            "direction": call.direction,
            "from": call.from_number,
            "to": call.to_number,
            "status": call.status,
            "provider": call.provider,
            "provider_call_id": call.provider_call_id,
            "number_id": str(call.number_id) if call.number_id else None,
            "agent_id": call.agent_id,
            "member_id": call.member_id,
            "contact_id": call.contact_id,
            "campaign_id": str(call.campaign_id) if call.campaign_id else None,
            "started_at": isoformat(call.started_at),
            "answered_at": isoformat(call.answered_at),
            "ended_at": isoformat(call.ended_at),
            "duration_seconds": call.duration_seconds,
            "ended_reason": call.ended_reason,
            "recording_url": call.recording_url,
            "transcript": list(call.transcript or []),
            "summary": call.summary,
            "transfer": call.transfer,
            "metadata": dict(call.call_metadata or {}),
            "created_at": isoformat(call.created_at),
            "updated_at": isoformat(call.updated_at),
        }


class CallList(BaseModel):
    data: list[CallOut]
    total: int
    skip: int
    take: int


class CallListQuery(QueryModel):
    direction: Literal["inbound", "outbound"] | None = None
    status: Status | None = None
    agent_id: str | None = Field(None, max_length=64)
    member_id: str | None = Field(None, max_length=64)
    contact_id: str | None = Field(None, max_length=64)
    campaign_id: str | None = Field(None, max_length=64)
    since: datetime | None = None
    until: datetime | None = None
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


# ---- campaigns --------------------------------------------------------------------------------------------

Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
CampaignStatus = Literal["draft", "scheduled", "running", "paused", "completed", "canceled"]
RecipientState = Literal["pending", "calling", "completed", "failed", "exhausted", "canceled"]
HHMM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class CampaignPath(OrgPath):
    campaign_id: str


class CampaignWindowIn(RequestModel):
    timezone: str = Field(max_length=64, description="IANA time zone, e.g. America/Mexico_City")
    days: list[Day] = Field(min_length=1, max_length=7)
    start: str = Field(pattern=HHMM, description="HH:MM, local")
    end: str = Field(pattern=HHMM, description="HH:MM, local, after start")


class CampaignRecipientIn(RequestModel):
    number: str = Field(max_length=40, description="E.164, e.g. +525512345678")
    contact_id: str | None = Field(None, max_length=64)
    variables: dict[str, Any] | None = Field(None, max_length=50)


class CampaignCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    agent_id: str = Field(max_length=64, description="The AI agent that talks on the calls")
    from_number: str = Field(max_length=40, description="One of the organization's numbers")
    recipients: list[CampaignRecipientIn] = Field(min_length=1, max_length=10_000)
    window: CampaignWindowIn
    max_concurrent: int = Field(ge=1, le=100)
    max_attempts: int = Field(ge=1, le=10)
    retry_minutes: int = Field(ge=1, le=10_080)
    exclude_list: list[str] | None = Field(None, max_length=100_000)


class RejectedRow(BaseModel):
    row: int = Field(description="the row's index in `recipients` (from 0)")
    number: str
    reason: Literal["invalid", "duplicate", "excluded"]


class CampaignWindowOut(BaseModel):
    timezone: str
    days: list[Day]
    start: str
    end: str


class CampaignProgress(BaseModel):
    pending: int
    calling: int
    completed: int
    failed: int
    exhausted: int
    canceled: int


class CampaignOut(BaseModel):
    id: str
    organization_id: str
    name: str
    agent_id: str
    from_number: str
    status: CampaignStatus
    window: CampaignWindowOut
    max_concurrent: int
    max_attempts: int
    retry_minutes: int
    recipients_total: int
    rejected_total: int
    progress: CampaignProgress
    started_at: str | None
    completed_at: str | None
    canceled_at: str | None
    created_at: str
    updated_at: str

    @classmethod
    def dump(cls, report: Any) -> dict[str, Any]:
        campaign = report.campaign
        return {
            "id": str(campaign.id),
            "organization_id": str(campaign.organization_id),
            "name": campaign.name,
            "agent_id": campaign.agent_id,
            "from_number": campaign.from_number,
            "status": campaign.status,
            "window": dict(campaign.window),
            "max_concurrent": campaign.max_concurrent,
            "max_attempts": campaign.max_attempts,
            "retry_minutes": campaign.retry_minutes,
            "recipients_total": campaign.recipients_total,
            "rejected_total": campaign.rejected_total,
            "progress": dict(report.counts),
            "started_at": isoformat(campaign.started_at),
            "completed_at": isoformat(campaign.completed_at),
            "canceled_at": isoformat(campaign.canceled_at),
            "created_at": isoformat(campaign.created_at),
            "updated_at": isoformat(campaign.updated_at),
        }


class CampaignCreated(CampaignOut):
    rejected: list[RejectedRow]


class CampaignList(BaseModel):
    data: list[CampaignOut]
    total: int
    skip: int
    take: int


class CampaignListQuery(QueryModel):
    status: CampaignStatus | None = None
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


class AttemptOut(BaseModel):
    call_id: str
    outcome: str | None = Field(description="the call's final status; null while it is live")
    at: str


class CampaignRecipientOut(BaseModel):
    id: str
    position: int
    number: str
    contact_id: str | None
    variables: dict[str, Any] | None
    state: RecipientState
    attempts: list[AttemptOut]
    next_attempt_at: str | None
    error: str | None

    @classmethod
    def dump(cls, recipient: Any) -> dict[str, Any]:
        return {
            "id": str(recipient.id),
            "position": recipient.position,
            "number": recipient.number,
            "contact_id": recipient.contact_id,
            "variables": recipient.variables,
            "state": recipient.state,
            "attempts": [dict(entry) for entry in recipient.attempt_log or []],
            "next_attempt_at": isoformat(recipient.due_at) if recipient.state == "pending" else None,
            "error": recipient.error,
        }


class CampaignRecipientList(BaseModel):
    data: list[CampaignRecipientOut]
    total: int
    skip: int
    take: int


class CampaignRecipientQuery(QueryModel):
    state: RecipientState | None = None
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)
