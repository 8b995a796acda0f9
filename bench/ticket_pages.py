"""The ticket board and the ticket drawer on a large store: 50,000 tickets of one organization over a
year and a half (most of them closed long ago, as a support team's history is), seven in ten naming one of
2,000 customers, bulk inserted, each with its creation in the state history and one with tasks and a
linked conversation.

Measures, with the test client (server-side render, one thread), the board, its filtered forms, a
column's next cards, the list view, a card for a live update, the drawer, and prints each one's SQL
statements, which do not grow with the number of cards: the board is a fixed set of queries (the grouped
count, one UNION ALL for every column's first cards, the shown tickets' customers, members, projects and
types) whatever it shows.

Targets (issue "ticket board"): the board p95 <= 300 ms with 50,000 tickets, the drawer p95 <= 50 ms.
Run: ``.venv/bin/python -m bench.ticket_pages`` (``BENCH_DATABASE_URL`` for PostgreSQL)."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import insert

from bench.harness import make_app, make_org, measure, statements
from blueprints.crm.models import (
    CrmContact,
    CrmProject,
    CrmSettings,
    CrmTask,
    Ticket,
    TicketConversation,
    TicketStateChange,
    TicketType,
)
from core.db import db

TICKETS = 50_000
CONTACTS = 2000
BATCH = 5000
HX = {"HX-Request": "true"}
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
MORE = re.compile(r'hx-get="(/tickets/column/new\?[^"]+)"')
BOARD_TARGET_MS = 300.0
DRAWER_TARGET_MS = 50.0
# (state, share): a year and a half of support: most tickets closed, a working set open.
STATES = (
    ("closed", 0.86),
    ("new", 0.03),
    ("waiting_on_agent", 0.04),
    ("waiting_on_customer", 0.05),
    ("on_hold", 0.02),
)
PRIORITIES = (("normal", 0.6), ("high", 0.2), ("low", 0.15), ("urgent", 0.05))
WORDS = (
    "Sin señal en",
    "Factura duplicada de",
    "Portabilidad detenida para",
    "eSIM no activa en",
    "Cambio de plan de",
    "Reembolso de recarga en",
    "Aclaración de cargo en",
)
PLACES = ("Puebla", "Monterrey", "Guadalajara", "Mérida", "Querétaro", "León", "Tijuana", "Oaxaca")


def _signed_in(app: Flask, org_id: str) -> tuple[FlaskClient, list[str]]:
    """A desk agent's client, and the member ids of five agents (the first is the signed-in one)."""
    members = []
    for n in range(5):
        email = f"bench.agent{n}@example.test"
        result = app.test_cli_runner().invoke(
            args=[
                *("users", "create", "--org", org_id, "--email", email),
                *("--password", "correct horse battery", "--name", f"Agente {n}", "--json"),
            ]
        )
        assert result.exit_code == 0, result.output
        members.append(json.loads(result.output)["member_id"])
    client = app.test_client()
    token = TOKEN.search(client.get("/signin").get_data(as_text=True))
    assert token is not None
    form = {
        "email": "bench.agent0@example.test",
        "password": "correct horse battery",
        "csrf_token": token.group(1),
    }
    assert client.post("/signin", data=form).status_code == 302
    return client, members


