"""Messaging routes under ``/v2/messages/organizations/{organization_id}``: sends, the service window,
messages, conversations and messaging contacts. Thin: parse, call a service, serialise."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import request
from flask_openapi3 import Tag

from blueprints.channels.providers import MediaRef
from blueprints.messaging import services
from blueprints.messaging.schemas import (
    CannedResponseIn,
    CannedResponseList,
    CannedResponseListQuery,
    CannedResponseOut,
    CannedResponsePatch,
    CannedResponsePath,
    ContactIn,
    ContactList,
    ContactListQuery,
    ContactOut,
    ContactPatch,
    ContactPath,
    ConversationOut,
    ConversationPath,
    MessageList,
    MessageListQuery,
    MessageOut,
    MessagePath,
    OrgPath,
    SendMessageIn,
    SendTemplateIn,
    WindowOut,
    WindowPath,
    WindowQuery,
)
from blueprints.messaging.sending import Content, IdempotencyRef, TemplateSend
from core import auth
from core.db import isoformat
from core.idempotency import HEADER, idempotent, request_scope
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses, rate_limited
from core.pagination import TOTAL_RELATION_HEADER
from core.timeutil import parse_iso_datetime

PREFIX = "/v2/messages/organizations/<organization_id>"
TAG = Tag(name="Messaging", description="Messages, the service window, conversations and contacts")
api = AreaAPI(
    "messaging_api",
    __name__,
    url_prefix=PREFIX,
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


# A send's 429 is ours or the provider's: Meta's own limit comes back with Retry-After and X-Message-Id
# (the message is stored as failed), without the RateLimit-* headers of ours.
def _send_rate_limited() -> dict[str, object]:
    return rate_limited(
        PlainError, also="or the provider refused the send for its rate limit (`Retry-After`, `X-Message-Id`)"
    )


def _idempotency() -> IdempotencyRef | None:
    """The key this send runs under (``@idempotent`` already checked it), kept on the message so a send
    whose process died can still be answered under its key (``sending.reconcile_stale``)."""
    key = (request.headers.get(HEADER) or "").strip()
    return IdempotencyRef(request_scope(), key) if key else None


@api.get(
    "/contacts/addresses/<address>/service-window",
    responses={200: WindowOut},
)
def service_window(path: WindowPath, query: WindowQuery) -> dict[str, Any]:
    """Whether free text may be sent to the contact: `open` while their last message is under 24 h old."""
    window = services.service_window(auth.current_organization_id(), path.address, query.organization_address)
    return WindowOut(status=window.status, expires_at=isoformat(window.expires_at)).model_dump(mode="json")


@api.post(
    "/messages/send-template",
    responses={201: MessageOut, 409: PlainError, 429: _send_rate_limited(), 502: PlainError},
)
@idempotent
def send_template(path: OrgPath, body: SendTemplateIn) -> tuple[dict[str, Any], int]:
    """Send an approved WhatsApp template with named parameters.

    Send `Idempotency-Key: <unique string>` to make a retry safe: the same key and body replay the first
    result (`Idempotent-Replayed: true`); the same key with another body is 409.
    """
    message = services.send_template(
        auth.current_organization_id(),
        TemplateSend(
            organization_address=body.organization_address,
            to=body.to,
            meta_template_id=body.meta_template_id,
            components=[c.model_dump(exclude_none=True) for c in body.components],
            do_not_pause=body.do_not_pause,
            member_id=body.member_id,
            idempotency=_idempotency(),
        ),
    )
    return MessageOut.dump(message), 201


@api.post(
    "/messages", responses={201: MessageOut, 409: PlainError, 429: _send_rate_limited(), 502: PlainError}
)
@idempotent
def send_message(path: OrgPath, body: SendMessageIn) -> tuple[dict[str, Any], int]:
    """Send free text or media inside the 24-hour service window.

    Send `Idempotency-Key: <unique string>` to make a retry safe: the same key and body replay the first
    result (`Idempotent-Replayed: true`); the same key with another body is 409.
    """
    content = body.content
    file = content.file
    message = services.send_message(
        auth.current_organization_id(),
        organization_address=body.organization_address,
        service=body.service,
        contact_address=body.contact_address,
        content=Content(
            kind=content.kind,
            text=content.text,
            media=MediaRef(file.uri, file.mime_type, file.filename) if file is not None else None,
            location=content.location.model_dump(exclude_none=True) if content.location else None,
        ),
        member_id=body.member_id,
        idempotency=_idempotency(),
    )
    return MessageOut.dump(message), 201


@api.get("/messages/<message_id>", responses={200: MessageOut})
def get_message(path: MessagePath) -> dict[str, Any]:
    """One message."""
    return MessageOut.dump(services.get_message(auth.current_organization_id(), path.message_id))


@api.get("/messages", responses={200: MessageList})
def list_messages(
    path: OrgPath, query: MessageListQuery
) -> dict[str, Any] | tuple[dict[str, Any], int, dict[str, str]]:
    """The latest `take` messages matching the filters, oldest first: `{data, total, skip, take}`."""
    until = before = None
    if query.end_date:
        end = parse_iso_datetime(query.end_date)
        if len(query.end_date.strip()) == 10:  # a bare date includes its whole (UTC) day
            before = end + timedelta(days=1)
        else:
            until = end
    page = services.list_messages(
        auth.current_organization_id(),
        conversation_id=query.conversation_id,
        direction=query.direction,
        since=parse_iso_datetime(query.start_date) if query.start_date else None,
        until=until,
        before=before,
        skip=query.skip,
        take=query.take,
        cursor=query.cursor,
    )
    body = MessageList(
        data=[MessageOut.model_validate(m) for m in page.items],
        total=page.total,
        skip=query.skip,
        take=query.take,
        next_cursor=page.next_cursor,
    ).model_dump(mode="json")
    if query.cursor is None:
        del body["next_cursor"]  # the spec's shape, unchanged for offset pages
    if not page.total_is_exact:  # the count stopped at its cap: total is a lower bound
        return body, 200, {TOTAL_RELATION_HEADER: "gte"}
    return body


@api.get("/conversations/<conversation_id>", responses={200: ConversationOut})
def get_conversation(path: ConversationPath) -> dict[str, Any]:
    """One conversation with its contact."""
    return ConversationOut.dump(
        services.get_conversation(auth.current_organization_id(), path.conversation_id)
    )


@api.get("/contacts", responses={200: ContactList})
def list_contacts(path: OrgPath, query: ContactListQuery) -> dict[str, Any]:
    """Messaging contacts with their channel addresses: `{data, total, skip, take}`."""
    page = services.list_contacts(
        auth.current_organization_id(),
        search=query.search,
        service=query.service,
        crm_contact_id=query.crm_contact_id,
        skip=query.skip,
        take=query.take,
    )
    return ContactList(
        data=[ContactOut.model_validate(c) for c in page.items],
        total=page.total,
        skip=query.skip,
        take=query.take,
    ).model_dump(mode="json")


@api.post("/contacts", responses={201: ContactOut, 409: PlainError})
def create_contact(path: OrgPath, body: ContactIn) -> tuple[dict[str, Any], int]:
    """Create a contact; WhatsApp addresses are stored in E.164."""
    contact = services.create_contact(
        auth.current_organization_id(),
        name=body.name,
        addresses=[(a.service, a.address) for a in body.addresses],
        crm_contact_id=body.crm_contact_id,
        extra=body.extra,
    )
    return ContactOut.dump(contact), 201


@api.get("/contacts/<contact_id>", responses={200: ContactOut})
def get_contact(path: ContactPath) -> dict[str, Any]:
    """One contact."""
    return ContactOut.dump(services.get_contact(auth.current_organization_id(), path.contact_id))


@api.patch("/contacts/<contact_id>", responses={200: ContactOut, 409: PlainError})
def update_contact(path: ContactPath, body: ContactPatch) -> dict[str, Any]:
    """Change the fields sent; `addresses`, when sent, replaces the list; `extra` is merged."""
    sent = body.model_fields_set
    changes: dict[str, Any] = {
        name: getattr(body, name) for name in ("name", "crm_contact_id") if name in sent
    }
    if "extra" in sent and body.extra is not None:
        changes["extra"] = body.extra
    if "addresses" in sent and body.addresses is not None:
        changes["addresses"] = [(a.service, a.address) for a in body.addresses]
    contact = services.update_contact(auth.current_organization_id(), path.contact_id, **changes)
    return ContactOut.dump(contact)


@api.delete("/contacts/<contact_id>", responses={204: None, 409: PlainError})
def delete_contact(path: ContactPath) -> tuple[str, int]:
    """Delete a contact that has no conversations."""
    services.delete_contact(auth.current_organization_id(), path.contact_id)
    return "", 204


@api.get("/canned-responses", responses={200: CannedResponseList})
def list_canned_responses(path: OrgPath, query: CannedResponseListQuery) -> dict[str, Any]:
    """The organization's canned responses, by short code: `{data, total, skip, take}`. `q` matches short
    code, title or content (short codes starting with `q` first)."""
    page = services.list_canned_responses(
        auth.current_organization_id(), q=query.q, skip=query.skip, take=query.take
    )
    return CannedResponseList(
        data=[CannedResponseOut.model_validate(c) for c in page.items],
        total=page.total,
        skip=query.skip,
        take=query.take,
    ).model_dump(mode="json")


@api.post("/canned-responses", responses={201: CannedResponseOut, 409: PlainError})
def create_canned_response(path: OrgPath, body: CannedResponseIn) -> tuple[dict[str, Any], int]:
    """Save a reply; agents insert it in the desk's composer by typing `/<short_code>`. 409 when the
    organization already has that short code."""
    canned = services.create_canned_response(
        auth.current_organization_id(), short_code=body.short_code, content=body.content, title=body.title
    )
    return CannedResponseOut.dump(canned), 201


@api.get("/canned-responses/<canned_response_id>", responses={200: CannedResponseOut})
def get_canned_response(path: CannedResponsePath) -> dict[str, Any]:
    """One canned response."""
    return CannedResponseOut.dump(
        services.get_canned_response(auth.current_organization_id(), path.canned_response_id)
    )


@api.patch("/canned-responses/<canned_response_id>", responses={200: CannedResponseOut, 409: PlainError})
def update_canned_response(path: CannedResponsePath, body: CannedResponsePatch) -> dict[str, Any]:
    """Change the fields sent (`title: null` clears the title)."""
    changes = {
        name: getattr(body, name)
        for name in ("short_code", "content", "title")
        if name in body.model_fields_set
    }
    canned = services.update_canned_response(
        auth.current_organization_id(), path.canned_response_id, **changes
    )
    return CannedResponseOut.dump(canned)


@api.delete("/canned-responses/<canned_response_id>", responses={204: None})
def delete_canned_response(path: CannedResponsePath) -> tuple[str, int]:
    """Delete a canned response."""
    services.delete_canned_response(auth.current_organization_id(), path.canned_response_id)
    return "", 204
