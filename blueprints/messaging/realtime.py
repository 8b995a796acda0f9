"""Messages also reach the Socket.IO room of their conversation (joined with ``join_conversation``)."""

from __future__ import annotations

from core.events import DomainEvent, subscribe
from core.realtime import add_conversation_checker, conversation_room, socketio

CONVERSATION_EVENTS = ("message.created", "message.updated")


def _to_conversation_room(event: DomainEvent) -> None:
    conversation_id = event.data.get("conversation_id")
    if conversation_id:
        socketio.emit(
            event.name, event.as_message(), to=conversation_room(event.environment, conversation_id)
        )


def _belongs(organization_id: str, conversation_id: str) -> bool:
    from blueprints.messaging.services import conversation_belongs

    return conversation_belongs(organization_id, conversation_id)


def install() -> None:
    for name in CONVERSATION_EVENTS:
        subscribe(name, _to_conversation_room)
    add_conversation_checker(_belongs)
