"""The messaging rules: sending (free text, media, templates), the service window, reading messages,
messaging contacts, conversations, and the transcript other areas read.

Inbound webhook storage lives in :mod:`blueprints.messaging.ingest` (re-exported here as
``ingest_events``); finding or creating contacts and conversations in :mod:`.threads`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

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
from blueprints.messaging.ingest import IngestResult, ingest_events
from blueprints.messaging.models import (
    Contact,
    ContactAddress,
    Conversation,
    IdempotencyRecord,
    Message,
)
from blueprints.messaging.schemas import (
    ContactIn,
    ContactListQuery,
    ContactPatch,
    MessageListQuery,
    SendMessageIn,
    SendTemplateIn,
    TemplateComponentIn,
    TemplateParameterIn,
)
from blueprints.messaging.serialize import serialize_contact, serialize_conversation, serialize_message
from blueprints.messaging.threads import (
    apply_backlog,
    apply_status,
    mark_failed,
    resolve_crm_contact,
    set_crm_contact_resolver,
    thread_for,
)
from core.db import db, isoformat, utcnow
from core.errors import ApiError
from core.events import publish
from core.pagination import paginate
from core.phones import InvalidPhoneNumber, digits_only, normalize_phone
from core.timeutil import parse_iso_datetime

__all__ = [
    "IngestResult",
    "conversation_transcript",
    "ingest_events",
    "set_crm_contact_resolver",
]

SERVICE_WINDOW = timedelta(hours=24)
IDEMPOTENCY_TTL = timedelta(hours=24)
INSTAGRAM_TEXT_BYTES = 1000
SEND_FAILED = "Message failed to send"
ADDRESS_NOT_FOUND = "Organization address not found"
NO_TOKEN = "Organization address does not have an access token"
PARAMETER_NAME_MISSING = "Parameter name is missing"
TEMPLATE_LOOKUP_FAILED = "Failed to get template from Meta"


def _uuid(value: str | uuid.UUID | None) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


def contact_address_for(service: str, raw: str, field_name: str) -> str:
    """WhatsApp numbers in E.164 (with or without ``+``; 521/549 quirks folded); other ids as given."""
    if service != "whatsapp":
        value = raw.strip()
        if not value:
            raise ApiError(400, f"{field_name}: must not be empty", param=field_name)
        return value
    try:
        return normalize_phone(raw)
    except InvalidPhoneNumber:
        raise ApiError(400, f"{field_name}: not a valid phone number", param=field_name) from None


# ---------------------------------------------------------------------------------------------------
# Sending


def _sendable_address(
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
    address = _sendable_address(organization_id, body.organization_address, body.service)
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
    address = _sendable_address(organization_id, body.organization_address, None)
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


# ---------------------------------------------------------------------------------------------------
# Service window and reading


def service_window(organization_id: uuid.UUID, contact: str, organization_address: str) -> dict[str, Any]:
    """``open`` while the contact's last incoming message (by the provider's timestamp) is < 24 h old."""
    address = get_address(organization_id, organization_address)
    if address is None:
        raise ApiError(404, ADDRESS_NOT_FOUND, param="organization_address")
    contact_address = contact_address_for(address.service, contact, "address")
    last = db.session.scalar(
        select(func.max(Conversation.last_incoming_at)).where(
            Conversation.organization_id == organization_id,
            Conversation.organization_address == address.address,
            Conversation.service == address.service,
            Conversation.contact_address == contact_address,
        )
    )
    now = utcnow()
    if last is not None and now - last < SERVICE_WINDOW:
        return {"status": "open", "expires_at": isoformat(last + SERVICE_WINDOW)}
    return {"status": "closed", "expires_at": None}


def get_message(organization_id: uuid.UUID, message_id: str) -> dict[str, Any]:
    identifier = _uuid(message_id)
    message = (
        db.session.scalar(
            select(Message).where(Message.id == identifier, Message.organization_id == organization_id)
        )
        if identifier
        else None
    )
    if message is None:
        raise ApiError(404, "Message not found")
    return serialize_message(message)


def list_messages(organization_id: uuid.UUID, query: MessageListQuery) -> dict[str, Any]:
    """The latest ``take`` messages (after skipping the ``skip`` latest), oldest first for display."""
    statement = select(Message).where(Message.organization_id == organization_id)
    if query.conversation_id:
        statement = statement.where(Message.conversation_id == query.conversation_id)
    if query.direction:
        statement = statement.where(Message.direction == query.direction)
    if query.start_date:
        statement = statement.where(Message.timestamp >= parse_iso_datetime(query.start_date))
    if query.end_date:
        end = parse_iso_datetime(query.end_date)
        if len(query.end_date.strip()) == 10:  # a bare date includes its whole (UTC) day
            statement = statement.where(Message.timestamp < end + timedelta(days=1))
        else:
            statement = statement.where(Message.timestamp <= end)
    statement = statement.order_by(Message.timestamp.desc(), Message.created_at.desc(), Message.id.desc())
    page = paginate(statement, offset=query.skip, limit=query.take)
    return {
        "data": [serialize_message(m) for m in reversed(page.items)],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


def get_conversation(organization_id: uuid.UUID, conversation_id: str) -> dict[str, Any]:
    conversation = _conversation(organization_id, conversation_id)
    if conversation is None:
        raise ApiError(404, "Conversation not found")
    return serialize_conversation(conversation, conversation.contact)


def _conversation(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> Conversation | None:
    identifier = _uuid(conversation_id)
    if identifier is None:
        return None
    return db.session.scalar(
        select(Conversation)
        .options(selectinload(Conversation.contact))
        .where(Conversation.id == identifier, Conversation.organization_id == organization_id)
    )


def conversation_belongs(organization_id: str, conversation_id: str) -> bool:
    """Socket.IO room check: may a client of ``organization_id`` follow this conversation?"""
    organization = _uuid(organization_id)
    identifier = _uuid(conversation_id)
    if organization is None or identifier is None:
        return False
    return bool(
        db.session.scalar(
            select(Conversation.id).where(
                Conversation.id == identifier, Conversation.organization_id == organization
            )
        )
    )


def conversation_transcript(
    organization_id: uuid.UUID | str, conversation_id: uuid.UUID | str
) -> list[tuple[str, str, datetime]] | None:
    """(direction, text, timestamp) of every message, oldest first; None when the conversation is not
    the organization's. Media appear as ``[image] caption``; templates as their rendered body."""
    organization = _uuid(organization_id)
    if organization is None or _conversation(organization, conversation_id) is None:
        return None
    rows = db.session.scalars(
        select(Message)
        .where(Message.organization_id == organization, Message.conversation_id == _uuid(conversation_id))
        .order_by(Message.timestamp, Message.created_at)
    )
    transcript = []
    for message in rows:
        transcript.append((message.direction, _text_of(message), message.timestamp))
    return transcript


