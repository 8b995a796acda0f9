"""The inbox's conversation list on a realistic store: 2,000 conversations with 20 messages each."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from bench.harness import make_app, make_org, measure
from blueprints.inbox.models import ConversationLabel
from blueprints.messaging.models import Contact, Conversation, Message
from core.db import db

CONVERSATIONS = 2000
MESSAGES = 20


def _seed(app, organization_id: uuid.UUID) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with app.app_context():
        contacts, conversations, messages, labels = [], [], [], []
        for n in range(CONVERSATIONS):
            contact_id, conversation_id = uuid.uuid4(), uuid.uuid4()
            at = t0 + timedelta(minutes=n)
            contacts.append(
                {
                    "id": contact_id,
                    "organization_id": organization_id,
                    "name": f"Contact {n}",
                    "extra": {},
                    "created_at": at,
                    "updated_at": at,
                }
            )
            conversations.append(
                {
                    "id": conversation_id,
                    "organization_id": organization_id,
                    "contact_id": contact_id,
                    "organization_address": "100000000000001",
                    "contact_address": f"+5255{n:08d}",
                    "service": "whatsapp",
                    "status": "active",
                    "is_broadcast": False,
                    "member_id": f"mem_{n % 10}",
                    "last_message_at": at + timedelta(seconds=MESSAGES),
                    "extra": {"labels": ["vip"] if n % 3 == 0 else []},
                    "created_at": at,
                    "updated_at": at,
                }
            )
            if n % 3 == 0:
                labels.append(
                    {
                        "conversation_id": conversation_id,
                        "organization_id": organization_id,
                        "name": "vip",
                        "name_key": "vip",
                        "created_at": at,
                    }
                )
            for m in range(MESSAGES):
                messages.append(
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
                        "content": {"kind": "text", "text": f"message {m}"},
                        "status": {},
                        "current_status": "received",
                        "created_at": at,
                        "updated_at": at,
                    }
                )
        for model, rows in (
            (Contact, contacts),
            (Conversation, conversations),
            (Message, messages),
            (ConversationLabel, labels),
        ):
            for start in range(0, len(rows), 5000):
                db.session.execute(insert(model), rows[start : start + 5000])
        db.session.commit()


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    _seed(app, organization_id)
    client = app.test_client()
    headers = {"X-API-Key": org["api_keys"]["live"]}
    base = f"/v2/messages/organizations/{organization_id}/conversations"
    print(f"{CONVERSATIONS} conversations, {CONVERSATIONS * MESSAGES} messages")
    for label, query in (
        ("take=20", "?take=20"),
        ("take=100", "?take=100"),
        ("take=20 include_messages=50", "?take=20&include_messages=50"),
        ("take=100 include_messages=50", "?take=100&include_messages=50"),
        ("labels=vip assigned_member_id=mem_3", "?labels=vip&assigned_member_id=mem_3"),
        ("search=Contact 19", "?search=Contact%2019"),
    ):
        measure(
            f"GET conversations {label}",
            lambda q=query: client.get(base + q, headers=headers),
            iterations=200,
        )
