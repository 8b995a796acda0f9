"""The desk's task list, contact and account pages without a browser: mine by default and grouped by the
organization's days, one-click completion seen through the API, the drawer's refusals under their
fields, the rail's overdue count, ``task.updated`` events, a contact's timeline in date order with
both contacts' records after a merge, tenancy (the designed 404), both languages and a flat query
count."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.crm.services.tasks import due_group
from core import events
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.fakes import fixtures as fakes
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.support.desk_users import create_desk_user, sign_in

# The fake Meta and a connected WhatsApp number, for the conversations of a contact's timeline.
app_config = fakes.app_config
connect = fakes.connect
deliver = fakes.deliver
meta = fakes.meta
meta_server = fakes.meta_server
wa = fakes.wa

HX = {"HX-Request": "true"}
HTML = {"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
MEXICO = "America/Mexico_City"


class Desk:
    """A signed-in desk user's browser without the browser."""

    def __init__(self, client: FlaskClient, member_id: str) -> None:
        self.client = client
        self.member_id = member_id
        found = CSRF.search(client.get("/desk").get_data(as_text=True))
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, language: str = "en", **headers: str) -> Any:
        return self.client.get(path, headers={**HTML, "Accept-Language": language, **headers})

    def post(self, path: str, **form: str) -> Any:
        return self.client.post(path, data=form, headers={**HX, "X-CSRFToken": self.csrf})


def _sign_in(app: Flask, runner: FlaskCliRunner, org: Org, name: str) -> Desk:
    email = f"{name.split()[0].lower()}.{org.id[:6]}@example.test"
    member_id = create_desk_user(runner, org.id, email, name=name)["member_id"]
    client = app.test_client()
    sign_in(client, email)
    return Desk(client, member_id)


def _text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def _rows(html: str) -> list[str]:
    return re.findall(r'data-task="([0-9a-f-]+)"', html)


def _group_of(html: str, task_id: str) -> str:
    """The group (overdue, today, upcoming, done) whose section holds the task's row."""
    groups = list(re.finditer(r'data-group="([a-z]+)"', html))
    at = html.index(f'data-task="{task_id}"')
    return [g.group(1) for g in groups if g.start() < at][-1]


@pytest.fixture
def mexico(runner: FlaskCliRunner, org: Org) -> None:
    result = runner.invoke(args=["orgs", "timezone", "--org", org.id, MEXICO])
    assert result.exit_code == 0, result.output


@pytest.fixture
def agent(wired: None, app: Flask, runner: FlaskCliRunner, org: Org, mexico: None) -> Desk:
    return _sign_in(app, runner, org, "Ana Agent")


# ---- the rule: overdue and today in the organization's zone ----------------------------------------------


class _Task:
    def __init__(self, due: datetime | None, status: str = "pending") -> None:
        self.due_date, self.status = due, status


@pytest.mark.parametrize(
    ("now", "due", "group"),
    [
        # 20:00 in Mexico City on 10 March (02:00Z on the 11th): a calendar day is a day there
        ("2026-03-11T02:00:00+00:00", "2026-03-10T00:00:00+00:00", "today"),
        ("2026-03-11T02:00:00+00:00", "2026-03-11T00:00:00+00:00", "upcoming"),
        ("2026-03-11T02:00:00+00:00", "2026-03-09T00:00:00+00:00", "overdue"),
        # a time is a moment: past is overdue, later today is today
        ("2026-03-11T02:00:00+00:00", "2026-03-11T01:00:00+00:00", "overdue"),
        ("2026-03-11T02:00:00+00:00", "2026-03-11T03:00:00+00:00", "today"),
        ("2026-03-11T02:00:00+00:00", "2026-03-11T07:00:00+00:00", "upcoming"),
        ("2026-03-11T02:00:00+00:00", None, "upcoming"),
    ],
)
def test_a_due_date_is_grouped_by_the_organizations_day(now: str, due: str | None, group: str) -> None:
    task = _Task(datetime.fromisoformat(due) if due else None)
    assert due_group(task, datetime.fromisoformat(now), ZoneInfo(MEXICO)) == group  # type: ignore[arg-type]