def _text_of(message: Message) -> str:
    if message.template:
        return str(message.template.get("text") or f"[template {message.template_name}]")
    content = message.content or {}
    kind = content.get("kind", "text")
    if kind == "text":
        return str(content.get("text") or "")
    if kind == "location":
        location = content.get("location") or {}
        where = f"{location.get('latitude')},{location.get('longitude')}"
        return f"[location] {location.get('name') or ''} {where}".replace("  ", " ")
    caption = content.get("text")
    return f"[{kind}] {caption}" if caption else f"[{kind}]"


# ---------------------------------------------------------------------------------------------------
# Messaging contacts


def _identities(organization_id: uuid.UUID, addresses: list[Any]) -> list[tuple[str, str]]:
    identities: list[tuple[str, str]] = []
    for position, item in enumerate(addresses):
        address = contact_address_for(item.service, item.address, f"addresses.{position}.address")
        if (item.service, address) in identities:
            raise ApiError(400, f"addresses.{position}: repeated address", param=f"addresses.{position}")
        identities.append((item.service, address))
    return identities


def _check_free(
    organization_id: uuid.UUID, identities: list[tuple[str, str]], contact_id: uuid.UUID | None
) -> None:
    if not identities:
        return
    taken = db.session.execute(
        select(ContactAddress.service, ContactAddress.address, ContactAddress.contact_id).where(
            ContactAddress.organization_id == organization_id,
            ContactAddress.address.in_([a for _, a in identities]),
        )
    ).all()
    for service, address, owner in taken:
        if (service, address) in identities and owner != contact_id:
            raise ApiError(409, f"Contact address {service}:{address} already belongs to another contact")


def _load_contact(organization_id: uuid.UUID, contact_id: str | uuid.UUID) -> Contact:
    identifier = _uuid(contact_id)
    contact = (
        db.session.scalar(
            select(Contact)
            .options(selectinload(Contact.addresses))
            .where(Contact.id == identifier, Contact.organization_id == organization_id)
        )
        if identifier
        else None
    )
    if contact is None:
        raise ApiError(404, "Contact not found")
    return contact


