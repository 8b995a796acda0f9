"""Voice numbers: connect (CLI), list, and who answers a number's inbound calls (docs/voice.md, "Voice
numbers")."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import func, select

from blueprints.channels.crypto import encrypt_token
from blueprints.members.models import AgentConfig, Member
from blueprints.voice.models import PROVIDERS, VoiceNumber
from core.db import db
from core.environments import current_environment
from core.errors import ApiError
from core.pagination import Page, paginate
from core.phones import InvalidPhoneNumber, normalize_phone
from core.tenancy import get_for_org

UNSET: object = object()


class Refusal(ApiError):
    """A 400 (or other) refusal with a stable ``code`` and the ``param`` it concerns."""

    def __init__(self, status: int, message: str, *, code: str, param: str | None = None) -> None:
        super().__init__(status, message, code=code, param=param)


def e164(value: str, param: str) -> str:
    try:
        return normalize_phone(value)
    except InvalidPhoneNumber as error:
        raise Refusal(400, f"{param}: {error}", code="number_invalid", param=param) from None


@dataclass(frozen=True)
class NumberConnection:
    number: str
    provider: str
    account_sid: str | None = None
    auth_token: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True)
class RoutingChanges:
    """A PATCH of a number: exactly one of the two fields sent (``UNSET``: not sent; ``None``: clear)."""

    agent_id: str | object | None = UNSET
    member_id: str | object | None = UNSET


def check_member(organization_id: uuid.UUID, member_id: str, *, ai: bool, param: str) -> str:
    found = db.session.scalar(
        select(Member.id).where(
            Member.organization_id == organization_id, Member.id == member_id, Member.ai.is_(ai)
        )
    )
    if found is None:
        kind = "an AI agent" if ai else "a human member"
        code = "agent_not_found" if ai else "member_not_found"
        raise Refusal(400, f"{param}: not {kind} of this organization", code=code, param=param)
    return found


def connect_number(organization_id: uuid.UUID, connection: NumberConnection) -> VoiceNumber:
    """Create or update (by number) one of the organization's numbers; the token is stored encrypted."""
    number = e164(connection.number, "number")
    if connection.provider not in PROVIDERS:
        raise Refusal(
            400, f"provider: one of {', '.join(PROVIDERS)}", code="provider_invalid", param="provider"
        )
    existing = db.session.scalars(select(VoiceNumber).where(VoiceNumber.number == number)).first()
    if existing is not None and existing.organization_id != organization_id:
        raise Refusal(409, "number: connected to another organization", code="number_taken", param="number")
    record = existing or VoiceNumber(organization_id=organization_id, number=number)
    record.provider = connection.provider
    record.env = current_environment()
    if connection.account_sid is not None:
        record.account_sid = connection.account_sid.strip() or None
    if connection.auth_token:
        record.auth_token_encrypted = encrypt_token(connection.auth_token.strip())
    if record.provider == "twilio" and not (record.account_sid and record.auth_token_encrypted):
        raise Refusal(
            400,
            "auth_token: twilio needs an account sid and an auth token",
            code="credentials_missing",
            param="auth_token",
        )
    if connection.agent_id:
        record.agent_id = check_member(organization_id, connection.agent_id, ai=True, param="agent_id")
        record.member_id = None
    if existing is None:
        db.session.add(record)
    db.session.flush()
    return record


def list_numbers(organization_id: uuid.UUID, *, skip: int, take: int) -> Page[VoiceNumber]:
    statement = (
        select(VoiceNumber)
        .where(VoiceNumber.organization_id == organization_id)
        .order_by(VoiceNumber.created_at, VoiceNumber.id)
    )
    return paginate(statement, offset=skip, limit=take)


def get_number(organization_id: uuid.UUID, number_id: str) -> VoiceNumber:
    return get_for_org(VoiceNumber, number_id, organization_id, "Voice number")


def route_number(organization_id: uuid.UUID, number_id: str, changes: RoutingChanges) -> VoiceNumber:
    """Who answers the number's inbound calls: an AI agent or a human member, exactly one of them sent."""
    number = get_number(organization_id, number_id)
    sent = [name for name in ("agent_id", "member_id") if getattr(changes, name) is not UNSET]
    if len(sent) != 1:
        raise Refusal(
            400,
            "agent_id: send exactly one of agent_id and member_id",
            code="routing_ambiguous",
            param="agent_id",
        )
    value = getattr(changes, sent[0])
    if value is not None and not isinstance(value, str):
        raise Refusal(400, f"{sent[0]}: a member id", code="invalid", param=sent[0])
    if sent[0] == "agent_id":
        number.agent_id = check_member(organization_id, value, ai=True, param="agent_id") if value else None
        number.member_id = None if value else number.member_id
    else:
        number.member_id = (
            check_member(organization_id, value, ai=False, param="member_id") if value else None
        )
        number.agent_id = None if value else number.agent_id
    db.session.flush()
    return number


def default_agent(organization_id: uuid.UUID) -> str | None:
    """The organization's only AI agent, when it has a voice configuration (one query)."""
    rows = db.session.execute(
        select(Member.id, AgentConfig.voice, func.count().over())
        .outerjoin(AgentConfig, AgentConfig.member_pk == Member.pk)
        .where(Member.organization_id == organization_id, Member.ai.is_(True))
        .limit(1)
    ).all()
    if len(rows) == 1 and rows[0][2] == 1 and rows[0][1]:
        return str(rows[0][0])
    return None


def first_number(organization_id: uuid.UUID) -> VoiceNumber | None:
    return db.session.scalars(
        select(VoiceNumber)
        .where(VoiceNumber.organization_id == organization_id)
        .order_by(VoiceNumber.created_at, VoiceNumber.id)
        .limit(1)
    ).first()


def find_number(organization_id: uuid.UUID, number: str) -> VoiceNumber | None:
    return db.session.scalars(
        select(VoiceNumber).where(
            VoiceNumber.organization_id == organization_id, VoiceNumber.number == number
        )
    ).first()
