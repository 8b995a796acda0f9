"""Messaging routes under ``/v2/messages/organizations/{organization_id}``: sends, the service window,
messages, conversations and messaging contacts. Thin: parse, call a service, serialise."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request
from flask_openapi3 import APIBlueprint, Tag

from blueprints.messaging import services
from blueprints.messaging.schemas import (
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
from core import auth
from core.openapi import API_KEY_ONLY, PlainError, error_responses

PREFIX = "/v2/messages/organizations/<organization_id>"
TAG = Tag(name="Messaging", description="Messages, the service window, conversations and contacts")
IDEMPOTENCY_NOTE = (
    " Send `Idempotency-Key: <unique string>` to make a retry safe: the same key and body replay the first "
    "result (`Idempotent-Replayed: true`); the same key with another body is 409."
)

api = APIBlueprint(
    "messaging_api",
    __name__,
    url_prefix=PREFIX,
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


def _created(outcome: services.Outcome) -> Response:
    response = jsonify(outcome.body)
    response.status_code = outcome.status
    for name, value in outcome.headers.items():
        response.headers[name] = value
    return response


@api.get(
    "/contacts/addresses/<address>/service-window",
    responses={200: WindowOut},
)
def service_window(path: WindowPath, query: WindowQuery) -> dict[str, Any]:
    """Whether free text may be sent to the contact: `open` while their last message is under 24 h old."""
    return services.service_window(auth.current_organization_id(), path.address, query.organization_address)


@api.post("/messages/send-template", responses={201: MessageOut, 409: PlainError, 429: PlainError})
def send_template(path: OrgPath, body: SendTemplateIn) -> Response:
    organization_id = auth.current_organization_id()
    return _created(
        services.run_idempotent(
            organization_id,
            request.headers.get("Idempotency-Key"),
            "send-template",
            body.model_dump(mode="json"),
            lambda: services.send_template(organization_id, body),
        )
    )


send_template.__doc__ = "Send an approved WhatsApp template with named parameters." + IDEMPOTENCY_NOTE


@api.post("/messages", responses={201: MessageOut, 409: PlainError, 429: PlainError})
def send_message(path: OrgPath, body: SendMessageIn) -> Response:
    organization_id = auth.current_organization_id()
    return _created(
        services.run_idempotent(
            organization_id,
            request.headers.get("Idempotency-Key"),
            "send-message",
            body.model_dump(mode="json"),
            lambda: services.send_message(organization_id, body),
        )
    )


send_message.__doc__ = "Send free text or media inside the 24-hour service window." + IDEMPOTENCY_NOTE


@api.get("/messages/<message_id>", responses={200: MessageOut})
def get_message(path: MessagePath) -> dict[str, Any]:
    """One message."""
    return services.get_message(auth.current_organization_id(), path.message_id)


@api.get("/messages", responses={200: MessageList})
def list_messages(path: OrgPath, query: MessageListQuery) -> dict[str, Any]:
    """The latest `take` messages matching the filters, oldest first: `{data, total, skip, take}`."""
    return services.list_messages(auth.current_organization_id(), query)


@api.get("/conversations/<conversation_id>", responses={200: ConversationOut})
def get_conversation(path: ConversationPath) -> dict[str, Any]:
    """One conversation with its contact."""
    return services.get_conversation(auth.current_organization_id(), path.conversation_id)


@api.get("/contacts", responses={200: ContactList})
def list_contacts(path: OrgPath, query: ContactListQuery) -> dict[str, Any]:
    """Messaging contacts with their channel addresses: `{data, total, skip, take}`."""
    return services.list_contacts(auth.current_organization_id(), query)


@api.post("/contacts", responses={201: ContactOut, 409: PlainError})
def create_contact(path: OrgPath, body: ContactIn) -> tuple[dict[str, Any], int]:
    """Create a contact; WhatsApp addresses are stored in E.164."""
    return services.create_contact(auth.current_organization_id(), body), 201


@api.get("/contacts/<contact_id>", responses={200: ContactOut})
def get_contact(path: ContactPath) -> dict[str, Any]:
    """One contact."""
    return services.get_contact(auth.current_organization_id(), path.contact_id)


@api.patch("/contacts/<contact_id>", responses={200: ContactOut, 409: PlainError})
def update_contact(path: ContactPath, body: ContactPatch) -> dict[str, Any]:
    """Change the fields sent; `addresses`, when sent, replaces the list; `extra` is merged."""
    return services.update_contact(auth.current_organization_id(), path.contact_id, body)


@api.delete("/contacts/<contact_id>", responses={204: None, 409: PlainError})
def delete_contact(path: ContactPath) -> tuple[str, int]:
    """Delete a contact that has no conversations."""
    services.delete_contact(auth.current_organization_id(), path.contact_id)
    return "", 204