def test_the_rails_overdue_count_agrees_with_the_lists_groups(agent: Desk, crm: Crm) -> None:
    """Calendar days around today in Mexico City and moments around now: the badge counts exactly the
    tasks the list puts under "Overdue" (the same rule, once in SQL and once on the rows)."""
    now = datetime.now(UTC)
    today = now.astimezone(ZoneInfo(MEXICO)).date()
    dues = [now - timedelta(hours=2), now + timedelta(hours=2), now - timedelta(days=3)]
    dues += [datetime.combine(today + timedelta(days=n), datetime.min.time(), UTC) for n in (-2, -1, 0, 1)]
    made = [
        crm.task(title=f"T{n}", owner_id=agent.member_id, due_date=due.isoformat())
        for n, due in enumerate(dues)
    ]
    crm.task(title="Nobody's", due_date=(now - timedelta(days=1)).isoformat())  # not the member's
    expected = [
        t["id"]
        for t, due in zip(made, dues, strict=True)
        if due_group(_Task(due), now, ZoneInfo(MEXICO)) == "overdue"
    ]
    assert len(expected) == 4  # 2 h ago, 3 days ago, the day before yesterday and yesterday
    html = _text(agent.get("/tasks"))
    assert re.search(rf'id="nav-badge-tasks"[^>]*>{len(expected)}<', html)
    assert sorted(t for t in _rows(html) if _group_of(html, t) == "overdue") == sorted(expected)


# ---- the task list -----------------------------------------------------------------------------------------


def test_my_tasks_by_default_grouped_overdue_today_upcoming_and_done(
    agent: Desk, crm: Crm, app: Flask, runner: FlaskCliRunner, org: Org
) -> None:
    mate = _sign_in(app, runner, org, "Beto Compañero")
    now = datetime.now(UTC)
    late = crm.task(title="Llamar a Rosa por la factura", type="call", owner_id=agent.member_id,
                    due_date=(now - timedelta(hours=2)).isoformat())  # fmt: skip
    later = crm.task(title="Enviar la cotización", type="email", owner_id=agent.member_id,
                     due_date=(now + timedelta(days=9)).isoformat())  # fmt: skip
    undated = crm.task(title="Revisar el contrato", owner_id=agent.member_id)
    done = crm.task(title="Bienvenida", owner_id=agent.member_id)
    crm.ok(crm.patch(f"/tasks/{done['id']}/complete"))
    theirs = crm.task(title="Tarea de Beto", owner_id=mate.member_id)

    html = _text(agent.get("/tasks"))
    assert 'aria-current="page"' in html and 'data-nav="tasks"' in html
    assert set(_rows(html)) == {late["id"], later["id"], undated["id"], done["id"]}
    assert _group_of(html, late["id"]) == "overdue"
    assert _group_of(html, later["id"]) == "upcoming" and _group_of(html, undated["id"]) == "upcoming"
    assert _group_of(html, done["id"]) == "done"
    assert html.index(later["id"]) < html.index(undated["id"])  # undated last
    # the rail counts the member's overdue tasks
    assert re.search(r'id="nav-badge-tasks"[^>]*>1<', html)

    everyone = _text(agent.get("/tasks?owner=any", **HX, **{"HX-Target": "task-list"}))
    assert "<html" not in everyone and theirs["id"] in _rows(everyone)
    assert "Beto Compañero" in everyone  # the owner's name, not their id
    beto = _text(agent.get(f"/tasks?owner={mate.member_id}", **HX, **{"HX-Target": "task-list"}))
    assert _rows(beto) == [theirs["id"]]


