"""The ticket board and the ticket drawer without a browser: columns by state with exact counts (the
closed column's window), filters, the list view, moving a card through the state verb (history kept,
seen through the API), a column's "load more", live card answers, the drawer's fields with their
refusals, tasks, both languages, tenancy, events and a flat statement count."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import update

from blueprints.crm.models import Ticket
from blueprints.crm.services.tickets import TicketFilters, board_cards
from core import events
from core.db import db
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.support.desk_users import create_desk_user, sign_in
from tests.support.plans import captured_statements, query_plan

HX = {"HX-Request": "true"}
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
CARD = re.compile(r'<li class="board-card[^"]*"[^>]*data-card-id="([0-9a-f-]+)"')


class Desk:
    """A signed-in agent's browser without the browser."""

    def __init__(self, client: FlaskClient, member_id: str, prefix: str = "") -> None:
        self.client = client
        self.member_id = member_id
        self.prefix = prefix
        page = client.get(f"{prefix}/desk").get_data(as_text=True)
        found = CSRF.search(page)
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
        return self.client.get(f"{self.prefix}{path}", query_string=params or None, headers=headers or {})

    def post(self, path: str, data: dict[str, str], language: str | None = None, **params: Any) -> Any:
        headers = {**HX, "X-CSRFToken": self.csrf}
        if language:
            headers["Accept-Language"] = language
        return self.client.post(f"{self.prefix}{path}", data=data, headers=headers, query_string=params)


def _sign_in(app: Flask, runner: FlaskCliRunner, org: Org, name: str = "Ana Agent") -> Desk:
    email = f"{name.split()[0].lower()}.{org.id[:6]}@example.test"
    member_id = create_desk_user(runner, org.id, email, name=name)["member_id"]
    client = app.test_client()
    sign_in(client, email)
    return Desk(client, member_id)


@pytest.fixture
def agent(wired: None, app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return _sign_in(app, runner, org)


def _text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def _column(html: str, state: str) -> str:
    """The HTML of one column of the board."""
    start = html.index(f'data-state="{state}"')
    end = html.find("</section>", start)
    return html[start:end]


def _cards(html: str, state: str) -> list[str]:
    return CARD.findall(_column(html, state))


def _count(html: str, state: str) -> int:
    head = re.search(rf'id="board-head-{state}".*?data-count="(\d+)"', html, re.S)
    assert head is not None, state
    return int(head.group(1))


def _age(app: Flask, ticket_id: str, **columns: Any) -> None:
    """Rewrite a ticket's times (an old ticket, one closed long ago)."""
    with app.app_context():
        db.session.execute(update(Ticket).where(Ticket.id == uuid.UUID(ticket_id)).values(**columns))
        db.session.commit()


# ---- the board ----------------------------------------------------------------------------------------


def test_the_board_has_a_column_per_state_with_exact_counts(agent: Desk, crm: Crm) -> None:
    made = [crm.ticket(title=f"Ticket {n}") for n in range(4)]
    crm.ok(crm.patch(f"/tickets/{made[0]['id']}/state", {"state": "waiting_on_customer"}))
    crm.ok(crm.patch(f"/tickets/{made[1]['id']}/state", {"state": "closed"}))
    page = agent.get("/tickets")
    assert page.status_code == 200
    html = _text(page)
    for state in ("new", "waiting_on_agent", "waiting_on_customer", "on_hold", "closed"):
        assert f'data-state="{state}"' in html
    assert set(_cards(html, "new")) == {made[2]["id"], made[3]["id"]}
    assert _cards(html, "waiting_on_customer") == [made[0]["id"]]
    assert _cards(html, "closed") == [made[1]["id"]]
    assert [
        _count(html, s) for s in ("new", "waiting_on_agent", "waiting_on_customer", "on_hold", "closed")
    ] == [
        2,
        0,
        1,
        0,
        1,
    ]
    assert f'data-ticket-id="{made[0]["id"]}"' in html
    assert 'aria-current="page"' in html and 'data-nav="tickets"' in html  # the rail marks the page


def test_the_closed_column_shows_the_last_30_days_with_the_full_count(
    app: Flask, agent: Desk, crm: Crm
) -> None:
    recent, old = crm.ticket(title="Closed lately"), crm.ticket(title="Closed long ago")
    for ticket in (recent, old):
        crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "closed"}))
    _age(app, old["id"], closed_at=datetime.now(UTC) - timedelta(days=45))
    html = _text(agent.get("/tickets"))
    assert _cards(html, "closed") == [recent["id"]]
    assert _count(html, "closed") == 1
    assert 'data-closed-total="2"' in html
    assert "Closed in the last 30 days · 2 closed in all" in html


