"""Builders for reaction items of Meta's webhooks (meta.md §3.5; Messenger's ``message_reactions``).

WhatsApp: a ``messages`` item of ``type: "reaction"`` with ``reaction: {message_id, emoji}``; an empty
emoji removes the reaction. Messenger / Instagram: a ``messaging`` item with ``reaction: {mid, action:
react|unreact, reaction, emoji}``. Wrap them with ``wa_change`` / ``messaging_delivery``.
"""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.meta_webhooks import now_seconds, wamid


def wa_reaction(
    sender: str, message_id: str, emoji: str, *, timestamp: str | None = None, id: str | None = None
) -> dict[str, Any]:
    return {
        "from": sender,
        "id": id or wamid(),
        "timestamp": timestamp or now_seconds(),
        "type": "reaction",
        "reaction": {"message_id": message_id, "emoji": emoji},
    }


def messaging_reaction(
    page_id: str, sender: str, mid: str, emoji: str, *, action: str = "react", timestamp_ms: int | None = None
) -> dict[str, Any]:
    reaction: dict[str, Any] = {"mid": mid, "action": action}
    if action == "react":
        reaction |= {"reaction": "other", "emoji": emoji}
    return {
        "sender": {"id": sender},
        "recipient": {"id": page_id},
        "timestamp": timestamp_ms or int(time.time() * 1000),
        "reaction": reaction,
    }