def test_every_filter_of_the_api_narrows_the_list(agent: Desk, crm: Crm) -> None:
    contact = crm.contact(name="Rosa Pérez")
    account = crm.account(name="Papelería La Pluma")
    deal = crm.deal(name="Plan empresarial")
    ticket = crm.ticket(title="Factura")
    me = agent.member_id
    made = {
        "call": crm.task(title="Llamar", type="call", owner_id=me, priority="high", contact_id=contact["id"]),
        "deal": crm.task(title="Cotizar", owner_id=me, deal_id=deal["id"], due_date="2030-05-02"),
        "ticket": crm.task(title="Reenviar factura", owner_id=me, ticket_id=ticket["id"]),
        "account": crm.task(title="Visitar", type="meeting", owner_id=me, account_id=account["id"]),
    }
    crm.ok(crm.patch(f"/tasks/{made['ticket']['id']}", {"status": "in_progress"}))

    def rows(query: str) -> set[str]:
        return set(_rows(_text(agent.get(f"/tasks?{query}", **HX, **{"HX-Target": "task-list"}))))

    assert rows("type=call") == {made["call"]["id"]}
    assert rows("priority=high") == {made["call"]["id"]}
    assert rows("status=in_progress") == {made["ticket"]["id"]}
    assert rows(f"contact_id={contact['id']}") == {made["call"]["id"]}
    assert rows(f"deal_id={deal['id']}") == {made["deal"]["id"]}
    assert rows(f"ticket_id={ticket['id']}") == {made["ticket"]["id"]}
    assert rows(f"account_id={account['id']}") == {made["account"]["id"]}
    assert rows("due_after=2030-05-01&due_before=2030-05-03") == {made["deal"]["id"]}
    assert rows("q=factura") == {made["ticket"]["id"]}
    # a link filter shows what it names
    page = _text(agent.get(f"/tasks?contact_id={contact['id']}"))
    assert 'data-link-filter="contact_id"' in page and "Rosa Pérez" in page
    # a refused filter is said under its field and not applied
    refused = _text(agent.get("/tasks?due_after=2030-05-04&due_before=2030-05-01"))
    assert 'data-error-for="due_after"' in refused and "The start is later than the end." in refused
    assert set(_rows(refused)) == {t["id"] for t in made.values()}


def test_one_click_completes_a_task_seen_through_the_api_and_publishes_the_change(
    agent: Desk, crm: Crm, commits: Callable[[], Any]
) -> None:
    task = crm.task(title="Enviar contrato", owner_id=agent.member_id, due_date="2020-01-01")
    published: list[events.DomainEvent] = []
    events.subscribe("task.updated", published.append)
    try:
        with commits() as counted:
            response = agent.post(f"/tasks/{task['id']}/complete", owner="me")
    finally:
        events._subscribers["task.updated"].remove(published.append)
    assert response.status_code == 200
    assert counted.count == 1
    html = _text(response)
    assert html.lstrip().startswith('<div id="task-list"') and _group_of(html, task["id"]) == "done"
    got = crm.ok(crm.get(f"/tasks/{task['id']}"))
    assert got["status"] == "completed" and got["completed_at"]
    assert [(e.data["id"], e.data["change"]) for e in published] == [(task["id"], "completed")]
    # the rail's count went down with it
    assert re.search(r'id="nav-badge-tasks"[^>]*hidden', _text(agent.get("/tasks")))
    reopened = agent.post(f"/tasks/{task['id']}/reopen")
    assert _group_of(_text(reopened), task["id"]) == "overdue"
    assert crm.ok(crm.get(f"/tasks/{task['id']}"))["status"] == "pending"


def test_the_api_verbs_publish_task_updated(crm: Crm) -> None:
    published: list[events.DomainEvent] = []
    events.subscribe("task.updated", published.append)
    try:
        task = crm.task(title="Uno")
        crm.ok(crm.patch(f"/tasks/{task['id']}", {"title": "Dos"}))
        crm.ok(crm.patch(f"/tasks/{task['id']}/complete"))
        crm.ok(crm.patch(f"/tasks/{task['id']}/complete"))  # again: nothing changes, nothing said
        crm.ok(crm.delete(f"/tasks/{task['id']}"))
    finally:
        events._subscribers["task.updated"].remove(published.append)
    assert [e.data["change"] for e in published] == ["created", "updated", "completed", "deleted"]


