"""The ``twilio`` provider: Programmable Voice's REST API (form-encoded, HTTP Basic) and its status
callbacks (docs/voice.md, "Twilio")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime

import httpx
from flask import current_app

from blueprints.channels.crypto import decrypt_token
from blueprints.voice.models import Call, VoiceNumber
from blueprints.voice.provider import PlacedCall, ProviderError, StatusUpdate
from blueprints.voice.services import inbound

STATUS_PATH = "/webhooks/twilio/voice/status"
STATUS_EVENTS = ("initiated", "ringing", "answered", "completed")
# Twilio's CallEnumStatus -> ours; anything else is unknown and changes nothing.
STATUSES = {
    "queued": "queued",
    "initiated": "queued",
    "ringing": "ringing",
    "in-progress": "in_progress",
    "answered": "in_progress",
    "completed": "completed",
    "busy": "busy",
    "no-answer": "no_answer",
    "failed": "failed",
    "canceled": "canceled",
}

_shared: list[httpx.Client] = []


def _client() -> httpx.Client:
    if not _shared:
        _shared.append(httpx.Client(limits=httpx.Limits(max_connections=20, max_keepalive_connections=5)))
    return _shared[0]


def status_callback_url() -> str:
    return f"{current_app.config['PUBLIC_BASE_URL']}{STATUS_PATH}"


def auth_token(number: VoiceNumber) -> str:
    if not number.auth_token_encrypted or not number.account_sid:
        raise ProviderError("The number has no Twilio credentials", code="credentials_missing", status=409)
    return decrypt_token(number.auth_token_encrypted)


def parse_error(response: httpx.Response) -> ProviderError:
    """Twilio's ``{code, message, more_info, status}``."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    code = body.get("code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return ProviderError(
        f"Twilio refused the request: {message or response.reason_phrase} ({code or response.status_code})",
        code=f"twilio_{code}" if code else "provider_error",
        status=429 if response.status_code == 429 else 502,
    )


class TwilioProvider:
    name = "twilio"

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0))

    def _post(self, number: VoiceNumber, path: str, data: dict[str, str | list[str]]) -> dict[str, object]:
        url = f"{self.base_url}/2010-04-01/Accounts/{number.account_sid}{path}"
        try:
            response = _client().post(
                url, data=data, auth=(str(number.account_sid), auth_token(number)), timeout=self.timeout
            )
        except httpx.TimeoutException as exc:
            raise ProviderError("Twilio did not answer in time", code="provider_timeout") from exc
        except httpx.HTTPError as exc:
            raise ProviderError("Twilio could not be reached", code="provider_unreachable") from exc
        if response.status_code >= 400:
            raise parse_error(response)
        try:
            body = response.json()
        except ValueError as exc:
            raise ProviderError("Twilio answered something that is not JSON") from exc
        return body if isinstance(body, dict) else {}

    def place_call(self, number: VoiceNumber, call: Call) -> PlacedCall:
        data: dict[str, str | list[str]] = {
            "To": call.to_number,
            "From": call.from_number,
            # What the call does once answered: an AI agent's call talks over ConversationRelay (the same
            # TwiML and relay as an inbound call's); a person's call says nothing and stays up until
            # hung up.
            "Twiml": inbound.connect_relay(call)
            if call.agent_id
            else '<Response><Pause length="60"/></Response>',
            "StatusCallback": status_callback_url(),
            "StatusCallbackEvent": list(STATUS_EVENTS),  # repeated, one per event
            "StatusCallbackMethod": "POST",
        }
        body = self._post(number, "/Calls.json", data)
        sid = body.get("sid")
        if not isinstance(sid, str) or not sid:
            raise ProviderError("Twilio's answer has no call sid")
        return PlacedCall(sid, STATUSES.get(str(body.get("status")), "queued"))

    def hang_up(self, number: VoiceNumber, call: Call) -> None:
        self._post(number, f"/Calls/{call.provider_call_id}.json", {"Status": "completed"})

    def parse_status(self, form: Mapping[str, str]) -> StatusUpdate:
        try:
            sequence = int(form.get("SequenceNumber", ""))
        except ValueError:
            sequence = -1
        duration = form.get("CallDuration")
        return StatusUpdate(
            provider_call_id=form.get("CallSid", ""),
            status=STATUSES.get(form.get("CallStatus", "")),
            sequence=sequence,
            at=_timestamp(form.get("Timestamp")),
            duration_seconds=int(duration) if duration and duration.isdigit() else None,
            recording_url=form.get("RecordingUrl") or None,
        )


def _timestamp(value: str | None) -> datetime | None:
    """Twilio's ``Timestamp`` is RFC 2822 (``Thu, 26 Nov 2026 21:00:00 +0000``)."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None


def provider() -> TwilioProvider:
    return TwilioProvider(
        current_app.config["TWILIO_API_BASE_URL"], current_app.config["TWILIO_HTTP_TIMEOUT"]
    )
