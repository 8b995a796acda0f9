"""Inbound calls: who answers a number's call, the call record, the relay's token and the TwiML
(docs/voice.md, "Inbound calls").

A carrier reports a new call to one of our numbers; :func:`answer` records it (``inbound``, routed per
the number's ``agent_id``/``member_id`` or the default agent) and returns the markup that tells the
carrier what to do: connect an AI agent over ConversationRelay, dial a person, or apologise and hang up.
The relay's URL carries a short-lived token signed with the app's secret (:func:`relay_token`): the
WebSocket handshake is accepted only with it, so nobody can open a relay on someone else's call."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape, quoteattr

from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import select

from blueprints.members.models import AgentConfig, Member
from blueprints.voice import lifecycle
from blueprints.voice.models import TERMINAL, Call, VoiceNumber
from blueprints.voice.services.numbers import default_agent
from core.db import db, utcnow
from core.phones import InvalidPhoneNumber, normalize_phone

RELAY_PATH = "/voice/relay"
RELAY_ENDED_PATH = "/webhooks/twilio/voice/relay-ended"
# Twilio opens the relay right after it read our TwiML; five minutes also covers a slow network, and a
# token is useless once its call has ended.
RELAY_TOKEN_SECONDS = 300
_TOKEN_SALT = "agentdesk.voice.relay"
DEFAULT_LANGUAGE = "es-MX"
# Said to a caller when nobody can take the call (no AI agent, and the person has no known phone).
UNAVAILABLE = {
    "es": "Lo sentimos, en este momento no podemos atender su llamada. Por favor intente más tarde.",
    "en": "Sorry, nobody can take your call right now. Please try again later.",
}


@dataclass(frozen=True)
class Route:
    """Who answers: ``agent`` (an AI member, over the relay), ``member`` (a person, dialled) or ``none``."""

    type: str
    id: str | None


def number_by_address(number: str) -> VoiceNumber | None:
    """The number a carrier's report is about (a number is unique in a store: one organization's)."""
    try:
        normalized = normalize_phone(number)
    except InvalidPhoneNumber:
        return None
    return db.session.scalars(select(VoiceNumber).where(VoiceNumber.number == normalized)).first()


def route_of(number: VoiceNumber) -> Route:
    if number.agent_id:
        return Route("agent", number.agent_id)
    if number.member_id:
        return Route("member", number.member_id)
    agent = default_agent(number.organization_id)
    return Route("agent", agent) if agent else Route("none", None)


def find_call(number: VoiceNumber, provider_call_id: str) -> Call | None:
    return db.session.scalars(
        select(Call).where(
            Call.organization_id == number.organization_id, Call.provider_call_id == provider_call_id
        )
    ).first()


def record_inbound(
    number: VoiceNumber, *, provider_call_id: str, caller: str, route: Route, provider: str | None = None
) -> Call:
    """The ``inbound`` call (``ringing``: the carrier is waiting for our answer). A carrier's retry of
    the same call (same ``CallSid``) finds the call already recorded and answers it again."""
    existing = find_call(number, provider_call_id)
    if existing is not None:
        return existing
    try:
        caller = normalize_phone(caller)
    except InvalidPhoneNumber:
        caller = caller[:32]  # anonymous callers come as "Anonymous" or "+266696687": kept as sent
    call = Call(
        organization_id=number.organization_id,
        number_id=number.id,
        direction="inbound",
        from_number=caller,
        to_number=number.number,
        status="ringing",
        provider=provider or number.provider,
        provider_call_id=provider_call_id,
        agent_id=route.id if route.type == "agent" else None,
        member_id=route.id if route.type == "member" else None,
        started_at=utcnow(),
        transcript=[],
        call_metadata={},
    )
    db.session.add(call)
    db.session.flush()
    if route.type == "none":
        lifecycle.end(call, "failed", reason="no_route")
    lifecycle.publish(call)
    return call


# ------------------------------------------------------------------------------------ the relay's token


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=_TOKEN_SALT)


def relay_token(call: Call) -> str:
    return _serializer().dumps({"call": str(call.id), "org": str(call.organization_id)})


def call_of_token(token: str) -> Call | None:
    """The live call a relay token names, or None (forged, expired, or the call has ended)."""
    try:
        data: Any = _serializer().loads(token, max_age=RELAY_TOKEN_SECONDS)
        call_id, organization_id = uuid.UUID(data["call"]), uuid.UUID(data["org"])
    except (BadSignature, SignatureExpired, KeyError, TypeError, ValueError):
        return None
    call = db.session.scalars(
        select(Call).where(Call.id == call_id, Call.organization_id == organization_id)
    ).first()
    if call is None or call.status in TERMINAL:
        return None
    return call


def public_base(script_root: str) -> str:
    return f"{current_app.config['PUBLIC_BASE_URL'].rstrip('/')}{script_root}"


def relay_url(call: Call, script_root: str = "") -> str:
    """``wss://`` (``ws://`` for a local ``http://`` base) on ``PUBLIC_BASE_URL``'s host."""
    base = urlsplit(public_base(script_root))
    scheme = "ws" if base.scheme == "http" else "wss"
    return f"{scheme}://{base.netloc}{base.path}{RELAY_PATH}?token={relay_token(call)}"