def test_the_drawer_creates_and_edits_and_refuses_next_to_the_field(agent: Desk, crm: Crm) -> None:
    contact = crm.contact(name="Rosa Pérez")
    form = _text(agent.get(f"/tasks/new?contact_id={contact['id']}", **HX))
    assert 'id="task-form"' in form and "Rosa Pérez" in form and f'value="{agent.member_id}" selected' in form

    refused = agent.post("/tasks", title="  ", type="call", due_date="2030-02-03", contact_id=contact["id"])
    assert refused.status_code == 422
    assert (refused.headers["HX-Retarget"], refused.headers["HX-Reswap"]) == ("#task-form", "outerHTML")
    html = _text(refused)
    assert 'data-error-for="title"' in html and "Fill in this field." in html
    assert 'value="2030-02-03"' in html  # what was typed stays
    assert crm.ok(crm.get("/tasks"))["total"] == 0

    created = agent.post("/tasks", title="Llamar a Rosa", type="call", priority="high", due_date="2030-02-03",
                         due_time="09:30", owner_id=agent.member_id, contact_id=contact["id"])  # fmt: skip
    assert created.status_code == 200, _text(created)
    assert "desk:tasks-changed" in created.headers["HX-Trigger"]
    assert "#task-drawer-close" in created.headers["HX-Trigger-After-Settle"]
    [task] = crm.ok(crm.get("/tasks"))["data"]
    # 09:30 in Mexico City is 15:30Z; the task is linked to the contact the list was filtered by
    assert task["due_date"].startswith("2030-02-03T15:30:00")
    assert (task["type"], task["priority"], task["contact"]["id"]) == ("call", "high", contact["id"])

    edit = _text(agent.get(f"/tasks/{task['id']}/edit", **HX))
    assert 'value="09:30"' in edit and 'value="2030-02-03"' in edit
    refused = agent.post(f"/tasks/{task['id']}", title="x" * 501, type="call", due_date="2030-02-03")
    assert refused.status_code == 422 and "Too long: up to 500 characters." in _text(refused)
    saved = agent.post(f"/tasks/{task['id']}", title="Llamar a Rosa mañana", type="call", priority="normal",
                       status="in_progress", due_date="2030-02-04", owner_id=agent.member_id,
                       contact_id=contact["id"])  # fmt: skip
    assert saved.status_code == 200
    got = crm.ok(crm.get(f"/tasks/{task['id']}"))
    # a date without a time is a calendar day (00:00Z)
    assert got["title"] == "Llamar a Rosa mañana" and got["due_date"].startswith("2030-02-04T00:00:00")
    assert got["status"] == "in_progress"

    deleted = agent.post(f"/tasks/{task['id']}/delete")
    assert deleted.status_code == 200 and crm.get(f"/tasks/{task['id']}").status_code == 404


def test_the_task_pages_in_spanish(agent: Desk, crm: Crm) -> None:
    crm.task(title="Llamar", owner_id=agent.member_id, due_date="2020-01-01")
    html = _text(agent.get("/tasks", language="es"))
    assert "Vencidas" in html and "Nueva tarea" in html and "Responsable" in html


def test_another_organizations_task_is_not_found(
    agent: Desk, app: Flask, runner: FlaskCliRunner, other_org: Org, other_crm: Crm
) -> None:
    task = other_crm.task(title="Ajena")
    assert agent.get(f"/tasks/{task['id']}/edit").status_code == 404
    assert agent.post(f"/tasks/{task['id']}/complete").status_code == 404
    assert agent.post("/tasks/not-an-id/complete").status_code == 404
    assert other_crm.ok(other_crm.get(f"/tasks/{task['id']}"))["status"] == "pending"


# ---- contacts and accounts -------------------------------------------------------------------------------

PHONE = "5215577770001"
OTHER_PHONE = "5215577770002"


def _incoming(deliver: Deliver, text: str, sender: str, name: str) -> None:
    from tests.fakes.fixtures import PHONE_NUMBER_ID

    response = deliver(
        wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[wa_text(sender, text)], names={sender: name}))
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def _timeline(html: str) -> list[tuple[str, str, str]]:
    """(kind, record id, ISO time) of each timeline entry, in page order."""
    found = re.findall(r'data-timeline-kind="([a-z]+)" data-at="([^"]+)" data-id="([^"]+)"', html)
    return [(kind, record, at) for kind, at, record in found]


