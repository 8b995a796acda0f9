"""Voice routes under ``/v2/voice/organizations/<organization_id>``: numbers and calls (docs/voice.md).

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
    NumberList,
    NumberListQuery,
    NumberOut,
    NumberPatch,
    NumberPath,
    OrgPath,
)
from blueprints.voice.services import calls, numbers
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
