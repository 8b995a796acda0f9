"""Read models of the inbox area's pages (joins for a page, no writes): a broadcast's progress as the desk
shows it, each recipient with what became of its message (sent, delivered, read, failed)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from blueprints.channels.services import get_address
from blueprints.inbox.models import Broadcast, BroadcastRecipient
from blueprints.inbox.services import broadcasts
from blueprints.messaging.models import Message
from core.db import db

# What a recipient's row says, furthest first: the message's own status once it was sent.
DELIVERED = ("delivered", "read")


@dataclass(frozen=True)
class RecipientProgress:
    recipient: BroadcastRecipient
    shown: str  # queued, sending, sent, delivered, read, failed, unknown, canceled
    error: str | None


@dataclass(frozen=True)
class Progress:
    broadcast: Broadcast
    recipients: list[RecipientProgress]
    counts: dict[str, int]  # total, queued, sent, delivered, read, failed, canceled, unknown
    number: str  # the sending number as people write it (the provider's id when it has none)

    @property
    def done(self) -> int:
        return self.counts["sent"] + self.counts["failed"] + self.counts["canceled"] + self.counts["unknown"]


def _shown(recipient: BroadcastRecipient, status: str | None) -> str:
    if recipient.state == "sent" and status in ("delivered", "read", "failed"):
        return status
    return recipient.state


def _error_text(recipient: BroadcastRecipient, message_error: object) -> str | None:
    for error in (recipient.error, message_error):
        if isinstance(error, dict) and (error.get("message") or error.get("title")):
            return str(error.get("message") or error.get("title"))[:300]
    return None


def broadcast_progress(organization_id: uuid.UUID, broadcast_id: str) -> Progress:
    """The broadcast (404 ``ApiError`` for another organization's), its recipients in order, their
    messages' statuses and the sending number: five queries whatever the number of recipients (the
    broadcast, its counts, the recipients, their messages, the address)."""
    report = broadcasts.get_broadcast(organization_id, broadcast_id)
    recipients = report.recipients or []
    ids = [uuid.UUID(r.message_id) for r in recipients if r.message_id]
    statuses: dict[str, tuple[str, object]] = {}
    if ids:
        rows = db.session.execute(
            select(Message.id, Message.current_status, Message.status).where(
                Message.organization_id == organization_id, Message.id.in_(ids)
            )
        )
        for message_id, current, status in rows:
            statuses[str(message_id)] = (current, status.get("error") if isinstance(status, dict) else None)
    shown = []
    counts = dict.fromkeys(
        ("total", "queued", "sending", "sent", "delivered", "read", "failed", "canceled", "unknown"), 0
    )
    for recipient in recipients:
        current, message_error = statuses.get(recipient.message_id or "", (None, None))
        state = _shown(recipient, current)
        shown.append(RecipientProgress(recipient, state, _error_text(recipient, message_error)))
        counts["total"] += 1
        if state in ("sent", "delivered", "read"):
            counts["sent"] += 1
        if state in DELIVERED:
            counts["delivered"] += 1
        if state == "read":
            counts["read"] += 1
        if state in ("failed", "queued", "sending", "canceled", "unknown"):
            counts[state] += 1
    address = get_address(organization_id, report.broadcast.organization_address)
    number = (address.extra or {}).get("phone_number") if address is not None else None
    return Progress(report.broadcast, shown, counts, number or report.broadcast.organization_address)
