"""The inbox's conversation list and the message list.

Without settings: a throwaway store with 2,000 conversations of 20 messages each. With
``BENCH_SCALE_DATABASE_URL`` (a live store where ``flask --app app demo seed --scale N`` generated Scale
Co): that organization's year of traffic, as the issue measures it (``take=20&include_messages=5``), plus
search, the label filter, deep pages by offset and by cursor, and the message list. For example::

    BENCH_SCALE_DATABASE_URL=sqlite:////tmp/s/live.db .venv/bin/python -m bench inbox_list
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask

from app import create_app
from bench.dataset import seed_conversations
from bench.harness import make_app, make_org, measure

CONVERSATIONS = 2000
MESSAGES = 20
SCALE_ORGANIZATION_ID = "5ca1e000-0c00-4000-8000-000000000042"
# The target for the conversation list at a year of traffic (p95, 1M messages).
TARGET = "target p95 <= 50 ms, growth <= x1.3 from 10k to 100k conversations"

SCALE_CASES = (
    ("take=20 include_messages=5 (issue's figure)", "?take=20&include_messages=5"),
    ("take=100", "?take=100"),
    ("status=active", "?status=active&take=20"),
    ("assigned_member_id (one agent)", "?assigned_member_id={member}&take=20"),
    ("labels=vip", "?labels=vip&take=20"),
    ("labels=vip,queja status=active", "?labels=vip,queja&status=active&take=20"),
    ("search=Hernández (common name)", "?search=Hern%C3%A1ndez&take=20"),
    ("search=5590 (address digits)", "?search=5590&take=20"),
    ("search=zzq (nothing)", "?search=zzq&take=20"),
    ("search=Lu (2 chars: no index)", "?search=Lu&take=20"),
    ("skip=5000 (deep page by offset)", "?skip=5000&take=20"),
)


def main() -> None:
    store = os.environ.get("BENCH_SCALE_DATABASE_URL")
    if store:
        _scale(store)
        return
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


def _scale_app(store: str) -> Flask:
    tmp = Path(tempfile.mkdtemp(prefix="agentdesk-bench-"))
    sandbox = os.environ.get("BENCH_SCALE_SANDBOX_DATABASE_URL", f"sqlite:///{tmp / 'sandbox.db'}")
    app = create_app(
        {
            "INSTANCE_PATH": str(tmp),
            "DATABASE_URL": store,
            "SANDBOX_DATABASE_URL": sandbox,
            "JOBS_MODE": "inline",
            "REDIS_URL": None,
            "DEMO_LIVE_MESSAGES": 0,
        }
    )
    result = app.test_cli_runner().invoke(args=["setup"])  # the migrations of this tree, if newer
    assert result.exit_code == 0, result.output
    return app


def _scale(store: str) -> None:
    app = _scale_app(store)
    runner = app.test_cli_runner()
    created = runner.invoke(
        args=["keys", "create", "--org", SCALE_ORGANIZATION_ID, "--env", "live", "--json"]
    )
    assert created.exit_code == 0, created.output
    headers = {"X-API-Key": json.loads(created.output)["api_key"]}
    client = app.test_client()
    base = f"/v2/messages/organizations/{SCALE_ORGANIZATION_ID}"
    first = client.get(f"{base}/conversations?take=1&assigned_member_id=x", headers=headers)
    assert first.status_code == 200, first.get_data(as_text=True)
    member = _a_member(client, base, headers)
    app_store = store.split("://")[0]
    conversations = client.get(f"{base}/conversations?take=1", headers=headers)
    total = conversations.get_json()["total"]
    if conversations.headers.get("X-Total-Relation") == "gte":  # counted up to the cap only
        with app.app_context():
            total = _count_scale_conversations()
    print(f"Scale Co on {app_store}: {total:,} conversations ({TARGET})")
    iterations = int(os.environ.get("BENCH_ITERATIONS", "100"))
    for label, query in SCALE_CASES:
        url = f"{base}/conversations" + query.format(member=member)
        measure(f"conversations {label}", _get(client, url, headers), iterations=iterations, warmup=10)
    _cursor_walk(client, f"{base}/conversations?take=20", headers, iterations)
    conversation = client.get(f"{base}/conversations?take=1", headers=headers).get_json()["data"][0]["id"]
    for label, query in (
        ("messages of one conversation take=20", f"?conversation_id={conversation}&take=20"),
        ("messages of the organization take=20", "?take=20"),
        ("messages skip=50000 (deep page by offset)", "?skip=50000&take=20"),
    ):
        measure(label, _get(client, f"{base}/messages{query}", headers), iterations=iterations, warmup=10)
    _cursor_walk(client, f"{base}/messages?take=20", headers, iterations, label="messages")


def _count_scale_conversations() -> int:
    from sqlalchemy import func, select

    from blueprints.messaging.models import Conversation
    from core.db import db

    statement = select(func.count()).where(Conversation.organization_id == uuid.UUID(SCALE_ORGANIZATION_ID))
    return int(db.session.scalar(statement) or 0)


def _get(client: Any, url: str, headers: dict[str, str]) -> Callable[[], object]:
    def call() -> object:
        response = client.get(url, headers=headers)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response

    return call


def _a_member(client: Any, base: str, headers: dict[str, str]) -> str:
    page = client.get(f"{base}/conversations?take=50", headers=headers).get_json()["data"]
    members = [c["extra"].get("member_id") for c in page if c["extra"].get("member_id")]
    return members[0] if members else "nobody"


def _cursor_walk(
    client: Any, url: str, headers: dict[str, str], iterations: int, label: str = "conversations"
) -> None:
    """A page 250 pages deep reached by cursor: the same cost as the first page if keyset works."""
    first = client.get(url + "&cursor=", headers=headers)
    if first.status_code != 200 or "next_cursor" not in (first.get_json() or {}):
        print(f"{label} cursor: not offered by this tree")
        return
    cursor = first.get_json()["next_cursor"]
    for _ in range(249):
        body = client.get(f"{url}&cursor={cursor}", headers=headers).get_json()
        cursor = body["next_cursor"] or cursor
    measure(
        f"{label} page 250 by cursor", _get(client, f"{url}&cursor={cursor}", headers), iterations=iterations
    )