def test_the_contact_page_holds_the_whole_history_in_date_order(
    agent: Desk, crm: Crm, wa: Channel, deliver: Deliver
) -> None:
    account = crm.account(name="Papelería La Pluma", domain="lapluma.mx")
    rosa = crm.contact(name="Rosa Pérez", job_title="Compras", account_ids=[account["id"]],
                       identities=[{"kind": "phone", "value": "+" + PHONE},
                                   {"kind": "email", "value": "rosa@lapluma.mx"}])  # fmt: skip
    _incoming(deliver, "Hola, ¿ya tienen lista la cotización?", PHONE, "Rosa")
    deal = crm.deal(name="Plan empresarial 20 líneas", amount="12500.50",
                    contacts=[{"contact_id": rosa["id"], "is_primary": True}])  # fmt: skip
    crm.ok(crm.post(f"/deals/{deal['id']}/notes", {"body": "Pidió descuento por volumen"}), 201)
    ticket = crm.ticket(title="Factura de octubre", requester_id=rosa["id"])
    task = crm.task(title="Enviar cotización", contact_id=rosa["id"], owner_id=agent.member_id)

    response = agent.get(f"/contacts/{rosa['id']}")
    assert response.status_code == 200
    html = _text(response)
    assert 'data-nav="contacts"' in html and "Rosa Pérez" in html and "Compras" in html
    assert "+525577770001" in html and "rosa@lapluma.mx" in html and "Papelería La Pluma" in html
    entries = _timeline(html)
    kinds = [kind for kind, _record, _at in entries]
    assert sorted(kinds) == ["conversation", "deal", "note", "task", "ticket"]
    moments = [at for _kind, _record, at in entries]
    assert moments == sorted(moments, reverse=True)  # newest first
    ids = {record for _kind, record, _at in entries}
    assert {deal["id"], ticket["id"], task["id"]} <= ids
    assert "¿ya tienen lista la cotización?" in html and "/inbox/c/" in html
    assert "Pidió descuento por volumen" in html and "MX$12,500.50" in html

    spanish = _text(agent.get(f"/contacts/{rosa['id']}", language="es"))
    assert "Historial" in spanish and "Fusionar" in spanish and "$12,500.50" in spanish

    # the account page: its contacts, deals and tickets
    crm.ok(crm.patch(f"/tickets/{ticket['id']}", {"account_id": account["id"]}))
    crm.ok(crm.patch(f"/deals/{deal['id']}", {"account_id": account["id"]}))
    page = _text(agent.get(f"/accounts/{account['id']}"))
    assert "Papelería La Pluma" in page and "lapluma.mx" in page and "Rosa Pérez" in page
    assert "Plan empresarial 20 líneas" in page and "Factura de octubre" in page


def test_merging_shows_what_moves_then_one_timeline_holds_both(
    agent: Desk, crm: Crm, wa: Channel, deliver: Deliver, commits: Callable[[], Any]
) -> None:
    rosa = crm.contact(name="Rosa Pérez", identities=[{"kind": "phone", "value": "+" + PHONE}])
    twin_identities = [{"kind": "phone", "value": "+" + OTHER_PHONE}, {"kind": "email", "value": "rp@x.mx"}]
    twin = crm.contact(name="Rosa P. (WhatsApp)", identities=twin_identities)
    _incoming(deliver, "Hola", PHONE, "Rosa")
    _incoming(deliver, "Soy Rosa desde otro número", OTHER_PHONE, "Rosa P")
    mine = crm.deal(name="Deal de Rosa", contacts=[{"contact_id": rosa["id"]}])
    theirs = crm.deal(name="Deal del duplicado", contacts=[{"contact_id": twin["id"]}])
    ticket = crm.ticket(title="Ticket del duplicado", requester_id=twin["id"])
    task = crm.task(title="Tarea del duplicado", contact_id=twin["id"])

    found = _text(agent.get(f"/contacts/{rosa['id']}/merge/candidates?q=Rosa", **HX))
    assert f'data-merge-candidate="{twin["id"]}"' in found
    assert f'data-merge-candidate="{rosa["id"]}"' not in found  # not itself

    preview = _text(agent.get(f"/contacts/{rosa['id']}/merge?source={twin['id']}", **HX))
    moves = dict(re.findall(r'data-moves="([a-z]+)"><dt>[^<]*</dt><dd>(\d+)</dd>', preview))
    assert moves == {"identities": "2", "deals": "1", "tickets": "1", "tasks": "1", "conversations": "1",
                     "accounts": "0"}  # fmt: skip
    # nothing moved yet
    assert crm.get(f"/contacts/{twin['id']}").status_code == 200

    with commits() as counted:
        merged = agent.post(f"/contacts/{rosa['id']}/merge", source_contact_id=twin["id"])
    assert merged.status_code == 200 and counted.count == 1
    assert merged.headers["HX-Redirect"] == f"/contacts/{rosa['id']}?merged=1"
    assert crm.get(f"/contacts/{twin['id']}").status_code == 404

    html = _text(agent.get(f"/contacts/{rosa['id']}?merged=1"))
    assert "data-merged" in html
    ids = {record for _kind, record, _at in _timeline(html)}
    assert {mine["id"], theirs["id"], ticket["id"], task["id"]} <= ids
    assert [kind for kind, _r, _a in _timeline(html)].count("conversation") == 2
    assert "+525577770002" in html and "rp@x.mx" in html

    itself = agent.post(f"/contacts/{rosa['id']}/merge", source_contact_id=rosa["id"])
    assert itself.status_code == 422 and "A contact cannot be merged into itself." in _text(itself)


