"""``/webhooks/twilio/voice/status``: Twilio's status callbacks, form-encoded and signed.

The signature is checked before anything changes: ``X-Twilio-Signature`` (``signatures``), keyed with the
auth token of the number whose call the ``CallSid`` names, over the URL built from ``PUBLIC_BASE_URL``
(behind a proxy the request's own URL is not the one Twilio signed) and the form. A missing or bad
signature, or a call we do not know, is 403 and changes nothing. A verified report is applied idempotently
by ``SequenceNumber`` and never moves a call backwards (``lifecycle``); 204 whether it changed the call or
not, so Twilio does not retry a duplicate."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, current_app, request

from blueprints.voice import signatures, twilio
from blueprints.voice.provider import ProviderError
from blueprints.voice.services import calls
from core.errors import ApiError

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Twilio-Signature"

webhooks = Blueprint("voice_webhooks", __name__, url_prefix="/webhooks/twilio/voice")


def public_url() -> str:
    """The URL Twilio called, as it signed it: ``PUBLIC_BASE_URL`` + the path and query we received."""
    query = request.query_string.decode("latin-1")
    return f"{current_app.config['PUBLIC_BASE_URL']}{request.path}{'?' + query if query else ''}"


@webhooks.post("/status")
def status() -> Response:
    form = request.form.to_dict(flat=True)
    signature = request.headers.get(SIGNATURE_HEADER, "")
    call = calls.call_by_provider_id(form.get("CallSid", ""))
    number = calls.number_of(call) if call is not None else None
    if call is None or number is None or call.provider != "twilio" or not signature:
        raise ApiError(403, "Invalid signature")
    try:
        token = twilio.auth_token(number)
    except ProviderError:
        raise ApiError(403, "Invalid signature") from None
    if not signatures.is_valid(token, public_url(), form, signature):
        raise ApiError(403, "Invalid signature")
    calls.apply_status(call, twilio.provider().parse_status(form))
    return Response(status=204)