def test_cards_and_rows_name_the_customer_who_asked(agent: Desk, crm: Crm) -> None:
    customer = crm.contact(name="Jorge Villaseñor")
    crm.ticket(title="Con solicitante", requester_id=customer["id"])
    assert "Jorge Villaseñor" in _text(agent.get("/tickets"))
    assert "Jorge Villaseñor" in _text(agent.get("/tickets", view="list"))


def test_filters_narrow_the_board_and_the_list(agent: Desk, crm: Crm) -> None:
    project = crm.ok(crm.post("/projects", {"name": "Portabilidad"}), 201)
    kind = crm.ok(crm.post("/ticket-types", {"name": "Facturación"}), 201)
    urgent = crm.ticket(title="Sin señal en Puebla", priority="urgent", assignee_member_id=agent.member_id)
    billed = crm.ticket(title="Factura duplicada", ticket_type_id=kind["id"], project_id=project["id"])
    plain = crm.ticket(title="Cambio de plan")
    ids = {t["id"] for t in (urgent, billed, plain)}

    def shown(**params: str) -> set[str]:
        return set(CARD.findall(_text(agent.get("/tickets", **params)))) & ids

    assert shown() == ids
    assert shown(priority="urgent") == {urgent["id"]}
    assert shown(assignee=agent.member_id) == {urgent["id"]}
    assert shown(assignee="none") == {billed["id"], plain["id"]}
    assert shown(type=kind["id"]) == {billed["id"]}
    assert shown(project=project["id"]) == {billed["id"]}
    assert shown(q="factura") == {billed["id"]}
    assert shown(q=billed["reference"]) == {billed["id"]}
    today = datetime.now(UTC).date()
    assert shown(created_after=(today + timedelta(days=2)).isoformat()) == set()
    assert shown(created_before=(today + timedelta(days=2)).isoformat()) == ids
    listed = _text(agent.get("/tickets", view="list", priority="urgent"))
    assert (
        "data-ticket-list" in listed and "Sin señal en Puebla" in listed and "Factura duplicada" not in listed
    )
    # the filter form swaps the view alone (with the view switch out of band)
    pane = _text(agent.get("/tickets", headers={**HX, "HX-Target": "ticket-view"}, priority="urgent"))
    assert "<html" not in pane and 'id="ticket-view-switch" hx-swap-oob="true"' in pane


def test_an_inverted_created_range_is_explained_by_the_form(agent: Desk, crm: Crm) -> None:
    crm.ticket(title="Sigue visible")
    page = agent.get("/tickets", created_after="2026-03-10", created_before="2026-03-01")
    assert page.status_code == 200
    html = _text(page)
    assert "data-filter-errors" in html and "The start is later than the end." in html
    assert "Sigue visible" in html


def test_moving_a_card_changes_the_state_through_the_verb_and_keeps_history(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="Mover a cerrado")
    answer = agent.post(f"/tickets/{ticket['id']}/move", {"to": "closed"})
    assert answer.status_code == 200
    html = _text(answer)
    assert f'data-card-id="{ticket["id"]}"' in html and 'data-in="closed"' in html
    assert 'id="board-head-closed" hx-swap-oob="true"' in html and _count(html, "closed") == 1
    assert _count(html, "new") == 0
    fetched = crm.ok(crm.get(f"/tickets/{ticket['id']}"))
    assert fetched["state"] == "closed" and fetched["closed_at"]
    history = crm.ok(crm.get(f"/tickets/{ticket['id']}/history"))["data"]
    assert [(h["from_state"], h["to_state"]) for h in history] == [(None, "new"), ("new", "closed")]
    assert history[-1]["changed_by"].startswith("user:")


def test_a_refused_move_is_an_alert_and_changes_nothing(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="No se mueve")
    answer = agent.post(f"/tickets/{ticket['id']}/move", {"to": "resolved"})
    assert answer.status_code == 422
    assert "Choose an option from the list." in _text(answer)
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["state"] == "new"


def test_a_column_loads_the_next_fifty_after_its_cursor(agent: Desk, crm: Crm) -> None:
    made = [crm.ticket(title=f"Ticket {n:03d}")["id"] for n in range(57)]
    html = _text(agent.get("/tickets"))
    first = _cards(html, "new")
    assert first == list(reversed(made))[:50]
    assert _count(html, "new") == 57
    more = re.search(r'hx-get="(/tickets/column/new\?[^"]+)"', html)
    assert more is not None
    rest = _text(agent.get(more.group(1).replace("&amp;", "&")))
    assert CARD.findall(rest) == list(reversed(made))[50:]
    assert "/tickets/column/new" not in rest  # nothing left to load


