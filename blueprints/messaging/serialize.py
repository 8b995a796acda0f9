"""Messages, conversations and contacts as the API returns them."""

from __future__ import annotations

from typing import Any

from blueprints.messaging.models import Contact, Conversation, Message
from core.db import isoformat


def serialize_message(message: Message) -> dict[str, Any]:
    return {
        "id": str(message.id),
        "conversation_id": str(message.conversation_id),
        "organization_id": str(message.organization_id),
        "direction": message.direction,
        "service": message.service,
        "organization_address": message.organization_address,
        "contact_address": message.contact_address,
        "external_id": message.external_id,
        "content": message.content,
        "template_name": message.template_name,
        "template_language": message.template_language,
        "template": message.template,
        "data": message.data,
        "status": dict(message.status or {}),
        "current_status": message.current_status,
        "reply_to": message.reply_to,
        "member_id": message.member_id,
        "timestamp": isoformat(message.timestamp),
        "created_at": isoformat(message.created_at),
        "updated_at": isoformat(message.updated_at),
    }


def conversation_extra(conversation: Conversation) -> dict[str, Any]:
    stored = conversation.extra or {}
    return {
        "member_id": conversation.member_id,
        "labels": list(stored.get("labels") or []),
        "archived": isoformat(conversation.archived_at),
        "team_id": conversation.team_id,
        "team_name": stored.get("team_name"),
        "assignment": stored.get("assignment"),
        "flow_id": stored.get("flow_id"),
        "flow_member_id": stored.get("flow_member_id"),
    }


def serialize_conversation(conversation: Conversation, contact: Contact) -> dict[str, Any]:
    return {
        "id": str(conversation.id),
        "organization_id": str(conversation.organization_id),
        "contact_id": str(conversation.contact_id),
        "organization_address": conversation.organization_address,
        "contact_address": conversation.contact_address,
        "service": conversation.service,
        "status": conversation.status,
        "name": conversation.name,
        "extra": conversation_extra(conversation),
        "last_message_at": isoformat(conversation.last_message_at),
        "last_incoming_at": isoformat(conversation.last_incoming_at),
        "ai_paused_at": isoformat(conversation.ai_paused_at),
        "broadcast_id": str(conversation.broadcast_id) if conversation.broadcast_id else None,
        "is_broadcast": bool(conversation.is_broadcast),
        "created_at": isoformat(conversation.created_at),
        "updated_at": isoformat(conversation.updated_at),
        "contact": {"id": str(contact.id), "name": contact.name, "address": conversation.contact_address},
    }


def serialize_contact(contact: Contact) -> dict[str, Any]:
    return {
        "id": str(contact.id),
        "organization_id": str(contact.organization_id),
        "name": contact.name,
        "crm_contact_id": contact.crm_contact_id,
        "extra": dict(contact.extra or {}),
        "addresses": [{"service": a.service, "address": a.address} for a in contact.addresses],
        "created_at": isoformat(contact.created_at),
        "updated_at": isoformat(contact.updated_at),
    }
