"""Tasks and contacts in a real Chromium: the agent completes a task with one click (the row moves to
"Done", the API says completed, the rail's overdue badge goes down), a task created elsewhere appears in
an open list without a reload, the drawer refuses an empty title next to the field and then creates;
the contact page holds the person's whole history in date order, and merging a duplicate from the page
(after seeing what moves) leaves one timeline with both contacts' records. Both languages, a phone, no
console error, axe-core without serious or critical violations, and the screenshots of the docs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask.testing import FlaskClient, FlaskCliRunner

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.browser.inbox.data import conversation_of, incoming
from tests.conftest import Org
from tests.fakes import fixtures as fakes
from tests.fakes.fixtures import Deliver, msg

# The fake Meta and a connected WhatsApp number (the conversations of the contact's timeline).
app_config = fakes.app_config
connect = fakes.connect
deliver = fakes.deliver
meta = fakes.meta
meta_server = fakes.meta_server
wa = fakes.wa

LIVE_WITHIN_MS = 4000
MEXICO = "America/Mexico_City"
PHONE = "5215566661001"
SECOND_PHONE = "5215566661002"
TWIN_PHONE = "5215566661003"
LONG_NAME = "María Fernanda Gutiérrez de la Torre Villaseñor"
LONG_ACCOUNT = "Distribuidora de Papelería y Artículos de Oficina La Pluma Dorada, S.A. de C.V."


def crm(client: FlaskClient, org: Org, method: str, suffix: str, **body: Any) -> Any:
    sent = {"query_string": body} if method == "GET" else {"json": body or None}
    response = client.open(
        f"/v1/crm/organizations/{org.id}{suffix}", method=method, headers=org.headers(), **sent
    )
    assert response.status_code < 300, response.get_json()
    return response.get_json()


def _local_midnight_day(days: int) -> str:
    """A calendar day relative to today in Mexico City, as the API takes a date without a time."""
    return (datetime.now(ZoneInfo(MEXICO)).date() + timedelta(days=days)).isoformat()


def seed(client: FlaskClient, deliver: Deliver, org: Org, agent: DeskLogin) -> dict[str, Any]:
    """A realistic customer: two identities, an account, two conversations (WhatsApp from her phone, and
    one from a second number linked to her), two deals, a ticket and three tasks of the agent (overdue,
    today, next week), with long names."""
    account = crm(
        client,
        org,
        "POST",
        "/accounts",
        name=LONG_ACCOUNT,
        domain="plumadorada.com.mx",
        industry="Papelería al mayoreo",
        phone="+52 55 5555 0101",
    )
    contact = crm(
        client,
        org,
        "POST",
        "/contacts",
        name=LONG_NAME,
        job_title="Gerente de Compras Corporativas",
        account_ids=[account["id"]],
        notes="Prefiere que la contacten por WhatsApp por las mañanas.",
        identities=[
            {"kind": "phone", "value": "+" + PHONE},
            {"kind": "email", "value": "mf.gutierrez@plumadorada.com.mx"},
        ],
    )
    # the conversations happened before the records (the timeline is in date order)
    now = datetime.now(UTC)
    incoming(
        deliver,
        PHONE,
        "Buenos días, ¿me pueden mandar la cotización de las 20 líneas empresariales?",
        name="María Fernanda",
        timestamp=str(int((now - timedelta(days=3, hours=2)).timestamp())),
    )
    incoming(
        deliver,
        PHONE,
        "Perfecto, la reviso con dirección y les confirmo el jueves",
        timestamp=str(int((now - timedelta(days=3)).timestamp())),
    )
    incoming(
        deliver,
        SECOND_PHONE,
        "Hola, escribo desde el número de la oficina por la factura de octubre",
        name="Oficina Pluma Dorada",
        timestamp=str(int((now - timedelta(hours=26)).timestamp())),
    )
    second = conversation_of(client, org, SECOND_PHONE)
    response = client.patch(
        msg(org, f"/contacts/{second['contact_id']}"),
        json={"crm_contact_id": contact["id"]},
        headers=org.headers(),
    )
    assert response.status_code == 200, response.get_json()
    pipeline = crm(client, org, "GET", "/pipelines")["data"][0]
    stages = {s["name"]: s["id"] for s in pipeline["stages"]}
    mine = [{"contact_id": contact["id"], "is_primary": True}]
    deal = crm(
        client,
        org,
        "POST",
        "/deals",
        name="Plan empresarial 20 líneas con datos ilimitados y roaming",
        pipeline_id=pipeline["id"],
        stage_id=stages["Proposal"],
        amount="48500.00",
        currency="MXN",
        owner_id=agent.member_id,
        contacts=mine,
        account_id=account["id"],
    )
    crm(client, org, "POST", f"/deals/{deal['id']}/notes", body="Pidió 10 % de descuento por volumen.")
    crm(
        client,
        org,
        "POST",
        "/deals",
        name="Renovación de equipos",
        pipeline_id=pipeline["id"],
        stage_id=stages["Won"],
        amount="1200",
        currency="USD",
        owner_id=agent.member_id,
        contacts=mine,
    )
    ticket = crm(
        client,
        org,
        "POST",
        "/tickets",
        title="La factura de octubre no llegó al correo de la oficina",
        source="api",
        priority="high",
        requester_id=contact["id"],
        account_id=account["id"],
    )
    overdue = crm(
        client,
        org,
        "POST",
        "/tasks",
        title="Llamar para confirmar la cotización de las 20 líneas",
        type="call",
        priority="high",
        owner_id=agent.member_id,
        contact_id=contact["id"],
        due_date=(now - timedelta(hours=3)).isoformat(),
    )
    today = crm(
        client,
        org,
        "POST",
        "/tasks",
        title="Reenviar la factura de octubre",
        type="email",
        owner_id=agent.member_id,
        ticket_id=ticket["id"],
        due_date=_local_midnight_day(0),
    )
    upcoming = crm(
        client,
        org,
        "POST",
        "/tasks",
        title="Visita a la oficina de Polanco para firmar el contrato",
        type="meeting",
        owner_id=agent.member_id,
        deal_id=deal["id"],
        contact_id=contact["id"],
        due_date=_local_midnight_day(6),
    )
    return {
        "contact": contact,
        "account": account,
        "deal": deal,
        "ticket": ticket,
        "tasks": {"overdue": overdue, "today": today, "upcoming": upcoming},
    }


@pytest.fixture
def mexico(runner: FlaskCliRunner, org: Org) -> None:
    result = runner.invoke(args=["orgs", "timezone", "--org", org.id, MEXICO])
    assert result.exit_code == 0, result.output


def open_page(
    new_context: Callable[..., Any], login: DeskLogin, path: str, locale: str = "en-US", width: int = 1440
) -> Any:
    context = new_context(locale=locale)
    context.set_default_timeout(8000)
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900 if width > 500 else 844})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda message: _console(page, message))
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.wait_for_selector("body[data-live=on]")
    wait_for_htmx(page)
    return page


def _console(page: Any, message: Any) -> None:
    """Console errors, but Chromium's note about a 422: that is how a refused form answers (the refusal
    is shown under its field), not a script error."""
    if message.type == "error" and "status of 422" not in message.text:
        page.errors.append(message.text)


def badge(page: Any) -> str:
    element = page.locator("#nav-badge-tasks")
    return "" if element.get_attribute("hidden") is not None else element.inner_text()


def test_tasks_complete_with_one_click_follow_live_and_are_created_in_the_drawer(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    mexico: None,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    agent = make_user(org, "Ana Agent")
    data = seed(client, deliver, org, agent)
    tasks = data["tasks"]
    page = open_page(new_context, agent, "/tasks")
    groups = {
        name: page.locator(f"#task-list [data-group={name}]") for name in ("overdue", "today", "upcoming")
    }
    assert tasks["overdue"]["id"] in groups["overdue"].inner_html()
    assert tasks["today"]["id"] in groups["today"].inner_html()
    assert tasks["upcoming"]["id"] in groups["upcoming"].inner_html()
    assert badge(page) == "1"  # the rail counts the member's overdue task
    assert axe_violations(page) == []
    screenshot(page, "crm-tasks-en")

    # another agent's browser has the list open: it follows without a reload
    other = open_page(new_context, agent, "/tasks")

    # one click: the row moves to "Done", the API says completed, the badge goes down
    row = page.locator(f'[data-task="{tasks["overdue"]["id"]}"]')
    row.locator("[data-complete]").click()
    page.locator(f'[data-group=done] [data-task="{tasks["overdue"]["id"]}"]').wait_for()
    got = crm(client, org, "GET", f"/tasks/{tasks['overdue']['id']}")
    assert got["status"] == "completed" and got["completed_at"]
    page.wait_for_function("() => document.getElementById('nav-badge-tasks').hidden", timeout=LIVE_WITHIN_MS)
    other.locator(f'[data-group=done] [data-task="{tasks["overdue"]["id"]}"]').wait_for(
        timeout=LIVE_WITHIN_MS
    )

    # a task given to the agent elsewhere (the API) appears in the open list
    created = crm(
        client,
        org,
        "POST",
        "/tasks",
        title="Preparar la propuesta de renovación anual",
        owner_id=agent.member_id,
        due_date=_local_midnight_day(3),
    )
    page.locator(f'[data-task="{created["id"]}"]').wait_for(timeout=LIVE_WITHIN_MS)

    # the drawer: an empty title is refused next to the field, then the task is created
    page.locator("[data-new-task]").click()
    form = page.locator("#task-drawer #task-form")
    form.wait_for()
    page.wait_for_function("() => document.getAnimations().length === 0")
    form.get_by_role("button", name="Create the task").click()
    error = form.locator('[data-error-for="title"]')
    error.wait_for()
    assert error.inner_text() == "Fill in this field."
    assert form.get_by_label("Title").get_attribute("aria-invalid") == "true"
    assert axe_violations(page) == []
    form = page.locator("#task-form")
    form.get_by_label("Title").fill("Enviar el contrato firmado a jurídico")
    form.get_by_label("Type").select_option("email")
    form.get_by_label("Due date").fill(_local_midnight_day(1))
    form.get_by_role("button", name="Create the task").click()
    page.locator("#desk-alerts .alert-success").wait_for()
    page.locator("#task-drawer").wait_for(state="hidden")
    page.locator("[data-task]", has_text="Enviar el contrato firmado a jurídico").wait_for()
    [made] = crm(client, org, "GET", "/tasks", search="contrato firmado")["data"]
    assert made["type"] == "email" and made["owner_id"] == agent.member_id
    assert page.errors == [] and other.errors == []

    # both languages and a phone, with the screenshots of docs/desk.md
    spanish = open_page(new_context, agent, "/tasks", locale="es-MX")
    assert "Hoy" in (spanish.locator("[data-group=today] h2").text_content() or "")
    assert axe_violations(spanish) == []
    screenshot(spanish, "crm-tasks-es")
    phone = open_page(new_context, agent, "/tasks", locale="es-MX", width=390)
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert axe_violations(phone) == []
    screenshot(phone, "crm-tasks-phone-es")
    assert spanish.errors == [] and phone.errors == []


def test_the_contact_page_is_one_timeline_and_a_merge_joins_two(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    mexico: None,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    agent = make_user(org, "Ana Agent")
    data = seed(client, deliver, org, agent)
    contact = data["contact"]
    path = f"/contacts/{contact['id']}"

    page = open_page(new_context, agent, path)
    entries = page.locator(".timeline [data-timeline-kind]")
    kinds = entries.evaluate_all("els => els.map(e => e.dataset.timelineKind)")
    assert sorted(kinds) == sorted(["conversation"] * 2 + ["deal"] * 2 + ["note", "ticket"] + ["task"] * 2)
    moments = entries.evaluate_all("els => els.map(e => e.dataset.at)")
    assert moments == sorted(moments, reverse=True)  # newest first
    assert page.locator("#contact-name").inner_text() == LONG_NAME
    assert "mf.gutierrez@plumadorada.com.mx" in page.locator("[data-identities]").inner_text()
    assert LONG_ACCOUNT in page.locator("[data-accounts]").inner_text()
    first = page.locator(".timeline-conversation a").first
    assert "/inbox/c/" in (first.get_attribute("href") or "")
    assert axe_violations(page) == []
    screenshot(page, "crm-contact-en")

    spanish = open_page(new_context, agent, path, locale="es-MX")
    assert spanish.locator("#timeline-heading").inner_text() == "Historial"
    assert axe_violations(spanish) == []
    screenshot(spanish, "crm-contact-es")
    phone = open_page(new_context, agent, path, locale="es-MX", width=390)
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert axe_violations(phone) == []
    screenshot(phone, "crm-contact-phone-es")

    # a duplicate made from an Instagram-era record: its own number, deal and task
    twin = crm(
        client,
        org,
        "POST",
        "/contacts",
        name="María F. Gutiérrez (duplicado)",
        identities=[{"kind": "phone", "value": "+" + TWIN_PHONE}],
    )
    incoming(deliver, TWIN_PHONE, "Soy María Fernanda, les escribo desde mi otro número", name="MaFer")
    twin_deal = crm(
        client,
        org,
        "POST",
        "/deals",
        name="Líneas adicionales para sucursal Monterrey",
        pipeline_id=crm(client, org, "GET", "/pipelines")["data"][0]["id"],
        contacts=[{"contact_id": twin["id"], "is_primary": True}],
        stage_id=crm(client, org, "GET", "/pipelines")["data"][0]["stages"][0]["id"],
    )
    twin_task = crm(
        client, org, "POST", "/tasks", title="Confirmar la dirección de la sucursal", contact_id=twin["id"]
    )

    page.reload()
    wait_for_htmx(page)
    page.locator("#merge-box summary").click()
    page.get_by_label("Name, phone or email").fill("duplicado")
    page.locator(f'[data-merge-candidate="{twin["id"]}"]').click()
    confirm = page.locator("[data-merge-confirm]")
    confirm.wait_for()
    moves = {
        key: confirm.locator(f'[data-moves="{key}"] dd').inner_text()
        for key in ("identities", "deals", "tickets", "tasks", "conversations")
    }
    assert moves == {"identities": "1", "deals": "1", "tickets": "0", "tasks": "1", "conversations": "1"}
    assert crm(client, org, "GET", f"/contacts/{twin['id']}")["id"] == twin["id"]  # nothing moved yet
    assert axe_violations(page) == []
    confirm.get_by_role("button", name="Merge the contacts").click()
    page.locator("[data-merged]").wait_for()
    ids = page.locator(".timeline [data-timeline-kind]").evaluate_all("els => els.map(e => e.dataset.id)")
    assert twin_deal["id"] in ids and twin_task["id"] in ids and data["deal"]["id"] in ids
    kinds = page.locator(".timeline [data-timeline-kind]").evaluate_all(
        "els => els.map(e => e.dataset.timelineKind)"
    )
    assert kinds.count("conversation") == 3
    moments = page.locator(".timeline [data-timeline-kind]").evaluate_all("els => els.map(e => e.dataset.at)")
    assert moments == sorted(moments, reverse=True)
    assert "+" + TWIN_PHONE[:2] in page.locator("[data-identities]").inner_text()
    response = client.get(f"/v1/crm/organizations/{org.id}/contacts/{twin['id']}", headers=org.headers())
    assert response.status_code == 404
    assert page.errors == [] and spanish.errors == [] and phone.errors == []


def test_another_organizations_contact_is_the_designed_404(
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    contact = crm(client, org, "POST", "/contacts", name="Rosa Pérez")
    outsider = make_user(other_org, "Gus Globex")
    page = new_context().new_page()
    sign_in(page, outsider)
    page.wait_for_url("**/desk")
    response = page.goto(f"/contacts/{contact['id']}")
    assert response is not None and response.status == 404
    assert page.get_by_role("heading", name="This page is not here").is_visible()
    assert axe_violations(page) == []
