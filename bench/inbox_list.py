"""The inbox's conversation list on a realistic store: 2,000 conversations with 20 messages each."""

from __future__ import annotations

import uuid

from bench.dataset import seed_conversations
from bench.harness import make_app, make_org, measure

CONVERSATIONS = 2000
MESSAGES = 20


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    seed_conversations(app, organization_id, CONVERSATIONS, MESSAGES)
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