# ---------------------------------------------------------------------------------------------- TwiML


def _language(setup_language: str | None) -> str:
    return setup_language or DEFAULT_LANGUAGE


def _agent_voice(organization_id: uuid.UUID, agent_id: str) -> str | None:
    return db.session.scalar(
        select(AgentConfig.voice)
        .join(Member, AgentConfig.member_pk == Member.pk)
        .where(Member.organization_id == organization_id, Member.id == agent_id)
    )


def member_phone(organization_id: uuid.UUID, member_id: str) -> str | None:
    """A person's phone for a ``<Dial>``: ``extra.phone`` of the member when it is a valid number."""
    extra = db.session.scalar(
        select(Member.extra).where(Member.organization_id == organization_id, Member.id == member_id)
    )
    phone = extra.get("phone") if isinstance(extra, dict) else None
    if not isinstance(phone, str):
        return None
    try:
        return normalize_phone(phone)
    except InvalidPhoneNumber:
        return None


def unavailable(language: str = DEFAULT_LANGUAGE) -> str:
    text = UNAVAILABLE.get(language.split("-")[0], UNAVAILABLE["en"])
    return f'<Response><Say language="{escape(language)}">{escape(text)}</Say><Hangup/></Response>'


def dial(target: str, caller_id: str) -> str:
    number = f"<Number>{escape(target)}</Number>"
    return f"<Response><Dial callerId={quoteattr(caller_id)}>{number}</Dial></Response>"


def connect_relay(call: Call, script_root: str = "") -> str:
    """``<Connect action=…><ConversationRelay url=… language=… [voice=…]>`` with the call's id as a
    custom parameter (it reaches the relay in ``setup.customParameters``)."""
    assert call.agent_id is not None
    language = _language(None)
    attributes = {"url": relay_url(call, script_root), "language": language, "interruptible": "any"}
    voice = _agent_voice(call.organization_id, call.agent_id)
    if voice:
        attributes["voice"] = voice
    action = f"{public_base(script_root)}{RELAY_ENDED_PATH}?call={call.id}"
    rendered = " ".join(f"{name}={quoteattr(value)}" for name, value in attributes.items())
    return (
        f"<Response><Connect action={quoteattr(action)}><ConversationRelay {rendered}>"
        f'<Parameter name="call_id" value="{call.id}"/></ConversationRelay></Connect></Response>'
    )


def answer(number: VoiceNumber, call: Call, route: Route, script_root: str = "") -> str:
    """The TwiML that answers ``call``: the relay for an AI agent, a ``<Dial>`` to a person whose phone
    is known, an apology and ``<Hangup/>`` for a person without one, ``<Reject/>`` without a route
    (docs/voice.md, "Inbound calls")."""
    if call.status in TERMINAL:  # no route: refused, the caller hears the carrier's busy tone
        return "<Response><Reject/></Response>"
    if route.type == "agent" and call.agent_id:
        return connect_relay(call, script_root)
    if route.type == "member" and call.member_id:
        phone = member_phone(call.organization_id, call.member_id)
        if phone:
            return dial(phone, number.number)
    # A person without a known phone: the caller is told, and the call ends here.
    lifecycle.end(call, "completed", reason="unavailable")
    lifecycle.publish(call)
    return unavailable()


def transfer_twiml(call: Call, number: VoiceNumber | None) -> str:
    """What the ``<Connect action>`` URL answers when the relay ended with a hand-off: a ``<Dial>`` to
    the transfer's phone, or the apology when no phone is known for it."""
    transfer = call.transfer or {}
    phone = transfer.get("dial")
    if phone and number is not None:
        return dial(str(phone), number.number)
    return unavailable()


def after_relay(call: Call, number: VoiceNumber) -> str:
    """The ``<Connect action>`` answer once the relay ended: a ``<Dial>`` to the transfer's phone; the
    apology when the agent handed off but no phone is known (the call ends, ``transferred``); otherwise
    ``<Hangup/>`` (the AI's call is over)."""
    if call.transfer and call.status not in TERMINAL:
        if call.transfer.get("dial"):
            return transfer_twiml(call, number)
        lifecycle.end(call, "completed", reason="transferred")
        lifecycle.publish(call)
        db.session.flush()
        return unavailable()
    if call.status not in TERMINAL:
        lifecycle.end(call, "completed")
        lifecycle.publish(call)
        db.session.flush()
    return "<Response><Hangup/></Response>"