def create_contact(organization_id: uuid.UUID, body: ContactIn) -> dict[str, Any]:
    identities = _identities(organization_id, body.addresses)
    _check_free(organization_id, identities, None)
    crm_contact_id = body.crm_contact_id
    if crm_contact_id is None:
        crm_contact_id = next(
            (found for s, a in identities if (found := resolve_crm_contact(organization_id, s, a))), None
        )
    contact = Contact(
        id=uuid.uuid4(),
        organization_id=organization_id,
        name=body.name,
        crm_contact_id=crm_contact_id,
        extra=body.extra,
    )
    contact.addresses = [
        ContactAddress(organization_id=organization_id, service=s, address=a) for s, a in identities
    ]
    db.session.add(contact)
    db.session.flush()
    data = serialize_contact(contact)
    publish("contact.created", organization_id, data)
    db.session.commit()
    return data


def list_contacts(organization_id: uuid.UUID, query: ContactListQuery) -> dict[str, Any]:
    statement = (
        select(Contact)
        .options(selectinload(Contact.addresses))
        .where(Contact.organization_id == organization_id)
    )
    if query.search:
        pattern = f"%{query.search.lower()}%"
        statement = statement.where(
            or_(
                func.lower(Contact.name).like(pattern),
                exists().where(
                    ContactAddress.contact_id == Contact.id, func.lower(ContactAddress.address).like(pattern)
                ),
            )
        )
    if query.service:
        statement = statement.where(
            exists().where(ContactAddress.contact_id == Contact.id, ContactAddress.service == query.service)
        )
    if query.crm_contact_id:
        statement = statement.where(Contact.crm_contact_id == query.crm_contact_id)
    statement = statement.order_by(Contact.created_at.desc(), Contact.id)
    page = paginate(statement, offset=query.skip, limit=query.take)
    return {
        "data": [serialize_contact(c) for c in page.items],
        "total": page.total,
        "skip": query.skip,
        "take": query.take,
    }


def get_contact(organization_id: uuid.UUID, contact_id: str) -> dict[str, Any]:
    return serialize_contact(_load_contact(organization_id, contact_id))


def update_contact(organization_id: uuid.UUID, contact_id: str, body: ContactPatch) -> dict[str, Any]:
    contact = _load_contact(organization_id, contact_id)
    sent = body.model_fields_set
    if "name" in sent:
        contact.name = body.name
    if "crm_contact_id" in sent:
        contact.crm_contact_id = body.crm_contact_id
    if "extra" in sent:
        contact.extra = {**(contact.extra or {}), **(body.extra or {})}
    if "addresses" in sent and body.addresses is not None:
        identities = _identities(organization_id, body.addresses)
        _check_free(organization_id, identities, contact.id)
        keep = {(a.service, a.address): a for a in contact.addresses}
        contact.addresses = [
            keep.get((s, a)) or ContactAddress(organization_id=organization_id, service=s, address=a)
            for s, a in identities
        ]
    db.session.flush()
    data = serialize_contact(contact)
    publish("contact.updated", organization_id, data)
    db.session.commit()
    return data


def delete_contact(organization_id: uuid.UUID, contact_id: str) -> None:
    contact = _load_contact(organization_id, contact_id)
    if db.session.scalar(select(Conversation.id).where(Conversation.contact_id == contact.id).limit(1)):
        raise ApiError(409, "Contact has conversations; delete or archive them first")
    db.session.delete(contact)
    publish("contact.deleted", organization_id, {"id": str(contact.id)})
    db.session.commit()


def link_crm_contact(organization_id: uuid.UUID, phone: str, crm_contact_id: str | None) -> int:
    """For the CRM area: link the messaging contacts whose WhatsApp number is ``phone`` (any format) to
    a CRM contact (or unlink with None). Returns how many contacts changed."""
    try:
        e164 = normalize_phone(phone)
    except InvalidPhoneNumber:
        return 0
    owners = select(ContactAddress.contact_id).where(
        ContactAddress.organization_id == organization_id,
        ContactAddress.service == "whatsapp",
        ContactAddress.address == e164,
    )
    changed = db.session.execute(
        update(Contact)
        .where(Contact.organization_id == organization_id, Contact.id.in_(owners))
        .values(crm_contact_id=crm_contact_id)
    ).rowcount
    db.session.commit()
    return int(changed or 0)