def seed_tickets(app: Flask, organization_id: uuid.UUID, members: list[str]) -> list[uuid.UUID]:
    """``TICKETS`` tickets with their creation in the history; returns the ids of the open ones."""
    rng = random.Random(7)
    now = datetime.now(UTC)
    start = now - timedelta(days=540)
    span = int((now - start).total_seconds())
    states, state_weights = zip(*STATES, strict=True)
    priorities, priority_weights = zip(*PRIORITIES, strict=True)
    open_ids: list[uuid.UUID] = []
    with app.app_context():
        kinds = [uuid.uuid4() for _ in range(4)]
        projects = [uuid.uuid4() for _ in range(3)]
        db.session.execute(
            insert(TicketType),
            [
                {
                    "id": k,
                    "organization_id": organization_id,
                    "name": f"Tipo {n}",
                    "created_at": now,
                    "updated_at": now,
                }
                for n, k in enumerate(kinds)
            ],
        )
        db.session.execute(
            insert(CrmProject),
            [
                {
                    "id": p,
                    "organization_id": organization_id,
                    "name": f"Proyecto {n}",
                    "created_at": now,
                    "updated_at": now,
                }
                for n, p in enumerate(projects)
            ],
        )
        db.session.execute(
            insert(CrmSettings),
            [
                {
                    "organization_id": organization_id,
                    "ticket_counter": TICKETS,
                    "created_at": now,
                    "updated_at": now,
                }
            ],
        )
        # 2,000 customers; seven tickets in ten name the one who asked
        customers = [uuid.uuid4() for _ in range(CONTACTS)]
        db.session.execute(
            insert(CrmContact),
            [
                {
                    "id": c,
                    "organization_id": organization_id,
                    "name": f"Cliente {n} {rng.choice(PLACES)}",
                    "created_at": now,
                    "updated_at": now,
                }
                for n, c in enumerate(customers)
            ],
        )
        tickets: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        # creation times in order, so that numbers grow with them as the counter makes them
        moments = sorted(start + timedelta(seconds=rng.randrange(span)) for _ in range(TICKETS))
        for number, created in enumerate(moments, start=1):
            ticket_id = uuid.uuid4()
            state = rng.choices(states, state_weights)[0]
            if created > now - timedelta(days=20) and state == "closed" and rng.random() < 0.5:
                state = rng.choice(states[1:])  # recent tickets are still open more often
            closed_at = None
            if state == "closed":
                closed_at = min(now, created + timedelta(hours=rng.randrange(1, 24 * 10)))
            else:
                open_ids.append(ticket_id)
            tickets.append(
                {
                    "id": ticket_id,
                    "organization_id": organization_id,
                    "number": number,
                    "reference": f"TCK-{number}",
                    "title": f"{rng.choice(WORDS)} {rng.choice(PLACES)} ({number})",
                    "state": state,
                    "priority": rng.choices(priorities, priority_weights)[0],
                    "source": "channel",
                    "body_html": "<p>El cliente escribió por WhatsApp.</p>",
                    "assignee_member_id": rng.choice(members) if rng.random() < 0.8 else None,
                    "requester_id": rng.choice(customers) if rng.random() < 0.7 else None,
                    "ticket_type_id": rng.choice(kinds) if rng.random() < 0.7 else None,
                    "project_id": rng.choice(projects) if rng.random() < 0.3 else None,
                    "channel": "whatsapp",
                    "closed_at": closed_at,
                    "created_at": created,
                    "updated_at": closed_at or created,
                }
            )
            history.append(
                {
                    "id": uuid.uuid4(),
                    "ticket_id": ticket_id,
                    "from_state": None,
                    "to_state": "new",
                    "changed_by": "api_key:sk_live_bench",
                    "changed_at": created,
                }
            )
            if state != "new":
                history.append(
                    {
                        "id": uuid.uuid4(),
                        "ticket_id": ticket_id,
                        "from_state": "new",
                        "to_state": state,
                        "changed_by": "api_key:sk_live_bench",
                        "changed_at": closed_at or created + timedelta(hours=1),
                    }
                )
            if len(tickets) >= BATCH:
                db.session.execute(insert(Ticket), tickets)
                db.session.execute(insert(TicketStateChange), history)
                tickets.clear()
                history.clear()
        if tickets:
            db.session.execute(insert(Ticket), tickets)
            db.session.execute(insert(TicketStateChange), history)
        # the newest open ticket (the one the drawer opens) has tasks and conversations like a busy one
        newest = open_ids[-1]
        db.session.execute(
            insert(TicketConversation),
            [
                {
                    "id": uuid.uuid4(),
                    "ticket_id": newest,
                    "conversation_id": str(uuid.uuid4()),
                    "created_at": now,
                }
            ],
        )
        db.session.execute(
            insert(CrmTask),
            [
                {
                    "id": uuid.uuid4(),
                    "organization_id": organization_id,
                    "title": f"Seguimiento {n}",
                    "type": "call",
                    "status": "pending" if n % 2 else "completed",
                    "priority": "normal",
                    "ticket_id": newest,
                    "owner_id": members[0],
                    "due_date": now + timedelta(days=n),
                    "created_at": now,
                    "updated_at": now,
                }
                for n in range(8)
            ],
        )
        db.session.commit()
    return open_ids


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    client, members = _signed_in(app, org["organization_id"])
    open_ids = seed_tickets(app, organization_id, members)
    newest = str(open_ids[-1])
    print(f"{TICKETS} tickets ({len(open_ids)} open), 5 agents")

    def get(url: str, headers: dict[str, str] | None = None) -> Callable[[], object]:
        def run() -> object:
            response = client.get(url, headers=headers or {})
            assert response.status_code == 200, (url, response.status_code)
            return response

        return run

    board = client.get("/tickets").get_data(as_text=True)
    more = MORE.search(board)
    assert more is not None
    next_cards = more.group(1).replace("&amp;", "&")
    cases = (
        (f"page /tickets (the board)  target p95 <= {BOARD_TARGET_MS:.0f} ms", get("/tickets")),
        (
            "fragment board, filter priority=urgent",
            get("/tickets?priority=urgent", {**HX, "HX-Target": "ticket-view"}),
        ),
        (
            "fragment board, filter assignee",
            get(f"/tickets?assignee={members[1]}", {**HX, "HX-Target": "ticket-view"}),
        ),
        (
            "fragment board, search q=Monterrey",
            get("/tickets?q=Monterrey", {**HX, "HX-Target": "ticket-view"}),
        ),
        ("fragment column new, next 50", get(next_cards)),
        ("page /tickets?view=list", get("/tickets?view=list")),
        ("fragment heads (live counts)", get("/tickets/heads", HX)),
        ("fragment card/<id> (live update)", get(f"/tickets/{newest}/card", HX)),
        (
            f"fragment drawer /tickets/<id>  target p95 <= {DRAWER_TARGET_MS:.0f} ms",
            get(f"/tickets/{newest}", HX),
        ),
        ("page /tickets/<id>", get(f"/tickets/{newest}")),
    )
    for label, run in cases:
        with statements(app) as seen:
            run()
        measure(f"{label} [{len(seen)} SQL]", run, iterations=100, warmup=5)


if __name__ == "__main__":
    main()
