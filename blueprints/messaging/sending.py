"""Sending: free text and media inside the service window, WhatsApp templates, and ``Idempotency-Key``."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from blueprints.channels.crypto import TokenDecryptionError
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.providers import (
    MediaRef,
    OutboundMessage,
    ProviderError,
    provider_for,
    uses_simulator,
)
from blueprints.channels.services import get_address
from blueprints.messaging.models import (
    Conversation,
    IdempotencyRecord,
    Message,
)
from blueprints.messaging.schemas import (
    SendMessageIn,
    SendTemplateIn,
    TemplateComponentIn,
    TemplateParameterIn,
)
from blueprints.messaging.serialize import serialize_message
from blueprints.messaging.threads import (
    apply_backlog,
    apply_status,
    contact_address_for,
    mark_failed,
    thread_for,
)
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import publish
from core.phones import digits_only
from core.timeutil import parse_iso_datetime

SERVICE_WINDOW = timedelta(hours=24)
IDEMPOTENCY_TTL = timedelta(hours=24)
INSTAGRAM_TEXT_BYTES = 1000
SEND_FAILED = "Message failed to send"
ADDRESS_NOT_FOUND = "Organization address not found"
NO_TOKEN = "Organization address does not have an access token"
PARAMETER_NAME_MISSING = "Parameter name is missing"
TEMPLATE_LOOKUP_FAILED = "Failed to get template from Meta"

# ---------------------------------------------------------------------------------------------------
# Sending


def sendable_address(
    organization_id: uuid.UUID, organization_address: str, service: str | None
) -> OrganizationAddress:
    address = get_address(organization_id, organization_address)
    if address is None:
        raise ApiError(404, ADDRESS_NOT_FOUND, param="organization_address")
    if service is not None and address.service != service:
        raise ApiError(
            400,
            f"service: organization address {address.address} is a {address.service} account",
            param="service",
        )
    if not uses_simulator(address) and not address.has_access_token:
        raise ApiError(400, NO_TOKEN, param="organization_address")
    if not address.can_send:
        raise ApiError(
            400,
            f"Organization address is not connected (status {address.status})",
            param="organization_address",
        )
    return address


def _recipient(address: OrganizationAddress, contact_address: str, provider_id: str | None) -> str:
    if address.service == "whatsapp":
        return provider_id or digits_only(contact_address)  # the wa_id Meta gave us, when we have one
    return contact_address


def _window_open(conversation: Conversation, now: datetime) -> bool:
    last = conversation.last_incoming_at
    return last is not None and now - last < SERVICE_WINDOW


def _outside_window_error(service: str) -> dict[str, Any]:
    if service == "whatsapp":
        return {
            "code": 131047,
            "title": "Re-engagement message",
            "details": "More than 24 hours have passed since the customer last replied to this number; "
            "send a template.",
            "provider": "desk",
        }
    return {
        "code": 10,
        "title": "This message is sent outside of allowed window.",
        "details": "More than 24 hours have passed since the customer last wrote.",
        "provider": "desk",
    }


def _check_channel_content(service: str, body: SendMessageIn) -> None:
    content = body.content
    if service == "whatsapp":
        return
    if content.kind == "location":
        raise ApiError(
            400, f"content.kind: location messages cannot be sent on {service}", param="content.kind"
        )
    if content.kind != "text" and content.text:
        raise ApiError(
            400, f"content.text: {service} attachments cannot carry a caption", param="content.text"
        )
    if service == "instagram" and content.text and len(content.text.encode()) > INSTAGRAM_TEXT_BYTES:
        raise ApiError(
            400,
            f"content.text: Instagram texts are at most {INSTAGRAM_TEXT_BYTES} bytes",
            param="content.text",
        )


def send_message(organization_id: uuid.UUID, body: SendMessageIn) -> dict[str, Any]:
    """Free text or media inside the service window. Outside it the message is stored as failed, with
    ``status.error``, and the call is 400 ``Message failed to send`` (the id is in ``X-Message-Id``)."""
    address = sendable_address(organization_id, body.organization_address, body.service)
    _check_channel_content(address.service, body)
    contact_address = contact_address_for(address.service, body.contact_address, "contact_address")
    thread = thread_for(address, contact_address)
    now = utcnow()
    content = body.content.model_dump(exclude_none=True)
    message = Message(
        id=uuid.uuid4(),
        organization_id=organization_id,
        conversation_id=thread.conversation.id,
        direction="outgoing",
        service=address.service,
        organization_address=address.address,
        contact_address=contact_address,
        timestamp=now,
        content=content,
        status={"pending": isoformat(now)},
        current_status="pending",
        member_id=body.member_id,
    )
    db.session.add(message)
    _renew_last_message(thread.conversation, now)
    if not _window_open(thread.conversation, now):
        mark_failed(message, _outside_window_error(address.service), now)
        db.session.flush()
        publish("message.created", organization_id, serialize_message(message))
        db.session.commit()
        raise ApiError(400, SEND_FAILED, headers={"X-Message-Id": str(message.id)})
    db.session.flush()
    publish("message.created", organization_id, serialize_message(message))
    db.session.commit()  # the pending message exists before the provider is called
    media = None
    if body.content.file is not None:
        media = MediaRef(body.content.file.uri, body.content.file.mime_type, body.content.file.filename)
    outbound = OutboundMessage(
        service=address.service,
        to=_recipient(address, contact_address, thread.contact_address.provider_id),
        kind=body.content.kind,
        text=body.content.text,
        media=media,
        location=body.content.location.model_dump(exclude_none=True) if body.content.location else None,
    )
    return _dispatch(address, message, outbound)


def _renew_last_message(conversation: Conversation, when: datetime) -> None:
    if conversation.last_message_at is None or when > conversation.last_message_at:
        conversation.last_message_at = when


def _api_error_for(error: ProviderError, message: Message) -> ApiError:
    headers = {"X-Message-Id": str(message.id)}
    if error.template_missing:
        return ApiError(404, TEMPLATE_LOOKUP_FAILED, headers=headers)
    if error.code == "no_token":
        return ApiError(400, NO_TOKEN, headers=headers)
    if error.rate_limited:
        headers["Retry-After"] = str(error.retry_after or 60)
        return ApiError(429, SEND_FAILED, headers=headers)
    if error.unavailable:
        return ApiError(502, SEND_FAILED, headers=headers)
    return ApiError(400, SEND_FAILED, headers=headers)


def _dispatch(
    address: OrganizationAddress,
    message: Message,
    outbound: OutboundMessage,
    on_success: Callable[[], None] | None = None,
) -> dict[str, Any]:
    provider = provider_for(address)
    try:
        result = provider.send(address, outbound)
    except (ProviderError, TokenDecryptionError) as raised:
        error = (
            raised
            if isinstance(raised, ProviderError)
            else ProviderError("token_unreadable", "The stored access token cannot be decrypted")
        )
        mark_failed(message, error.as_status_error(provider.name), utcnow())
        if error.auth_failed or error.code == "token_unreadable":
            # Further sends would fail the same way: stop until someone connects a fresh token.
            address.status = "reauth_required"
        publish("message.updated", message.organization_id, serialize_message(message))
        db.session.commit()
        raise _api_error_for(error, message) from None
    now = utcnow()
    _merge_echo(message, result.external_id)
    message.external_id = result.external_id
    apply_status(message, "accepted", now)
    if on_success is not None:
        on_success()
    apply_backlog([message])
    publish("message.updated", message.organization_id, serialize_message(message))
    db.session.commit()
    body = serialize_message(message)
    provider.after_send(address, outbound, result)
    return body


def _merge_echo(message: Message, external_id: str) -> None:
    """Instagram/Messenger echo a Page's sends; an echo that outran this commit was stored as its own
    outgoing message. It is this message: keep its statuses here and drop the copy."""
    echo = db.session.scalar(
        select(Message).where(
            Message.organization_id == message.organization_id,
            Message.external_id == external_id,
            Message.id != message.id,
        )
    )
    if echo is None or echo.direction != "outgoing":
        return
    for status, stamp in (echo.status or {}).items():
        if isinstance(stamp, str):
            apply_status(message, status, parse_iso_datetime(stamp))
    db.session.delete(echo)
    db.session.flush()


def _text_parameters(components: list[TemplateComponentIn]) -> list[TemplateParameterIn]:
    return [p for c in components for p in c.parameters if p.type == "text"]


def _meta_parameter(parameter: TemplateParameterIn) -> dict[str, Any]:
    if parameter.type == "text":
        sent: dict[str, Any] = {"type": "text", "text": parameter.text}
        if parameter.parameter_name:
            sent["parameter_name"] = parameter.parameter_name
        return sent
    media = getattr(parameter, parameter.type)
    return {"type": parameter.type, parameter.type: {"link": media.link}}


def meta_components(components: list[TemplateComponentIn]) -> list[dict[str, Any]]:
    """The spec's ``buttons`` component becomes Meta's one ``button`` component per parameter."""
    sent: list[dict[str, Any]] = []
    for component in components:
        if component.type in ("buttons", "button"):
            for position, parameter in enumerate(component.parameters):
                index = component.index if component.index is not None else position
                sent.append(
                    {
                        "type": "button",
                        "sub_type": component.sub_type or "url",
                        "index": str(index),
                        "parameters": [_meta_parameter(parameter)],
                    }
                )
        else:
            sent.append(
                {"type": component.type, "parameters": [_meta_parameter(p) for p in component.parameters]}
            )
    return sent


def send_template(organization_id: uuid.UUID, body: SendTemplateIn) -> dict[str, Any]:
    """A WhatsApp template, allowed outside the window. The template is read from the provider on every
    send (no stale cache: Chatwoot's stale copies caused 132000s), must be ``APPROVED``, and every text
    parameter must name its placeholder. Unless ``do_not_pause``, the conversation's AI agent is paused."""
    address = sendable_address(organization_id, body.organization_address, None)
    if address.service != "whatsapp":
        raise ApiError(400, "organization_address: templates are sent from WhatsApp addresses")
    if any(not p.parameter_name for p in _text_parameters(body.components)):
        raise ApiError(400, PARAMETER_NAME_MISSING, param="components")
    to = contact_address_for("whatsapp", body.to, "to")
    provider = provider_for(address)
    try:
        template = provider.get_template(address, body.meta_template_id)
    except (ProviderError, TokenDecryptionError) as error:
        if isinstance(error, ProviderError) and error.auth_failed:
            address.status = "reauth_required"
            db.session.commit()
        raise ApiError(404, TEMPLATE_LOOKUP_FAILED, param="meta_template_id") from None
    if template.status != "APPROVED":
        raise ApiError(
            400,
            f"Template {template.name} is not approved (status {template.status})",
            param="meta_template_id",
        )
    values = {
        p.parameter_name or "": p.text or ""
        for c in body.components
        if c.type == "body"
        for p in c.parameters
    }
    named = {p.parameter_name for p in _text_parameters(body.components)}
    if template.parameter_format == "NAMED":
        expected = set(template.placeholders("BODY")) | set(template.placeholders("HEADER"))
        if expected - named:
            raise ApiError(400, PARAMETER_NAME_MISSING, param="components")
    thread = thread_for(address, to)
    now = utcnow()
    message = Message(
        id=uuid.uuid4(),
        organization_id=organization_id,
        conversation_id=thread.conversation.id,
        direction="outgoing",
        service="whatsapp",
        organization_address=address.address,
        contact_address=to,
        timestamp=now,
        content=None,
        template={
            "id": template.id or body.meta_template_id,
            "name": template.name,
            "language": template.language,
            "category": template.category,
            "text": template.render_body(values),
        },
        data={"components": [c.model_dump(exclude_none=True) for c in body.components]},
        template_name=template.name,
        template_language=template.language,
        status={"pending": isoformat(now)},
        current_status="pending",
        member_id=body.member_id,
    )
    db.session.add(message)
    _renew_last_message(thread.conversation, now)
    db.session.flush()
    publish("message.created", organization_id, serialize_message(message))
    db.session.commit()
    outbound = OutboundMessage(
        service="whatsapp",
        to=_recipient(address, to, thread.contact_address.provider_id),
        kind="template",
        template_name=template.name,
        template_language=template.language,
        template_components=meta_components(body.components),
    )
    conversation = thread.conversation

    def pause_agent() -> None:
        # A business-initiated template usually starts a human follow-up: the AI agent stays quiet in this
        # conversation until someone resumes it (do_not_pause keeps it answering).
        if body.do_not_pause:
            return
        conversation.ai_paused_at = utcnow()
        publish(
            "conversation.ai_paused",
            organization_id,
            {
                "conversation_id": str(conversation.id),
                "reason": "template_sent",
                "message_id": str(message.id),
            },
        )

    return _dispatch(address, message, outbound, on_success=pause_agent)


# ---------------------------------------------------------------------------------------------------
# Idempotency-Key


@dataclass
class Outcome:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def run_idempotent(
    organization_id: uuid.UUID,
    key: str | None,
    scope: str,
    payload: dict[str, Any],
    action: Callable[[], dict[str, Any]],
) -> Outcome:
    """Stripe's rule: the same key with the same body replays the first result (``Idempotent-Replayed:
    true``); with another body it is 409; while the first is still running it is 409 too. Errors a retry
    could fix (429, 5xx) are not kept, so the retry runs again. Keys expire after 24 hours."""
    if key is None:
        return Outcome(201, action())
    key = key.strip()
    if not key or len(key) > 255:
        raise ApiError(400, "Idempotency-Key: must be 1-255 characters", param="Idempotency-Key")
    digest = hashlib.sha256(json.dumps([scope, payload], sort_keys=True, default=str).encode()).hexdigest()
    claimed = _claim(organization_id, key, digest)
    if isinstance(claimed, Outcome):
        return claimed
    try:
        body = action()
    except ApiError as error:
        record = db.session.get(IdempotencyRecord, claimed)
        if record is not None:
            if error.status == 429 or error.status >= 500:
                db.session.delete(record)
            else:
                record.response_status = error.status
                record.response = {"message": error.message}
                record.response_headers = dict(error.headers)
            db.session.commit()
        raise
    except Exception:
        db.session.rollback()
        db.session.execute(IdempotencyRecord.__table__.delete().where(IdempotencyRecord.id == claimed))
        db.session.commit()
        raise
    record = db.session.get(IdempotencyRecord, claimed)
    if record is not None:
        record.response_status = 201
        record.response = body
        record.message_id = body.get("id")
        db.session.commit()
    return Outcome(201, body)


def _claim(organization_id: uuid.UUID, key: str, digest: str) -> uuid.UUID | Outcome:
    def existing() -> IdempotencyRecord | None:
        return db.session.scalar(
            select(IdempotencyRecord).where(
                IdempotencyRecord.organization_id == organization_id, IdempotencyRecord.key == key
            )
        )

    record = existing()
    if record is not None and record.created_at < utcnow() - IDEMPOTENCY_TTL:
        db.session.delete(record)
        db.session.commit()
        record = None
    if record is not None:
        return _replay(record, digest)
    record = IdempotencyRecord(id=uuid.uuid4(), organization_id=organization_id, key=key, request_hash=digest)
    db.session.add(record)
    try:
        db.session.commit()
    except IntegrityError:  # the same key arrived twice at once: the other request owns it
        db.session.rollback()
        other = existing()
        if other is None:
            raise ApiError(409, "A request with this Idempotency-Key is in progress") from None
        return _replay(other, digest)
    return record.id


def _replay(record: IdempotencyRecord, digest: str) -> Outcome:
    if record.request_hash != digest:
        raise ApiError(
            409, "Idempotency-Key was already used with a different request", param="Idempotency-Key"
        )
    if record.response_status is None:
        raise ApiError(409, "A request with this Idempotency-Key is in progress", param="Idempotency-Key")
    headers = {**(record.response_headers or {}), "Idempotent-Replayed": "true"}
    if record.response_status >= 400:
        raise ApiError(record.response_status, (record.response or {}).get("message"), headers=headers)
    return Outcome(record.response_status, dict(record.response or {}), headers)