def test_the_lists_search_and_page(agent: Desk, crm: Crm) -> None:
    crm.contact(name="Rosa Pérez", identities=[{"kind": "email", "value": "rosa@lapluma.mx"}])
    crm.contact(name="Jorge Ruiz", identities=[{"kind": "phone", "value": "+5215512345678"}])
    for n in range(26):
        crm.contact(name=f"Zeta {n:02d}")
    crm.account(name="Papelería La Pluma", domain="lapluma.mx")

    page = _text(agent.get("/contacts"))
    assert 'data-nav="contacts"' in page and page.count("data-contact-row=") == 25
    assert "Page 1 of 2 · 28 in all" in page and 'rel="next"' in page
    second = _text(agent.get("/contacts?page=2"))
    assert second.count("data-contact-row=") == 3
    found = _text(agent.get("/contacts?q=lapluma", **HX, **{"HX-Target": "directory"}))
    assert "<html" not in found and "Rosa Pérez" in found and found.count("data-contact-row=") == 1
    by_phone = _text(agent.get("/contacts?q=5512345678", **HX, **{"HX-Target": "directory"}))
    assert "Jorge Ruiz" in by_phone
    accounts = _text(agent.get("/contacts?tab=accounts&q=pluma"))
    assert accounts.count("data-account-row=") == 1 and "lapluma.mx" in accounts
    assert "Contactos y cuentas" in _text(agent.get("/contacts", language="es"))


def test_another_organizations_contact_is_the_designed_404(agent: Desk, other_crm: Crm, crm: Crm) -> None:
    stranger = other_crm.contact(name="Ajena")
    account = other_crm.account(name="Ajena SA")
    mine = crm.contact(name="Mía")
    for path in (f"/contacts/{stranger['id']}", f"/accounts/{account['id']}", "/contacts/not-an-id"):
        response = agent.get(path)
        assert response.status_code == 404 and "This page is not here" in _text(response), path
    spanish = agent.get(f"/contacts/{stranger['id']}", language="es")
    assert "Esta página no está aquí" in _text(spanish)
    assert agent.get(f"/contacts/{mine['id']}/merge?source={stranger['id']}", **HX).status_code == 404
    assert agent.post(f"/contacts/{mine['id']}/merge", source_contact_id=stranger["id"]).status_code == 404
    assert other_crm.get(f"/contacts/{stranger['id']}").status_code == 200


def test_the_contact_pages_statements_do_not_grow_with_its_history(
    agent: Desk, crm: Crm, wa: Channel, deliver: Deliver, queries: Callable[[], Any]
) -> None:
    rosa = crm.contact(name="Rosa Pérez", identities=[{"kind": "phone", "value": "+" + PHONE}])
    _incoming(deliver, "Hola", PHONE, "Rosa")

    def add(n: int) -> None:
        for i in range(n):
            deal = crm.deal(name=f"Deal {i}", owner_id=agent.member_id, contacts=[{"contact_id": rosa["id"]}])
            crm.ok(crm.post(f"/deals/{deal['id']}/notes", {"body": f"Nota {i}"}), 201)
            crm.ticket(title=f"Ticket {i}", requester_id=rosa["id"], assignee_member_id=agent.member_id)
            crm.task(title=f"Task {i}", contact_id=rosa["id"], owner_id=agent.member_id)

    def count() -> int:
        with queries() as counted:
            assert agent.get(f"/contacts/{rosa['id']}").status_code == 200
        return int(counted.count)

    add(1)
    few = count()
    add(6)
    many = count()
    assert many == few, (few, many)


def test_the_task_lists_statements_do_not_grow_with_its_rows(
    agent: Desk, crm: Crm, queries: Callable[[], Any]
) -> None:
    contact = crm.contact(name="Rosa Pérez")
    deal = crm.deal(name="Plan")

    def add(n: int) -> None:
        for i in range(n):
            crm.task(
                title=f"Open {i}", owner_id=agent.member_id, contact_id=contact["id"], deal_id=deal["id"]
            )
            done = crm.task(title=f"Done {i}", owner_id=agent.member_id, contact_id=contact["id"])
            crm.ok(crm.patch(f"/tasks/{done['id']}/complete"))

    def count() -> int:
        with queries() as counted:
            assert agent.get("/tasks?owner=any").status_code == 200
        return int(counted.count)

    add(1)
    few = count()
    add(6)
    assert count() == few
