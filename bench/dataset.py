"""Bulk data for the benchmarks: conversations with their contacts, messages and labels, inserted in
batches (no ORM objects), shaped like the inbox's real rows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from flask import Flask
from sqlalchemy import insert

from blueprints.inbox.models import ConversationLabel
from blueprints.messaging.models import Contact, Conversation, Message
from core.db import db

BATCH = 5000


def seed_conversations(
    app: Flask,
    organization_id: uuid.UUID,
    conversations: int,
    messages: int,
    member_ids: tuple[str, ...] = tuple(f"mem_{n}" for n in range(10)),
    start: int = 0,
) -> list[uuid.UUID]:
    """``conversations`` conversations of ``messages`` messages each (every third labelled ``vip``,
    assigned round-robin to ``member_ids``); returns the conversation ids, oldest first. ``start`` numbers
    them on from an earlier call (names, numbers and times), to grow one store in steps."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ids: list[uuid.UUID] = []
    with app.app_context():
        rows: dict[type, list[dict[str, object]]] = {
            Contact: [],
            Conversation: [],
            Message: [],
            ConversationLabel: [],
        }

        def flush(force: bool = False) -> None:
            # parents before children: a full batch of messages flushes the conversations it points at
            if force or any(len(batch) >= BATCH for batch in rows.values()):
                for model, batch in rows.items():
                    if batch:
                        db.session.execute(insert(model), batch)
                        batch.clear()

        for n in range(start, start + conversations):
            contact_id, conversation_id = uuid.uuid4(), uuid.uuid4()
            ids.append(conversation_id)
            at = t0 + timedelta(minutes=n)
            rows[Contact].append(
                {
                    "id": contact_id,
                    "organization_id": organization_id,
                    "name": f"Contact {n}",
                    "extra": {},
                    "created_at": at,
                    "updated_at": at,
                }
            )
            rows[Conversation].append(
                {
                    "id": conversation_id,
                    "organization_id": organization_id,
                    "contact_id": contact_id,
                    "organization_address": "100000000000001",
                    "contact_address": f"+5255{n:08d}",
                    "service": "whatsapp",
                    "status": "active",
                    "is_broadcast": False,
                    "member_id": member_ids[n % len(member_ids)] if member_ids else None,
                    "last_message_at": at + timedelta(seconds=messages),
                    "extra": {"labels": ["vip"] if n % 3 == 0 else []},
                    "created_at": at,
                    "updated_at": at,
                }
            )
            if n % 3 == 0:
                rows[ConversationLabel].append(
                    {
                        "conversation_id": conversation_id,
                        "organization_id": organization_id,
                        "name": "vip",
                        "name_key": "vip",
                        "created_at": at,
                    }
                )
            for m in range(messages):
                rows[Message].append(
                    {
                        "id": uuid.uuid4(),
                        "organization_id": organization_id,
                        "conversation_id": conversation_id,
                        "direction": "incoming" if m % 2 == 0 else "outgoing",
                        "service": "whatsapp",
                        "organization_address": "100000000000001",
                        "contact_address": f"+5255{n:08d}",
                        "external_id": f"wamid.{n}.{m}",
                        "timestamp": at + timedelta(seconds=m),
                        "content": {"kind": "text", "text": f"message {m} of conversation {n}"},
                        "status": {},
                        "current_status": "received" if m % 2 == 0 else "read",
                        "created_at": at,
                        "updated_at": at,
                    }
                )
            flush()
        flush(force=True)
        db.session.commit()
    return ids
