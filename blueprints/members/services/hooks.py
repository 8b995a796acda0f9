"""Provider hooks other areas register, so this area can show conversation load and connected channels
without importing them (the messaging area owns conversations and channel connections).

Both are called once per list, never per row (``core.hooks``):

- ``active_conversation_counts``: ``fn(organization_id, member_ids) -> {member_id: count}`` of active
  (not archived, not closed) conversations assigned to each member; missing ids count 0.
- ``connected_channels``: ``fn(organization_id) -> ["whatsapp", "webchat", ...]``, the channels the
  organization has connected (an AI agent answers on all of them).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from core.hooks import hook

active_conversation_counts = hook(
    "members.active_conversation_counts",
    "fn(organization_id, member_ids) -> {member_id: active conversations}; missing ids count 0",
)
connected_channels = hook(
    "members.connected_channels",
    'fn(organization_id) -> ["whatsapp", ...]: channels the organization connected',
)


def active_conversations(organization_id: uuid.UUID, member_ids: Iterable[str]) -> dict[str, int]:
    ids = list(dict.fromkeys(member_ids))
    totals = dict.fromkeys(ids, 0)
    if ids:
        for counts in active_conversation_counts.answers(organization_id=organization_id, member_ids=ids):
            for member_id, count in (counts or {}).items():
                if member_id in totals:
                    totals[member_id] += int(count)
    return totals


def connections(organization_id: uuid.UUID) -> list[str]:
    found = connected_channels.answers(organization_id=organization_id)
    return sorted({channel for channels in found for channel in channels or ()})
