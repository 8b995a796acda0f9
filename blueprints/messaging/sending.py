"""Sending: free text and media inside the service window, and WhatsApp templates.

A send is three steps, each durable before the next (``core.uow`` checkpoints):

1. ``send.pending``: the message is stored ``pending`` (with its contact and conversation) before the
   provider is called, so a crash after the provider's answer leaves a row to reconcile, never a silent
   second send;
2. the provider answers. An acceptance is stored (``send.accepted``: the provider id, status
   ``accepted``) before statuses that raced the send are taken from the backlog; a refusal is stored
   (``send.refused``: ``failed`` with ``status.error``, the address marked ``reauth_required`` on an
   expired token) although the request answers an error;
3. the request's own commit keeps the statuses applied from the backlog.

A send the desk refuses before calling the provider (a closed service window, an unknown address, a bad
number) leaves nothing behind: no contact, no conversation, no message, no moved ``last_message_at``.

A send whose process died after step 1 stays ``pending``; :func:`reconcile_stale` (every minute, and
``flask --app app messages reconcile``) settles those older than :data:`PENDING_LIMIT`: the provider is
asked whether it received the send (``lookup_send``, by our message id); received: its id is stored as
``accepted``; never received: sent again; cannot tell (Meta): ``unknown``, never sent twice. The
``Idempotency-Key`` the send ran under then answers with the message as it now is, instead of 409.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from blueprints.channels.crypto import TokenDecryptionError
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.providers import (
    MediaRef,
    OutboundMessage,
    ProviderError,
    uses_simulator,
)
from blueprints.channels.registry import provider_for
from blueprints.channels.services import get_address
from blueprints.messaging.models import (
    ContactAddress,
    Conversation,
    Message,
)
from blueprints.messaging.schemas import MessageOut
from blueprints.messaging.threads import (
    apply_backlog,
    apply_status,
    contact_address_for,
    mark_failed,
    thread_for,
)
from core import idempotency, uow
from core.db import db, for_update, isoformat, utcnow
from core.errors import ApiError
from core.events import publish
from core.phones import digits_only
from core.timeutil import parse_iso_datetime

SERVICE_WINDOW = timedelta(hours=24)
INSTAGRAM_TEXT_BYTES = 1000
SEND_FAILED = "Message failed to send"
ADDRESS_NOT_FOUND = "Organization address not found"
NO_TOKEN = "Organization address does not have an access token"
PARAMETER_NAME_MISSING = "Parameter name is missing"
TEMPLATE_LOOKUP_FAILED = "Failed to get template from Meta"
# A send still ``pending`` after this long lost its process: far longer than a send can take (three
# connection attempts and one META_HTTP_TIMEOUT of 15 s).
PENDING_LIMIT = timedelta(minutes=2)
UNKNOWN_OUTCOME = {
    "code": "unknown_outcome",
    "title": "The send was interrupted; the provider may or may not have sent it",
    "provider": "desk",
}


@dataclass(frozen=True)
class IdempotencyRef:
    """The ``Idempotency-Key`` (core's scope and key) a send runs under."""

    scope: str
    key: str


@dataclass(frozen=True)
class Content:
    """What a free-text or media send carries (``kind``: text, image, video, audio, document, location)."""

    kind: str
    text: str | None = None
    media: MediaRef | None = None
    location: dict[str, Any] | None = None

    def stored(self) -> dict[str, Any]:
        """The message's ``content`` as stored and returned."""
        stored: dict[str, Any] = {"kind": self.kind}
        if self.text is not None:
            stored["text"] = self.text
        if self.media is not None:
            file = {"uri": self.media.uri, "mime_type": self.media.mime_type}
            if self.media.filename is not None:
                file["filename"] = self.media.filename
            stored["file"] = file
        if self.location is not None:
            stored["location"] = self.location
        return stored


@dataclass(frozen=True)
class TemplateSend:
    """A template send; ``components`` in the spec's shape (``{type, sub_type?, index?, parameters}``)."""

    organization_address: str
    to: str
    meta_template_id: str
    components: list[dict[str, Any]] = field(default_factory=list)
    do_not_pause: bool = False
    member_id: str | None = None
    idempotency: IdempotencyRef | None = None


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


def _check_channel_content(service: str, content: Content) -> None:
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


def _last_incoming(address: OrganizationAddress, contact_address: str) -> datetime | None:
    return db.session.scalar(
        select(func.max(Conversation.last_incoming_at)).where(
            Conversation.organization_id == address.organization_id,
            Conversation.organization_address == address.address,
            Conversation.service == address.service,
            Conversation.contact_address == contact_address,
        )
    )


def send_message(
    organization_id: uuid.UUID,
    *,
    organization_address: str,
    service: str | None,
    contact_address: str,
    content: Content,
    member_id: str | None = None,
    idempotency: IdempotencyRef | None = None,
) -> Message:
    """Free text or media inside the service window. Outside it the call is 400 ``Message failed to
    send`` and nothing is stored; a provider's refusal is stored on the message (``X-Message-Id``)."""
    address = sendable_address(organization_id, organization_address, service)
    _check_channel_content(address.service, content)
    contact = contact_address_for(address.service, contact_address, "contact_address")
    now = utcnow()
    # Checked before anything is written: an open window means the contact wrote, so the thread exists.
    last_incoming = _last_incoming(address, contact)
    if last_incoming is None or now - last_incoming >= SERVICE_WINDOW:
        raise ApiError(400, SEND_FAILED, code="send_failed")
    thread = thread_for(address, contact)
    message = Message(
        id=uuid.uuid4(),
        organization_id=organization_id,
        conversation_id=thread.conversation.id,
        direction="outgoing",
        service=address.service,
        organization_address=address.address,
        contact_address=contact,
        timestamp=now,
        content=content.stored(),
        status={"pending": isoformat(now)},
        current_status="pending",
        member_id=member_id,
        idempotency_scope=idempotency.scope if idempotency else None,
        idempotency_key=idempotency.key if idempotency else None,
    )
    db.session.add(message)
    _renew_last_message(thread.conversation, now)
    db.session.flush()
    publish("message.created", organization_id, MessageOut.dump(message))
    uow.checkpoint("send.pending")
    outbound = OutboundMessage(
        service=address.service,
        to=_recipient(address, contact, thread.contact_address.provider_id),
        kind=content.kind,
        text=content.text,
        media=content.media,
        location=content.location,
        reference=str(message.id),
    )
    return _dispatch(address, message, outbound)


def _renew_last_message(conversation: Conversation, when: datetime) -> None:
    if conversation.last_message_at is None or when > conversation.last_message_at:
        conversation.last_message_at = when


def _api_error_for(error: ProviderError, message: Message) -> ApiError:
    headers = {"X-Message-Id": str(message.id)}
    if error.template_missing:
        return ApiError(404, TEMPLATE_LOOKUP_FAILED, code="template_not_found", headers=headers)
    if error.code == "no_token":
        return ApiError(400, NO_TOKEN, headers=headers)
    if error.rate_limited:
        headers["Retry-After"] = str(error.retry_after or 60)
        return ApiError(429, SEND_FAILED, code="send_failed", headers=headers)
    if error.unavailable:
        return ApiError(502, SEND_FAILED, code="send_failed", headers=headers)
    return ApiError(400, SEND_FAILED, code="send_failed", headers=headers)


def _dispatch(
    address: OrganizationAddress,
    message: Message,
    outbound: OutboundMessage,
    on_success: Callable[[], None] | None = None,
) -> Message:
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
        publish("message.updated", message.organization_id, MessageOut.dump(message))
        uow.checkpoint("send.refused")
        raise _api_error_for(error, message) from None
    now = utcnow()
    _merge_echo(message, result.external_id)
    message.external_id = result.external_id
    apply_status(message, "accepted", now)
    if on_success is not None:
        on_success()
    uow.checkpoint("send.accepted")
    apply_backlog([message])
    db.session.flush()
    publish("message.updated", message.organization_id, MessageOut.dump(message))
    # the simulator's status jobs wait for the commit (jobs are enqueued after it)
    provider.after_send(address, outbound, result)
    return message


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


def _text_parameters(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for c in components for p in c.get("parameters") or [] if p.get("type") == "text"]


def _meta_parameter(parameter: dict[str, Any]) -> dict[str, Any]:
    if parameter.get("type") == "text":
        sent: dict[str, Any] = {"type": "text", "text": parameter.get("text")}
        if parameter.get("parameter_name"):
            sent["parameter_name"] = parameter["parameter_name"]
        return sent
    kind = str(parameter.get("type"))
    return {"type": kind, kind: {"link": (parameter.get(kind) or {}).get("link")}}


def meta_components(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spec's ``buttons`` component becomes Meta's one ``button`` component per parameter."""
    sent: list[dict[str, Any]] = []
    for component in components:
        parameters = component.get("parameters") or []
        if component.get("type") in ("buttons", "button"):
            for position, parameter in enumerate(parameters):
                index = component.get("index")
                sent.append(
                    {
                        "type": "button",
                        "sub_type": component.get("sub_type") or "url",
                        "index": str(index if index is not None else position),
                        "parameters": [_meta_parameter(parameter)],
                    }
                )
        else:
            sent.append(
                {"type": component.get("type"), "parameters": [_meta_parameter(p) for p in parameters]}
            )
    return sent


def send_template(organization_id: uuid.UUID, send: TemplateSend) -> Message:
    """A WhatsApp template, allowed outside the window. The template is read from the provider on every
    send (no stale cache: Chatwoot's stale copies caused 132000s), must be ``APPROVED``, and every text
    parameter must name its placeholder. Unless ``do_not_pause``, the conversation's AI agent is paused."""
    address = sendable_address(organization_id, send.organization_address, None)
    if address.service != "whatsapp":
        raise ApiError(400, "organization_address: templates are sent from WhatsApp addresses")
    if any(not p.get("parameter_name") for p in _text_parameters(send.components)):
        raise ApiError(400, PARAMETER_NAME_MISSING, code="template_parameter_missing", param="components")
    to = contact_address_for("whatsapp", send.to, "to")
    provider = provider_for(address)
    provider.ids.check(send.meta_template_id, "meta_template_id")
    try:
        template = provider.get_template(address, send.meta_template_id)
    except (ProviderError, TokenDecryptionError) as error:
        if isinstance(error, ProviderError) and error.auth_failed:
            address.status = "reauth_required"
            uow.checkpoint("send.refused")
        raise ApiError(
            404, TEMPLATE_LOOKUP_FAILED, code="template_not_found", param="meta_template_id"
        ) from None
    if template.status != "APPROVED":
        raise ApiError(
            400,
            f"Template {template.name} is not approved (status {template.status})",
            param="meta_template_id",
        )
    values = {
        p.get("parameter_name") or "": p.get("text") or ""
        for c in send.components
        if c.get("type") == "body"
        for p in c.get("parameters") or []
    }
    named = {p.get("parameter_name") for p in _text_parameters(send.components)}
    if template.parameter_format == "NAMED":
        expected = set(template.placeholders("BODY")) | set(template.placeholders("HEADER"))
        if expected - named:
            raise ApiError(400, PARAMETER_NAME_MISSING, code="template_parameter_missing", param="components")
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
            "id": template.id or send.meta_template_id,
            "name": template.name,
            "language": template.language,
            "category": template.category,
            "text": template.render_body(values),
        },
        data={"components": send.components},
        template_name=template.name,
        template_language=template.language,
        status={"pending": isoformat(now)},
        current_status="pending",
        member_id=send.member_id,
        idempotency_scope=send.idempotency.scope if send.idempotency else None,
        idempotency_key=send.idempotency.key if send.idempotency else None,
    )
    db.session.add(message)
    _renew_last_message(thread.conversation, now)
    db.session.flush()
    publish("message.created", organization_id, MessageOut.dump(message))
    uow.checkpoint("send.pending")
    outbound = OutboundMessage(
        service="whatsapp",
        to=_recipient(address, to, thread.contact_address.provider_id),
        kind="template",
        template_name=template.name,
        template_language=template.language,
        template_components=meta_components(send.components),
        reference=str(message.id),
    )
    conversation = thread.conversation

    def pause_agent() -> None:
        # A business-initiated template usually starts a human follow-up: the AI agent stays quiet in this
        # conversation until someone resumes it (do_not_pause keeps it answering).
        if send.do_not_pause:
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
# Reconciling sends whose process died


@dataclass
class ReconcileReport:
    """Message ids by outcome: ``accepted`` (the provider had it), ``resent``, ``failed`` (the re-send was
    refused), ``unknown`` (the provider cannot tell: reported, never sent twice)."""

    accepted: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "accepted": self.accepted,
            "resent": self.resent,
            "failed": self.failed,
            "unknown": self.unknown,
        }


