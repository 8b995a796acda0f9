"""Messages also reach the Socket.IO room of their conversation (joined with ``join_conversation``).

The event goes out once to the organization's room and the conversation's room together, so a client in
both (an open inbox with an open thread) receives it once.
"""

from __future__ import annotations

from blueprints.messaging.services import conversation_belongs
from core.events import DomainEvent
from core.realtime import conversation_room

CONVERSATION_EVENTS = ("message.created", "message.updated")


def conversation_rooms(*, event: DomainEvent) -> list[str]:
    """``core.realtime.event_rooms``: the conversation's room for a message event."""
    conversation_id = event.data.get("conversation_id")
    if event.name in CONVERSATION_EVENTS and conversation_id:
        return [conversation_room(event.environment, conversation_id)]
    return []


def conversation_belongs_here(*, organization_id: str, conversation_id: str) -> bool:
    """``core.realtime.conversation_access``: whether the conversation is the organization's."""
    return conversation_belongs(organization_id, conversation_id)