def test_a_card_answers_for_a_live_update_or_nothing_when_the_board_no_longer_shows_it(
    agent: Desk, crm: Crm
) -> None:
    ticket = crm.ticket(title="Cambia en otra pestaña", priority="high")
    crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "on_hold"}))
    card = _text(agent.get(f"/tickets/{ticket['id']}/card", headers=HX))
    assert 'data-in="on_hold"' in card and _count(card, "on_hold") == 1
    gone = _text(agent.get(f"/tickets/{ticket['id']}/card", headers=HX, priority="low"))
    assert "board-card" not in gone and 'id="board-head-new"' in gone


def test_the_heads_answer_the_counts_out_of_band(agent: Desk, crm: Crm) -> None:
    crm.ticket(title="Uno", priority="urgent")
    crm.ticket(title="Dos")
    heads = _text(agent.get("/tickets/heads", headers=HX, priority="urgent"))
    assert heads.count('class="board-column-head"') == 5 and _count(heads, "new") == 1
    assert "board-card" not in heads


def test_the_heads_tell_of_tickets_others_created_since_the_board_was_shown(agent: Desk, crm: Crm) -> None:
    # The board itself no longer asks with ``since`` (tickets created elsewhere join it live: desk.js asks
    # for their cards); the heads still count them for a caller that does.
    html = _text(agent.get("/tickets"))
    live = re.search(r'data-heads-url="(/tickets/heads[^"]*)"', html)
    assert live is not None
    url = f"{live.group(1)}?since={datetime.now(UTC).isoformat()}".replace("+", "%2B")
    assert "data-news" not in _text(agent.get(url, headers=HX))
    crm.ticket(title="Llegó por la API")  # someone else's
    agent.post("/tickets", {"title": "Mío", "board": ""})  # the agent's own is on the board already
    news = _text(agent.get(url, headers=HX))
    assert 'data-news="1"' in news and "New tickets since the board was shown: 1" in news


def test_a_new_ticket_from_the_board_joins_the_new_column(agent: Desk, crm: Crm) -> None:
    answer = agent.post(
        "/tickets",
        {"title": "Reembolso pendiente", "description": "Línea 1\nLínea 2", "priority": "high", "board": ""},
    )
    assert answer.status_code == 200, _text(answer)
    html = _text(answer)
    [found] = crm.ok(crm.get("/tickets", search="Reembolso"))["data"]
    assert found["priority"] == "high" and found["source"] == "manual"
    assert found["body_html"] == "<p>Línea 1<br>Línea 2</p>"
    assert 'hx-swap-oob="afterbegin:#board-cards-new"' in html and found["id"] in html
    assert f"Ticket {found['reference']} created." in html


def test_a_refused_new_ticket_keeps_what_was_typed_under_its_field(agent: Desk, crm: Crm) -> None:
    answer = agent.post("/tickets", {"title": "  ", "description": "Algo", "board": ""}, language="es")
    assert answer.status_code == 422
    html = _text(answer)
    assert 'data-error-for="title"' in html and "Completa este campo." in html
    assert "Algo" in html
    assert crm.ok(crm.get("/tickets"))["total"] == 0


# ---- the drawer ---------------------------------------------------------------------------------------


def test_the_drawer_is_a_fragment_over_the_board_and_a_page_when_loaded(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(
        title="Portabilidad detenida",
        body_html='<p>El cliente <b>espera</b><script>alert(1)</script><a href="javascript:x()">x</a></p>',
        conversation_ids=[],
    )
    fragment = _text(agent.get(f"/tickets/{ticket['id']}", headers=HX))
    assert "<html" not in fragment and 'id="ticket-drawer-title"' in fragment
    assert "<b>espera</b>" in fragment and "<script>" not in fragment and "javascript:" not in fragment
    page = _text(agent.get(f"/tickets/{ticket['id']}"))
    assert "<html" in page and "Portabilidad detenida" in page and "Ticket board" in page


def test_the_drawer_shows_history_assignment_and_linked_conversations(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="Con historia", conversation_ids=[])
    crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "waiting_on_customer"}))
    answer = agent.post(f"/tickets/{ticket['id']}/edit", {"field": "assignee", "value": agent.member_id})
    assert answer.status_code == 200
    html = _text(answer)
    assert f'<option value="{agent.member_id}" selected>Ana Agent</option>' in html
    assert "by Ana Agent" in html
    assert html.count("data-history-to=") == 2 and "New → Waiting on customer" in html
    assert "API key" in html  # the API's change is told by its key
    fetched = crm.ok(crm.get(f"/tickets/{ticket['id']}"))
    assert fetched["assignee_member_id"] == agent.member_id and fetched["assigned_by"] == agent.member_id