def reconcile_stale(older_than: timedelta | None = None) -> ReconcileReport:
    """Settle outgoing messages still ``pending`` (no provider id) created more than ``older_than`` ago.

    Each is locked while it is settled (on PostgreSQL a concurrent sweep skips it), so two sweeps never
    send one message twice. Re-sends go through the send's own checkpoints; the rest is committed by the
    caller's unit of work (the periodic sweep, the CLI command)."""
    report = ReconcileReport()
    cutoff = utcnow() - (PENDING_LIMIT if older_than is None else older_than)
    ids = list(
        db.session.scalars(
            select(Message.id)
            .where(
                Message.direction == "outgoing",
                Message.current_status == "pending",
                Message.external_id.is_(None),
                Message.created_at <= cutoff,
            )
            .order_by(Message.created_at)
        )
    )
    for message_id in ids:
        message = db.session.scalar(
            for_update(
                select(Message).where(Message.id == message_id, Message.current_status == "pending"),
                skip_locked=True,
            )
        )
        if message is None:
            continue  # settled meanwhile, or another sweep holds it
        _reconcile(message, report)
        _answer_idempotency_key(message)
    return report


def _reconcile(message: Message, report: ReconcileReport) -> None:
    address = get_address(message.organization_id, message.organization_address)
    past = provider_for(address).lookup_send(address, str(message.id)) if address is not None else None
    if past is not None and past.seen and past.result is not None:
        _merge_echo(message, past.result.external_id)
        message.external_id = past.result.external_id
        apply_status(message, "accepted", utcnow())
        uow.checkpoint("send.accepted")
        apply_backlog([message])
        db.session.flush()
        publish("message.updated", message.organization_id, MessageOut.dump(message))
        report.accepted.append(str(message.id))
        return
    if address is not None and past is not None and past.seen is False:
        try:
            _dispatch(address, message, _outbound_for(address, message))
        except ApiError:
            report.failed.append(str(message.id))  # kept as failed with status.error (send.refused)
            return
        report.resent.append(str(message.id))
        return
    now = utcnow()
    statuses = dict(message.status or {})
    statuses["unknown"] = isoformat(now)
    statuses["error"] = dict(UNKNOWN_OUTCOME)
    message.status = statuses
    message.current_status = "unknown"
    db.session.flush()
    publish("message.updated", message.organization_id, MessageOut.dump(message))
    report.unknown.append(str(message.id))


