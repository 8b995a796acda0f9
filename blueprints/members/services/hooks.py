"""Provider hooks other areas register, so this area can show conversation load and connected channels
without importing them (the messaging area owns conversations and channel connections).

Both are called once per list, never per row:

- ``register_active_conversation_counter(fn)``: ``fn(organization_id, member_ids) -> {member_id: count}``
  of active (not archived, not closed) conversations assigned to each member; missing ids count 0.
- ``register_connections_provider(fn)``: ``fn(organization_id) -> ["whatsapp", "webchat", ...]``, the
  channels the organization has connected (an AI agent answers on all of them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

ConversationCounter = Callable[[uuid.UUID, list[str]], dict[str, int]]
ConnectionsProvider = Callable[[uuid.UUID], list[str]]

_counter: ConversationCounter | None = None
_connections: ConnectionsProvider | None = None


def register_active_conversation_counter(fn: ConversationCounter | None) -> None:
    """Install (or with ``None`` remove) the counter of active conversations per member."""
    global _counter
    _counter = fn


def register_connections_provider(fn: ConnectionsProvider | None) -> None:
    """Install (or with ``None`` remove) the provider of the organization's connected channels."""
    global _connections
    _connections = fn


def active_conversations(organization_id: uuid.UUID, member_ids: Iterable[str]) -> dict[str, int]:
    ids = list(dict.fromkeys(member_ids))
    counts = _counter(organization_id, ids) if (_counter and ids) else {}
    return {member_id: int(counts.get(member_id, 0)) for member_id in ids}


def connections(organization_id: uuid.UUID) -> list[str]:
    return sorted(set(_connections(organization_id))) if _connections else []
