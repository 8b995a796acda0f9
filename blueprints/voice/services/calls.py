"""Calls: place one, list, read, hang up, and apply a provider's status report (docs/voice.md, "Calls")."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from blueprints.messaging.models import Contact
from blueprints.voice import lifecycle
from blueprints.voice.models import TERMINAL, Call, VoiceNumber
from blueprints.voice.provider import ProviderError, StatusUpdate
from blueprints.voice.registry import provider_for
from blueprints.voice.services.numbers import (
    Refusal,
    check_member,
    default_agent,
    e164,
    find_number,
    first_number,
)
from core.db import db, utcnow
from core.errors import ApiError
from core.pagination import Page, paginate
from core.tenancy import get_for_org


@dataclass(frozen=True)
class CallDraft:
    to: str
    from_number: str | None = None
    agent_id: str | None = None
    member_id: str | None = None
    contact_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallFilters:
    direction: str | None = None
    status: str | None = None
    agent_id: str | None = None
    member_id: str | None = None
    contact_id: str | None = None
    campaign_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def _number_for(organization_id: uuid.UUID, from_number: str | None) -> VoiceNumber:
    if from_number:
        number = find_number(organization_id, e164(from_number, "from_number"))
        if number is None:
            raise Refusal(
                400,
                "from_number: not a number of this organization",
                code="number_not_found",
                param="from_number",
            )
        return number
    number = first_number(organization_id)
    if number is None:
        raise Refusal(
            400, "from_number: the organization has no voice number", code="no_number", param="from_number"
        )
    return number


def _check_contact(organization_id: uuid.UUID, contact_id: str) -> str:
    try:
        wanted = uuid.UUID(contact_id)
    except ValueError:
        wanted = None
    found = wanted and db.session.scalar(
        select(Contact.id).where(Contact.organization_id == organization_id, Contact.id == wanted)
    )
    if not found:
        raise Refusal(
            400,
            "contact_id: not a contact of this organization",
            code="contact_not_found",
            param="contact_id",
        )
    return str(found)


def place_call(
    organization_id: uuid.UUID,
    draft: CallDraft,
    *,
    campaign_id: uuid.UUID | None = None,
    before_dial: Callable[[Call], None] | None = None,
) -> Call:
    """Store an outbound call in ``queued`` and place it through the number's provider. A provider's
    refusal is answered with its status (502, or 429) and stores nothing. A campaign's call carries its
    ``campaign_id``; ``before_dial(call)`` runs once the call is stored, before the provider is called (a
    campaign makes its recipient's call durable there, so a crash mid-dial is never dialled again)."""
    to = e164(draft.to, "to")
    number = _number_for(organization_id, draft.from_number)
    if draft.agent_id and draft.member_id:
        raise Refusal(
            400, "agent_id: send agent_id or member_id, not both", code="routing_ambiguous", param="agent_id"
        )
    agent_id = (
        check_member(organization_id, draft.agent_id, ai=True, param="agent_id") if draft.agent_id else None
    )
    member_id = (
        check_member(organization_id, draft.member_id, ai=False, param="member_id")
        if draft.member_id
        else None
    )
    if agent_id is None and member_id is None:
        agent_id, member_id = number.agent_id, number.member_id
        if agent_id is None and member_id is None:
            agent_id = default_agent(organization_id)
    contact_id = _check_contact(organization_id, draft.contact_id) if draft.contact_id else None
    provider = provider_for(number)
    call = Call(
        organization_id=organization_id,
        number_id=number.id,
        direction="outbound",
        from_number=number.number,
        to_number=to,
        status="queued",
        provider=provider.name,
        agent_id=agent_id,
        member_id=member_id,
        contact_id=contact_id,
        started_at=utcnow(),
        transcript=[],
        call_metadata=dict(draft.metadata or {}),
        campaign_id=campaign_id,
    )
    db.session.add(call)
    db.session.flush()
    if before_dial is not None:
        before_dial(call)
    try:
        placed = provider.place_call(number, call)
    except ProviderError as error:
        raise ApiError(error.status, error.message, code=error.code) from None
    call.provider_call_id = placed.provider_call_id
    db.session.flush()
    lifecycle.publish(call)
    return call


def list_calls(organization_id: uuid.UUID, filters: CallFilters, *, skip: int, take: int) -> Page[Call]:
    statement = select(Call).where(Call.organization_id == organization_id)
    for name in ("direction", "status", "agent_id", "member_id", "contact_id"):
        if (value := getattr(filters, name)) is not None:
            statement = statement.where(getattr(Call, name) == value)
    if filters.campaign_id is not None:
        try:
            statement = statement.where(Call.campaign_id == uuid.UUID(filters.campaign_id))
        except ValueError:
            raise Refusal(400, "campaign_id: not a UUID", code="invalid", param="campaign_id") from None
    if filters.since is not None:
        statement = statement.where(Call.created_at >= filters.since)
    if filters.until is not None:
        statement = statement.where(Call.created_at < filters.until)
    statement = statement.order_by(Call.created_at.desc(), Call.id.desc())
    return paginate(statement, offset=skip, limit=take)


def get_call(organization_id: uuid.UUID, call_id: str) -> Call:
    return get_for_org(Call, call_id, organization_id, "Call")


def hang_up(organization_id: uuid.UUID, call_id: str) -> Call:
    """End a live call at the provider: ``canceled`` before it was answered, ``completed`` after."""
    call = get_call(organization_id, call_id)
    if call.status in TERMINAL:
        raise Refusal(409, "The call has already ended", code="call_ended", param="call_id")
    number = db.session.scalars(
        select(VoiceNumber).where(
            VoiceNumber.id == call.number_id, VoiceNumber.organization_id == organization_id
        )
    ).first()
    if number is not None and call.provider_call_id:
        try:
            provider_for(number).hang_up(number, call)
        except ProviderError as error:
            raise ApiError(error.status, error.message, code=error.code) from None
    lifecycle.end(call, "completed" if call.status == "in_progress" else "canceled", reason="hangup_api")
    db.session.flush()
    lifecycle.publish(call)
    return call


def call_by_provider_id(provider_call_id: str) -> Call | None:
    """The call a provider's report is about (the provider's id is unique in a store)."""
    if not provider_call_id:
        return None
    return db.session.scalars(select(Call).where(Call.provider_call_id == provider_call_id)).first()


def number_of(call: Call) -> VoiceNumber | None:
    return db.session.scalars(
        select(VoiceNumber).where(
            VoiceNumber.id == call.number_id, VoiceNumber.organization_id == call.organization_id
        )
    ).first()


def apply_status(call: Call, update: StatusUpdate) -> bool:
    changed = lifecycle.apply_update(call, update)
    db.session.flush()
    return changed