@pytest.mark.parametrize(
    ("field", "value", "wire", "expected"),
    [
        ("title", "Título nuevo", "title", "Título nuevo"),
        ("priority", "urgent", "priority", "urgent"),
        ("state", "on_hold", "state", "on_hold"),
        ("channel", "whatsapp", "channel", "whatsapp"),
        ("description", "Uno\n\nDos", "body_html", "<p>Uno</p><p>Dos</p>"),
    ],
)
def test_every_field_is_edited_in_place(
    agent: Desk, crm: Crm, field: str, value: str, wire: str, expected: str
) -> None:
    ticket = crm.ticket(title="Editable")
    answer = agent.post(f"/tickets/{ticket['id']}/edit", {"field": field, "value": value})
    assert answer.status_code == 200, _text(answer)
    assert "data-saved" in _text(answer)
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))[wire] == expected


def test_type_and_project_are_chosen_and_cleared(agent: Desk, crm: Crm) -> None:
    project = crm.ok(crm.post("/projects", {"name": "Migración"}), 201)
    ticket = crm.ticket(title="Con proyecto")
    agent.post(f"/tickets/{ticket['id']}/edit", {"field": "project", "value": project["id"]})
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["project_id"] == project["id"]
    agent.post(f"/tickets/{ticket['id']}/edit", {"field": "project", "value": ""})
    assert crm.ok(crm.get(f"/tickets/{ticket['id']}"))["project_id"] is None


@pytest.mark.parametrize(
    ("field", "value", "language", "words"),
    [
        ("title", "", "en", "Fill in this field."),
        ("title", "x" * 501, "es", "Demasiado largo: hasta 500 caracteres."),
        ("priority", "someday", "en", "Choose an option from the list."),
        ("assignee", "mem_nobody", "es", "Ningún miembro de la organización tiene este id."),
        ("project", "not-an-id", "en", "Choose an option from the list."),
    ],
)
def test_a_refused_field_is_explained_next_to_it_and_keeps_nothing(
    agent: Desk, crm: Crm, field: str, value: str, language: str, words: str
) -> None:
    ticket = crm.ticket(title="Sin cambios")
    answer = agent.post(f"/tickets/{ticket['id']}/edit", {"field": field, "value": value}, language=language)
    assert answer.status_code == 422
    html = _text(answer)
    assert f'data-error-for="{field}"' in html and words in html
    assert answer.headers["HX-Retarget"] == "#ticket-drawer-content"
    after = crm.ok(crm.get(f"/tickets/{ticket['id']}"))
    assert after["title"] == "Sin cambios" and after["priority"] == "normal"
    assert after["assignee_member_id"] is None and after["project_id"] is None


def test_the_drawer_creates_and_completes_the_tickets_tasks(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="Con tareas")
    answer = agent.post(f"/tickets/{ticket['id']}/tasks", {"title": "Llamar al cliente", "type": "call"})
    assert answer.status_code == 200
    [task] = crm.ok(crm.get("/tasks", ticket_id=ticket["id"]))["data"]
    assert task["title"] == "Llamar al cliente" and task["owner_id"] == agent.member_id
    assert "Llamar al cliente" in _text(answer)
    refused = agent.post(f"/tickets/{ticket['id']}/tasks", {"title": ""})
    assert refused.status_code == 422 and 'data-error-for="task-title"' in _text(refused)
    done = agent.post(f"/tickets/{ticket['id']}/tasks/{task['id']}/complete", {})
    assert done.status_code == 200 and 'data-status="completed"' in _text(done)
    assert crm.ok(crm.get(f"/tasks/{task['id']}"))["status"] == "completed"


# ---- languages, tenancy, events, cost ----------------------------------------------------------------


def test_the_board_and_drawer_speak_spanish(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="En español", priority="urgent")
    board = _text(agent.client.get("/tickets", headers={"Accept-Language": "es"}))
    assert "Esperando al cliente" in board and "Urgente" in board and "Nuevo ticket" in board
    drawer = _text(agent.client.get(f"/tickets/{ticket['id']}", headers={"Accept-Language": "es", **HX}))
    assert "Historial" in drawer and "Responsable" in drawer


