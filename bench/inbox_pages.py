"""The desk's inbox pages on a large store: the demo-sized organization plus 10,000 conversations and
200,000 messages. Measures the whole page (server-side render) and each HTMX fragment, and counts the SQL
statements of each so that a page showing more rows is seen to cost the same number of queries.

Targets (issue "desk inbox"): whole page p95 <= 100 ms, each fragment p95 <= 50 ms."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient

from bench.dataset import seed_conversations
from bench.harness import make_app, make_org, measure, statements

CONVERSATIONS = 10_000
MESSAGES = 20
HX = {"HX-Request": "true"}
PANE = {**HX, "HX-Target": "list-pane"}
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def _signed_in(app: Flask, org_id: str) -> tuple[FlaskClient, str]:
    email, password = "bench.agent@example.test", "correct horse battery"
    result = app.test_cli_runner().invoke(
        args=[
            "users",
            "create",
            "--org",
            org_id,
            "--email",
            email,
            "--password",
            password,
            "--name",
            "Bench Agent",
            "--role",
            "agent",
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    member_id = json.loads(result.output)["member_id"]
    client = app.test_client()
    token = TOKEN.search(client.get("/signin").get_data(as_text=True))
    assert token is not None
    signed = client.post("/signin", data={"email": email, "password": password, "csrf_token": token.group(1)})
    assert signed.status_code == 302, signed.status_code
    return client, member_id


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    client, member_id = _signed_in(app, org["organization_id"])
    # a tenth of the conversations are the agent's own ("Mine"), the rest spread over teammates
    members = (member_id, *(f"mem_{n}" for n in range(9)))
    ids = seed_conversations(app, organization_id, CONVERSATIONS, MESSAGES, member_ids=members)
    newest = str(ids[-1])
    print(f"{CONVERSATIONS} conversations, {CONVERSATIONS * MESSAGES} messages")

    def get(url: str, headers: dict[str, str] | None = None) -> Callable[[], object]:
        def run() -> object:
            response = client.get(url, headers=headers or {})
            assert response.status_code == 200, (url, response.status_code)
            return response

        return run

    cases = (
        ("page /inbox (tab mine)", get("/inbox")),
        ("page /inbox?tab=all", get("/inbox?tab=all")),
        ("page /inbox/c/<id> (conversation open)", get(f"/inbox/c/{newest}?tab=all")),
        ("fragment list-pane", get("/inbox?tab=all", {**HX, "HX-Target": "list-pane"})),
        ("fragment rows skip=20", get("/inbox/rows?tab=all&skip=20")),
        ("fragment rows skip=5000", get("/inbox/rows?tab=all&skip=5000")),
        # a filter changed: the list pane comes first, its tab counts in the /counts request that follows
        ("fragment list-pane label=vip", get("/inbox?tab=all&label=vip", PANE)),
        ("fragment list-pane q=Contact 99", get("/inbox?tab=all&q=Contact%2099", PANE)),
        ("fragment counts label=vip", get("/inbox/counts?tab=all&label=vip", HX)),
        ("fragment counts q=Contact 99", get("/inbox/counts?tab=all&q=Contact%2099", HX)),
        ("fragment rows label=vip skip=20", get("/inbox/rows?tab=all&label=vip&skip=20")),
        ("fragment rows q=Contact 99 skip=20", get("/inbox/rows?tab=all&q=Contact%2099&skip=20")),
        ("fragment counts", get("/inbox/counts?tab=all")),
        ("fragment row/<id>", get(f"/inbox/row/{newest}?tab=all")),
        ("fragment conversation", get(f"/inbox/c/{newest}", {**HX, "HX-Target": "conversation"})),
        ("fragment older", get(f"/inbox/c/{newest}/older?skip=10")),
        ("fragment panel", get(f"/inbox/c/{newest}/panel")),
        ("fragment composer", get(f"/inbox/c/{newest}/composer")),
    )
    for label, run in cases:
        with statements(app) as seen:
            run()
        measure(f"{label} [{len(seen)} SQL]", run, iterations=100, warmup=5)
