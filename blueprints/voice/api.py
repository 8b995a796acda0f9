"""Voice routes under ``/v2/voice/organizations/<organization_id>``: numbers, calls and campaigns
(docs/voice.md).

Authentication: ``X-API-Key`` (no JWT); errors ``{statusCode, message}`` like messaging and members."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import Tag

from blueprints.voice.schemas import (
    CallCreate,
    CallList,
    CallListQuery,
    CallOut,
    CallPath,
    CampaignCreate,
    CampaignCreated,
    CampaignList,
    CampaignListQuery,
    CampaignOut,
    CampaignPath,
    CampaignRecipientList,
    CampaignRecipientOut,
    CampaignRecipientQuery,
    NumberList,
    NumberListQuery,
    NumberOut,
    NumberPatch,
    NumberPath,
    OrgPath,
)
from blueprints.voice.services import calls, campaigns, numbers
from core import auth
from core.idempotency import idempotent
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses

PREFIX = "/v2/voice/organizations/<organization_id>"
TAG = Tag(name="Voice", description="Voice numbers and calls (Twilio or the simulator)")
api = AreaAPI(
    "voice_api",
    __name__,
    url_prefix=PREFIX,
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


@api.get("/numbers", responses={200: NumberList})
def list_numbers(path: OrgPath, query: NumberListQuery) -> dict[str, Any]:
    """The organization's voice numbers, with who answers each one's inbound calls (tokens never shown)."""
    organization_id = auth.current_organization_id()
    page = numbers.list_numbers(organization_id, skip=query.skip, take=query.take)
    default = numbers.default_agent(organization_id) if page.items else None
    return {
        "data": [NumberOut.dump(n, default) for n in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


@api.patch("/numbers/<number_id>", responses={200: NumberOut})
def route_number(path: NumberPath, body: NumberPatch) -> dict[str, Any]:
    """Who answers the number's inbound calls: exactly one of `agent_id` (an AI agent) or `member_id`
    (a human member); `null` clears it."""
    organization_id = auth.current_organization_id()
    changes = numbers.RoutingChanges(**body.sent_fields())
    number = numbers.route_number(organization_id, path.number_id, changes)
    return NumberOut.dump(number, numbers.default_agent(organization_id))


@api.post("/calls", responses={201: CallOut, 409: PlainError, 429: PlainError, 502: PlainError})
@idempotent
def create_call(path: OrgPath, body: CallCreate) -> tuple[dict[str, Any], int]:
    """Place an outbound call from one of the organization's numbers; 201 with the call in `queued`.

    Send `Idempotency-Key: <unique string>` to make a retry safe: the same key and body replay the first
    result (`Idempotent-Replayed: true`); the same key with another body is 409.
    """
    draft = calls.CallDraft(**{**body.model_dump(exclude={"metadata"}), "metadata": body.metadata or {}})
    call = calls.place_call(auth.current_organization_id(), draft)
    return CallOut.dump(call), 201


@api.get("/calls", responses={200: CallList})
def list_calls(path: OrgPath, query: CallListQuery) -> dict[str, Any]:
    """Calls, newest first, filtered by direction, status, agent, member, contact, campaign and time."""
    filters = calls.CallFilters(**query.model_dump(exclude={"skip", "take"}))
    page = calls.list_calls(auth.current_organization_id(), filters, skip=query.skip, take=query.take)
    return {
        "data": [CallOut.dump(c) for c in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


@api.get("/calls/<call_id>", responses={200: CallOut})
def get_call(path: CallPath) -> dict[str, Any]:
    """One call."""
    return CallOut.dump(calls.get_call(auth.current_organization_id(), path.call_id))


@api.post("/calls/<call_id>/hangup", responses={200: CallOut, 409: PlainError, 502: PlainError})
def hang_up(path: CallPath) -> dict[str, Any]:
    """End a live call: `canceled` before it was answered, `completed` after; 409 when it already ended."""
    return CallOut.dump(calls.hang_up(auth.current_organization_id(), path.call_id))


@api.post("/campaigns", responses={201: CampaignCreated})
def create_campaign(path: OrgPath, body: CampaignCreate) -> tuple[dict[str, Any], int]:
    """A `draft` campaign: its recipients validated (E.164), de-duplicated and checked against
    `exclude_list`; 201 with `recipients_total` (accepted) and `rejected: [{row, number, reason}]`."""
    spec = campaigns.CampaignSpec(
        name=body.name,
        agent_id=body.agent_id,
        from_number=body.from_number,
        recipients=[campaigns.RecipientIn(**r.model_dump()) for r in body.recipients],
        window=campaigns.Window(**body.window.model_dump()),
        max_concurrent=body.max_concurrent,
        max_attempts=body.max_attempts,
        retry_minutes=body.retry_minutes,
        exclude_list=list(body.exclude_list or []),
    )
    report = campaigns.create_campaign(auth.current_organization_id(), spec)
    return {**CampaignOut.dump(report), "rejected": report.rejected or []}, 201


@api.get("/campaigns", responses={200: CampaignList})
def list_campaigns(path: OrgPath, query: CampaignListQuery) -> dict[str, Any]:
    """Campaigns, newest first, each with its progress (recipients per state)."""
    page = campaigns.list_campaigns(
        auth.current_organization_id(), status=query.status, skip=query.skip, take=query.take
    )
    return {
        "data": [CampaignOut.dump(c) for c in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


@api.get("/campaigns/<campaign_id>", responses={200: CampaignOut})
def get_campaign(path: CampaignPath) -> dict[str, Any]:
    """One campaign with its progress."""
    return CampaignOut.dump(campaigns.get_campaign(auth.current_organization_id(), path.campaign_id))


@api.get("/campaigns/<campaign_id>/recipients", responses={200: CampaignRecipientList})
def list_campaign_recipients(path: CampaignPath, query: CampaignRecipientQuery) -> dict[str, Any]:
    """The campaign's recipients in order, each with its attempts (call ids and outcomes)."""
    page = campaigns.list_recipients(
        auth.current_organization_id(), path.campaign_id, state=query.state, skip=query.skip, take=query.take
    )
    return {
        "data": [CampaignRecipientOut.dump(r) for r in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


def _transition(campaign_id: str, action: str) -> dict[str, Any]:
    return CampaignOut.dump(campaigns.transition(auth.current_organization_id(), campaign_id, action))


@api.post("/campaigns/<campaign_id>/start", responses={200: CampaignOut, 409: PlainError})
def start_campaign(path: CampaignPath) -> dict[str, Any]:
    """Start a `draft` campaign: `running`, or `scheduled` until its window opens; 409 from another state."""
    return _transition(path.campaign_id, "start")


@api.post("/campaigns/<campaign_id>/pause", responses={200: CampaignOut, 409: PlainError})
def pause_campaign(path: CampaignPath) -> dict[str, Any]:
    """Pause a `scheduled` or `running` campaign: no new call is placed (live ones go on); 409 otherwise."""
    return _transition(path.campaign_id, "pause")


@api.post("/campaigns/<campaign_id>/resume", responses={200: CampaignOut, 409: PlainError})
def resume_campaign(path: CampaignPath) -> dict[str, Any]:
    """Resume a `paused` campaign (`running`, or `scheduled` outside its window); 409 otherwise."""
    return _transition(path.campaign_id, "resume")


@api.post("/campaigns/<campaign_id>/cancel", responses={200: CampaignOut, 409: PlainError})
def cancel_campaign(path: CampaignPath) -> dict[str, Any]:
    """Cancel a campaign that has not ended: its pending recipients are `canceled`; 409 once ended."""
    return _transition(path.campaign_id, "cancel")
