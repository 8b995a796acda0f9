"""Twilio's voice webhooks that answer TwiML: an inbound call (``/incoming``) and the end of its
ConversationRelay session (``/relay-ended``, the ``<Connect action>`` URL). docs/voice.md, "Inbound calls".

Both are form-encoded and signed like the status callback: ``X-Twilio-Signature`` keyed with the auth
token of our number, over the URL built from ``PUBLIC_BASE_URL`` (+ the path and query Twilio called).
A missing or bad signature, a number we do not have, or a call of another number is 403 and changes
nothing. The answers are ``text/xml`` TwiML."""

from __future__ import annotations

import uuid

from flask import Blueprint, Response, current_app, request

from blueprints.voice import signatures, twilio
from blueprints.voice.models import Call, VoiceNumber
from blueprints.voice.provider import ProviderError
from blueprints.voice.services import calls, inbound
from core.errors import ApiError

SIGNATURE_HEADER = "X-Twilio-Signature"

incoming = Blueprint("voice_incoming", __name__, url_prefix="/webhooks/twilio/voice")


def _public_url() -> str:
    """The URL Twilio called, as it signed it (the sandbox's prefix included)."""
    query = request.query_string.decode("latin-1")
    base = current_app.config["PUBLIC_BASE_URL"].rstrip("/")
    return f"{base}{request.script_root}{request.path}{'?' + query if query else ''}"


def _refused() -> ApiError:
    return ApiError(403, "Invalid signature")


def _verify(number: VoiceNumber | None, form: dict[str, str]) -> VoiceNumber:
    signature = request.headers.get(SIGNATURE_HEADER, "")
    if number is None or number.provider != "twilio" or not signature:
        raise _refused()
    if form.get("AccountSid") and form["AccountSid"] != number.account_sid:
        raise _refused()  # a call of another Twilio account that happens to name our number
    try:
        token = twilio.auth_token(number)
    except ProviderError:
        raise _refused() from None
    if not signatures.is_valid(token, _public_url(), form, signature):
        raise _refused()
    return number


def _twiml(markup: str) -> Response:
    return Response(f'<?xml version="1.0" encoding="UTF-8"?>{markup}', mimetype="text/xml")


@incoming.post("/incoming")
def incoming_call() -> Response:
    """A call to one of our numbers: recorded (``inbound``) and answered with the route's TwiML."""
    form = request.form.to_dict(flat=True)
    number = _verify(inbound.number_by_address(form.get("To", "")), form)
    call_sid = form.get("CallSid", "")
    if not call_sid:
        raise ApiError(400, "CallSid: required", code="value_required", param="CallSid")
    route = inbound.route_of(number)
    call = inbound.record_inbound(number, provider_call_id=call_sid, caller=form.get("From", ""), route=route)
    return _twiml(inbound.answer(number, call, route, request.script_root))


@incoming.post("/relay-ended")
def relay_ended() -> Response:
    """The relay ended (the agent handed off, or the session failed): dial the transfer's target, or
    end the call."""
    form = request.form.to_dict(flat=True)
    call = _call_of(request.args.get("call", ""), form.get("CallSid", ""))
    number = calls.number_of(call) if call is not None else None
    _verify(number, form)
    assert call is not None and number is not None
    return _twiml(inbound.after_relay(call, number))


def _call_of(call_id: str, call_sid: str) -> Call | None:
    """The call the action URL names, when Twilio's ``CallSid`` is that call's (so a signed request for
    one call cannot act on another)."""
    try:
        wanted = uuid.UUID(call_id)
    except ValueError:
        return None
    # Found by the carrier's CallSid (unique in a store; the organization is not known before the
    # signature is checked) and accepted only when it is the call the URL names.
    call = calls.call_by_provider_id(call_sid)
    if call is None or call.id != wanted:
        return None
    return call
