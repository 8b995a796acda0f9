"""Reactions of contacts to messages, kept on the message they point to (``messages.reactions``).

WhatsApp (and Messenger/Instagram) send a reaction as its own webhook item naming the reacted message;
the person has at most one reaction per message: a new emoji replaces theirs, an empty one removes it.
Deliveries are at least once and in any order, so each reactor's entry keeps the provider's time of the
latest news, and older news is ignored. A removal stays as ``emoji: ""`` (a tombstone): without it a
reaction delivered late, after its own removal, would come back. Only entries with an emoji are shown
(:func:`visible`): the message API's ``reactions`` and the desk's thread.

A reaction is not a message: it renews neither the conversation's last message nor its service window
(the desk reopens the window only on a message the contact wrote).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from blueprints.messaging.models import Message
from core.db import isoformat
from core.timeutil import parse_iso_datetime


def visible(reactions: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The reactions to show, oldest first: one per reactor, removed ones left out."""
    shown = [dict(entry) for entry in reactions or [] if entry.get("emoji")]
    return sorted(shown, key=lambda entry: str(entry.get("at") or ""))


def apply_reaction(message: Message, reactor: str, emoji: str, at: datetime) -> bool:
    """Record ``reactor``'s reaction (``emoji``; empty: removed) at provider time ``at``. Returns whether
    what is shown changed. News older than what is stored for that reactor is ignored; news of the same
    second is taken (Meta's timestamps are seconds: a reaction changed within one second arrives in
    order far more often than not)."""
    entries = [dict(entry) for entry in message.reactions or []]
    before = visible(entries)
    for entry in entries:
        if entry.get("from") == reactor:
            stored = _instant(entry.get("at"))
            if stored is not None and at < stored:
                return False
            entry["emoji"], entry["at"] = emoji, isoformat(at)
            break
    else:
        entries.append({"emoji": emoji, "from": reactor, "at": isoformat(at)})
    if entries != [dict(entry) for entry in message.reactions or []]:
        message.reactions = entries  # a new list: the JSON column sees the change
    return visible(entries) != before


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_iso_datetime(value)
    except ValueError:
        return None
