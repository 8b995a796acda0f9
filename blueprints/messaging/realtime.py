"""Messages also reach the Socket.IO room of their conversation (joined with ``join_conversation``).

The event goes out once to the organization's room and the conversation's room together, so a client in
both (an open inbox with an open thread) receives it once.
"""

from __future__ import annotations

from core.events import DomainEvent
from core.realtime import conversation_access, conversation_room, event_rooms

CONVERSATION_EVENTS = ("message.created", "message.updated")


def _conversation_room(*, event: DomainEvent) -> list[str]:
    conversation_id = event.data.get("conversation_id")
    if event.name in CONVERSATION_EVENTS and conversation_id:
        return [conversation_room(event.environment, conversation_id)]
    return []


def _belongs(*, organization_id: str, conversation_id: str) -> bool:
    from blueprints.messaging.services import conversation_belongs

    return conversation_belongs(organization_id, conversation_id)


def install() -> None:
    event_rooms.connect(_conversation_room)
    conversation_access.connect(_belongs)