def test_another_organizations_ticket_is_the_designed_404(
    app: Flask, runner: FlaskCliRunner, agent: Desk, other_crm: Crm, other_org: Org
) -> None:
    theirs = other_crm.ticket(title="Ajeno")
    for path in (f"/tickets/{theirs['id']}", f"/tickets/{theirs['id']}/card", "/tickets/not-a-uuid"):
        page = agent.client.get(path, headers={"Accept": "text/html"})
        assert page.status_code == 404, path
        assert "This page is not here" in _text(page)
    moved = agent.post(f"/tickets/{theirs['id']}/move", {"to": "closed"})
    assert moved.status_code == 404
    assert other_crm.ok(other_crm.get(f"/tickets/{theirs['id']}"))["state"] == "new"


def test_signed_out_requests_are_sent_to_sign_in(client: FlaskClient) -> None:
    answer = client.get("/tickets")
    assert answer.status_code in (302, 401)


def test_every_ticket_change_publishes_ticket_updated_after_commit(app: Flask, agent: Desk, crm: Crm) -> None:
    heard: list[dict[str, Any]] = []

    def hear(event: events.DomainEvent) -> None:
        heard.append(event.data)

    events.subscribe("ticket.updated", hear)
    try:
        ticket = crm.ticket(title="Eventos")
        agent.post(f"/tickets/{ticket['id']}/move", {"to": "on_hold"})
        agent.post(f"/tickets/{ticket['id']}/edit", {"field": "assignee", "value": agent.member_id})
        agent.post(f"/tickets/{ticket['id']}/edit", {"field": "title", "value": "Eventos 2"})
        agent.post(f"/tickets/{ticket['id']}/edit", {"field": "title", "value": ""})  # refused: none
        kind = crm.ok(crm.post("/ticket-types", {"name": "Temporal"}), 201)
        crm.ok(crm.patch(f"/tickets/{ticket['id']}", {"ticket_type_id": kind["id"]}))
        crm.ok(crm.delete(f"/ticket-types/{kind['id']}"))
    finally:
        events._subscribers["ticket.updated"].remove(hear)
    changes = [e["change"] for e in heard if e["id"] == ticket["id"]]
    assert changes == ["created", "state", "assigned", "updated", "updated", "updated"]


def test_the_board_costs_the_same_statements_for_10_and_60_tickets(
    agent: Desk, crm: Crm, queries: Callable[[], Any]
) -> None:
    def count() -> int:
        with queries() as counted:
            assert agent.get("/tickets").status_code == 200
        return int(counted.count)

    customer = crm.contact(name="Rosa Pérez")
    for n in range(10):
        requester = {"requester_id": customer["id"]} if n % 2 else {}
        crm.ticket(title=f"T{n}", priority=("urgent", "high", "normal", "low")[n % 4], **requester)
    ten = count()
    for n in range(50):
        other = crm.contact(name=f"Cliente {n}") if n % 10 == 0 else None
        ticket = crm.ticket(title=f"U{n}", **({"requester_id": other["id"]} if other else {}))
        if n % 3 == 0:
            crm.ok(crm.patch(f"/tickets/{ticket['id']}/state", {"state": "closed"}))
    assert count() == ten


@pytest.mark.parametrize("state", ["new", "closed"])
def test_a_columns_cards_are_read_off_an_index_in_their_order(app: Flask, state: str) -> None:
    """No sort step: an open column seeks ``ix_crm_tickets_list_state``, the closed one
    ``ix_crm_tickets_board_closed`` (crm_0006), whatever the number of tickets in the state."""
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            board_cards(uuid.uuid4(), TicketFilters(), state, datetime.now(UTC), cursor=None, limit=50)
        [(statement, params)] = [(s, p) for s, p in seen if "FROM crm_tickets" in s]
        plan = query_plan(statement, params)
        db.session.rollback()
    index = "ix_crm_tickets_board_closed" if state == "closed" else "ix_crm_tickets_list_state"
    assert index in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_the_sandbox_desk_has_its_own_board(app: Flask, runner: FlaskCliRunner, org: Org, crm: Crm) -> None:
    crm.ticket(title="Solo en vivo")
    email = f"sara.{org.id[:6]}.sandbox@example.test"
    create_desk_user(runner, org.id, email, name="Sara Sandbox", environment="sandbox")
    client = app.test_client()
    sign_in(client, email, prefix="/sandbox")
    html = _text(client.get("/sandbox/tickets"))
    assert 'data-board="tickets"' in html and "Solo en vivo" not in html
    assert 'data-heads-url="/sandbox/tickets/heads' in html