def _outbound_for(address: OrganizationAddress, message: Message) -> OutboundMessage:
    """The send again, from what the message stored."""
    provider_id = db.session.scalar(
        select(ContactAddress.provider_id).where(
            ContactAddress.organization_id == message.organization_id,
            ContactAddress.service == message.service,
            ContactAddress.address == message.contact_address,
        )
    )
    to = _recipient(address, message.contact_address, provider_id)
    if message.template is not None:
        return OutboundMessage(
            service=message.service,
            to=to,
            kind="template",
            template_name=message.template_name,
            template_language=message.template_language,
            template_components=meta_components((message.data or {}).get("components") or []),
            reference=str(message.id),
        )
    content = message.content or {}
    file = content.get("file")
    return OutboundMessage(
        service=message.service,
        to=to,
        kind=str(content.get("kind")),
        text=content.get("text"),
        media=MediaRef(file["uri"], file.get("mime_type"), file.get("filename")) if file else None,
        location=content.get("location"),
        reference=str(message.id),
    )


def _answer_idempotency_key(message: Message) -> None:
    """The key a dead send ran under answers from now on with the message as it now is (201), not 409."""
    if message.idempotency_scope and message.idempotency_key:
        idempotency.settle(message.idempotency_scope, message.idempotency_key, 201, MessageOut.dump(message))
