"""The CRM's desk fragments without a browser: what the side panel lists for a conversation's person, the
"new ticket" and "new deal" forms (what they create is what the JSON API then shows, linked to the
conversation), refusals in the form, tenancy, both environments and a flat query count."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from markupsafe import escape

from blueprints.crm import hooks
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.fakes import fixtures as fakes
from tests.fakes.fixtures import Channel, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.support.desk_users import create_desk_user, sign_in

# The fake Meta (Graph API and signed webhooks) and a connected WhatsApp number, as tests/crm/wired has.
app_config = fakes.app_config
connect = fakes.connect
deliver = fakes.deliver
meta = fakes.meta
meta_server = fakes.meta_server
wa = fakes.wa

HX = {"HX-Request": "true"}
PHONE = "5215577770001"  # what WhatsApp sends (the 521 form); the CRM stores +525577770001
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


# ---- helpers ------------------------------------------------------------------------------------------


class Desk:
    """A signed-in desk user's browser without the browser: GETs and htmx POSTs with the CSRF header."""

    def __init__(self, client: FlaskClient, prefix: str, member_id: str) -> None:
        self.client = client
        self.prefix = prefix
        self.member_id = member_id
        page = client.get(f"{prefix}/desk").get_data(as_text=True)
        found = CSRF.search(page)
        assert found is not None, page[:500]
        self.csrf = found.group(1)

    def records(self, conversation: str, **headers: str) -> Any:
        return self.client.get(
            f"{self.prefix}/crm/conversation/{conversation}/records", headers={**HX, **headers}
        )

    def lists(self, conversation: str) -> Any:
        return self.client.get(f"{self.prefix}/crm/conversation/{conversation}/records/lists", headers=HX)

    def post(self, conversation: str, what: str, language: str | None = None, **form: str) -> Any:
        languages = {"Accept-Language": language} if language else {}
        return self.client.post(
            f"{self.prefix}/crm/conversation/{conversation}/{what}",
            data=form,
            headers={**HX, "X-CSRFToken": self.csrf, **languages},
        )


def _user(runner: FlaskCliRunner, org: Org, name: str, env: str = "live") -> tuple[str, str]:
    email = f"{name.split()[0].lower()}.{org.id[:6]}.{env}@example.test"
    return email, create_desk_user(runner, org.id, email, name=name, environment=env)["member_id"]


def _sign_in(app: Flask, runner: FlaskCliRunner, org: Org, name: str, env: str = "live") -> Desk:
    email, member_id = _user(runner, org, name, env)
    prefix = "/sandbox" if env == "sandbox" else ""
    client = app.test_client()
    sign_in(client, email, prefix=prefix)
    return Desk(client, prefix, member_id)


def _incoming(deliver: Deliver, text: str, sender: str = PHONE, prefix: str = "") -> None:
    from tests.fakes.fixtures import PHONE_NUMBER_ID

    response = deliver(
        wa_delivery(
            wa_change(PHONE_NUMBER_ID, messages=[wa_text(sender, text)], names={sender: "Rosa Pérez"})
        ),
        prefix=prefix,
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def _conversation(client: FlaskClient, org: Org, sender: str = PHONE, env: str = "live") -> str:
    prefix = "/sandbox" if env == "sandbox" else ""
    response = client.get(
        f"{prefix}/v2/messages/organizations/{org.id}/conversations?search={sender[-8:]}",
        headers=org.headers(env),
    )
    [found] = response.get_json()["data"]
    return str(found["id"])


def _text(response: Any) -> str:
    return str(response.get_data(as_text=True))


@pytest.fixture
def agent(wired: None, app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return _sign_in(app, runner, org, "Ana Agent")


@pytest.fixture
def contact(crm: Crm) -> dict[str, Any]:
    return crm.contact(name="Rosa Pérez", identities=[{"kind": "phone", "value": "+" + PHONE}])


@pytest.fixture
def conversation(
    wa: Channel, deliver: Deliver, client: FlaskClient, org: Org, contact: dict[str, Any]
) -> str:
    """Rosa writes on WhatsApp; her messaging contact is linked to her CRM contact by the phone."""
    _incoming(deliver, "Hola, quiero contratar el plan empresarial para 20 líneas")
    _incoming(deliver, "También necesito factura del mes pasado, no me llegó")
    return _conversation(client, org)


# ---- the fragment -------------------------------------------------------------------------------------


def test_the_fragment_lists_the_contacts_open_deals_tickets_and_open_tasks(
    agent: Desk, crm: Crm, contact: dict[str, Any], conversation: str
) -> None:
    pipeline = crm.pipeline()
    mine = {"contact_id": contact["id"], "is_primary": True}
    crm.deal(
        name="Plan empresarial 20 líneas",
        amount="12500.50",
        currency="MXN",
        owner_id=agent.member_id,
        stage_id=crm.stage(pipeline, "Proposal")["id"],
        pipeline_id=pipeline["id"],
        contacts=[mine],
    )
    crm.deal(name="Won long ago", stage_id=crm.stage(pipeline, "Won")["id"], pipeline_id=pipeline["id"],
             contacts=[mine])  # fmt: skip
    crm.deal(name="Someone else's deal", contacts=[])
    linked = crm.deal(name="Roaming USA", amount="300", currency="USD", conversation_ids=[conversation])
    ticket = crm.ticket(title="Factura de octubre", priority="high", requester_id=contact["id"])
    due = (datetime.now(UTC) + timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    crm.task(title="Enviar cotización", type="email", contact_id=contact["id"], due_date=due.isoformat())
    done = crm.task(title="Llamada de bienvenida", contact_id=contact["id"])
    crm.ok(crm.patch(f"/tasks/{done['id']}/complete"))

    response = agent.records(conversation, **{"Accept-Language": "en"})
    assert response.status_code == 200
    html = _text(response)
    assert "<html" not in html and 'id="crm-section"' in html
    assert "Rosa Pérez" in html  # the CRM contact
    # open deals of the contact and the deal that links this conversation; not the won one nor others'
    assert "Plan empresarial 20 líneas" in html and "MX$12,500.50" in html and "Proposal" in html
    assert "Ana Agent" in html  # the owner's name, not their id
    assert "Roaming USA" in html and "$300.00" in html
    assert "Won long ago" not in html and "Someone else" not in html
    assert f'data-crm-deal="{linked["id"]}"' in html
    assert ticket["reference"] in html and "Factura de octubre" in html and "High" in html and "New" in html
    assert "Enviar cotización" in html and "Email" in html and due.strftime("%b") in html
    assert "Llamada de bienvenida" not in html
    # the forms: the default pipeline's first stage and the organization's base currency are chosen
    assert 'id="crm-new-ticket"' in html and 'id="crm-new-deal"' in html
    first = f"{pipeline['id']}:{pipeline['stages'][0]['id']}"
    assert f'<option value="{first}" selected>' in html and '<option value="MXN" selected>' in html

    spanish = _text(agent.records(conversation, **{"Accept-Language": "es"}))
    assert "$12,500.50" in spanish and "MX$" not in spanish  # Mexican Spanish: pesos written as in Mexico


def test_a_person_without_crm_records_sees_the_empty_state_and_long_lists_are_capped(
    agent: Desk, crm: Crm, wa: Channel, deliver: Deliver, client: FlaskClient, org: Org
) -> None:
    _incoming(deliver, "Hola", sender="5215577770002")
    stranger = _conversation(client, org, "5215577770002")
    html = _text(agent.records(stranger))
    assert "Nothing open in the CRM for this person." in html and "data-crm-list" not in html

    for n in range(7):
        crm.ticket(title=f"Ticket {n}", conversation_ids=[stranger])
    html = _text(agent.lists(stranger))
    assert html.count("data-crm-ticket=") == 5 and "And 2 more" in html
    assert 'data-crm-count="tickets">7<' in html
    assert "Ticket 6" in html and "Ticket 0" not in html  # the newest first


def test_pages_of_another_organization_are_not_found(
    app: Flask, runner: FlaskCliRunner, wired: None, other_org: Org, conversation: str
) -> None:
    outsider = _sign_in(app, runner, other_org, "Gus Globex")
    assert outsider.records(conversation).status_code == 404
    assert outsider.lists(conversation).status_code == 404
    assert outsider.post(conversation, "tickets", subject="x", priority="normal").status_code == 404
    assert outsider.post(conversation, "deals", title="x", currency="MXN", stage="a:b").status_code == 404
    assert outsider.records("not-a-uuid").status_code == 404


def test_signed_out_requests_are_sent_to_sign_in(client: FlaskClient, conversation: str) -> None:
    response = client.get(f"/crm/conversation/{conversation}/records")
    assert response.status_code in (302, 401)
    assert response.status_code == 401 or "/signin" in response.headers["Location"]


# ---- creating from the conversation --------------------------------------------------------------------


def test_a_new_ticket_is_linked_to_the_conversation_and_seen_through_the_api(
    agent: Desk,
    crm: Crm,
    contact: dict[str, Any],
    conversation: str,
    commits: Callable[[], Any],
) -> None:
    with commits() as counted:
        response = agent.post(
            conversation,
            "tickets",
            subject="No llegó la factura",
            description="La pidió el 3 de noviembre.\n<script>alert(1)</script>",
            priority="urgent",
        )
    assert response.status_code == 200, _text(response)
    assert counted.count == 1
    [ticket] = crm.ok(crm.get("/tickets"))["data"]
    assert ticket["conversation_ids"] == [conversation]
    assert (ticket["title"], ticket["priority"], ticket["state"]) == ("No llegó la factura", "urgent", "new")
    assert (ticket["requester_id"], ticket["source"], ticket["channel"]) == (
        contact["id"],
        "channel",
        "whatsapp",
    )
    assert "<script>" not in ticket["body_html"] and "3 de noviembre." in ticket["body_html"]

    html = _text(response)
    # the lists now show it, the form comes back empty (out of band) and an alert says what happened
    assert html.lstrip().startswith('<div id="crm-records"')
    assert f'data-crm-ticket="{ticket["id"]}"' in html
    assert re.search(r'<details id="crm-new-ticket"[^>]*hx-swap-oob="true"', html)
    assert 'value="No llegó la factura"' not in html
    assert 'hx-swap-oob="afterbegin:#desk-alerts"' in html
    assert f"Ticket {ticket['reference']} created and linked to this conversation." in html


def test_a_new_deal_is_linked_to_the_conversation_with_its_summary(
    agent: Desk, crm: Crm, contact: dict[str, Any], conversation: str, commits: Callable[[], Any]
) -> None:
    pipeline = crm.pipeline()
    qualified = crm.stage(pipeline, "Qualified")
    with commits() as counted:
        response = agent.post(
            conversation,
            "deals",
            title="Plan empresarial",
            amount="1500.505",
            currency="usd",
            stage=f"{pipeline['id']}:{qualified['id']}",
        )
    assert response.status_code == 200, _text(response)
    assert counted.count == 1
    [deal] = crm.ok(crm.get("/deals"))["data"]
    assert (deal["name"], deal["amount"], deal["currency"]) == ("Plan empresarial", "1500.51", "USD")
    assert deal["stage"]["id"] == qualified["id"] and deal["owner_id"] == agent.member_id
    assert deal["contacts"] == [{"contact_id": contact["id"], "role": None, "is_primary": True}]
    [link] = deal["conversations"]
    assert (link["conversation_id"], link["channel"], link["linked_by"]) == (
        conversation,
        "whatsapp",
        agent.member_id,
    )
    # linking captured the conversation's summary into the deal's timeline
    assert "factura" in link["summary"].lower() or "plan empresarial" in link["summary"].lower()
    activities = crm.ok(crm.get(f"/deals/{deal['id']}/activities"))["data"]
    assert any(a["type"] == "conversation_linked" and a["summary"] == link["summary"] for a in activities)

    html = _text(response)
    assert f'data-crm-deal="{deal["id"]}"' in html and "$1,500.51" in html
    assert f"Deal {deal['reference']} created and linked to this conversation." in html


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"subject": "   ", "priority": "normal"}, "subject"),
        ({"subject": "x" * 501, "priority": "normal"}, "subject"),
        ({"subject": "Ok", "priority": "whenever"}, "priority"),
    ],
)
def test_a_refused_ticket_form_names_the_field_and_keeps_nothing(
    agent: Desk, crm: Crm, conversation: str, form: dict[str, str], field: str
) -> None:
    response = agent.post(conversation, "tickets", description="kept as typed", **form)
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#crm-new-ticket"
    assert response.headers["HX-Reswap"] == "outerHTML"
    html = _text(response)
    assert f'data-error-for="{field}"' in html and html.count("data-error-for=") == 1
    assert '<details id="crm-new-ticket" class="border rounded" open>' in html
    assert "kept as typed" in html  # what the agent typed is still there
    assert crm.ok(crm.get("/tickets"))["total"] == 0
    # the refusal used no ticket number
    assert crm.ticket()["number"] == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"title": ""}, "title"),
        ({"amount": "-5"}, "amount"),
        ({"amount": "mucho"}, "amount"),
        ({"amount": "1e30"}, "amount"),
        ({"currency": "XXX"}, "currency"),
        ({"stage": "nonsense"}, "stage"),
        # well-formed ids that name no pipeline of the organization: the service's 404, in the form
        ({"stage": "6f1f3c52-8d0e-4d4e-9a43-2b7c5f0c9e11:6f1f3c52-8d0e-4d4e-9a43-2b7c5f0c9e12"}, "stage"),
    ],
)
def test_a_refused_deal_form_names_the_field_and_keeps_nothing(
    agent: Desk, crm: Crm, conversation: str, changes: dict[str, str], field: str
) -> None:
    pipeline = crm.pipeline()
    form = {
        "title": "Plan",
        "amount": "10",
        "currency": "MXN",
        "stage": f"{pipeline['id']}:{pipeline['stages'][0]['id']}",
        **changes,
    }
    response = agent.post(conversation, "deals", **form)
    assert response.status_code == 422, _text(response)
    assert response.headers["HX-Retarget"] == "#crm-new-deal"
    html = _text(response)
    assert f'data-error-for="{field}"' in html and html.count("data-error-for=") == 1
    assert 'aria-invalid="true"' in html
    assert crm.ok(crm.get("/deals"))["total"] == 0


def test_a_service_refusal_no_field_explains_is_an_alert_and_keeps_nothing(
    agent: Desk, crm: Crm, conversation: str
) -> None:
    """The conversation vanished for the CRM between the page and the click (here: the messaging area
    stops knowing it): the service's 404 is shown in the desk's alert area, nothing is created."""
    with hooks.known_conversations.only(lambda **_: set()):
        response = agent.post(conversation, "tickets", subject="Factura", priority="normal")
    # a record that is not there keeps its 404 (swapped into the alert area like a 422: base.html)
    assert response.status_code == 404
    assert (response.headers["HX-Retarget"], response.headers["HX-Reswap"]) == ("#desk-alerts", "afterbegin")
    assert 'class="alert alert-danger' in _text(response) and "No Conversation found" in _text(response)
    assert crm.ok(crm.get("/tickets"))["total"] == 0


def test_a_stage_of_another_pipeline_is_refused_in_the_form(agent: Desk, crm: Crm, conversation: str) -> None:
    pipeline = crm.pipeline()
    other = crm.ok(crm.post("/pipelines", {"name": "Renewals", "key": "REN"}), 201)
    stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "Due", "stage_order": 0}), 201)
    response = agent.post(
        conversation, "deals", title="Plan", currency="MXN", stage=f"{pipeline['id']}:{stage['id']}"
    )
    assert response.status_code == 422 and 'data-error-for="stage"' in _text(response)
    assert crm.ok(crm.get("/deals"))["total"] == 0


def _deal_form(crm: Crm, **changes: str) -> dict[str, str]:
    pipeline = crm.pipeline()
    stage = f"{pipeline['id']}:{pipeline['stages'][0]['id']}"
    return {"title": "Plan", "amount": "10", "currency": "MXN", "stage": stage, **changes}


def _refusal_under(html: str, field: str) -> str:
    """The words shown under ``field`` (the only refused field)."""
    found = re.search(rf'data-error-for="{field}">([^<]*)</div>', html)
    assert found is not None and html.count("data-error-for=") == 1, html[:2000]
    return found.group(1)


@pytest.mark.parametrize(
    ("language", "what", "changes", "field", "words"),
    [
        ("en", "deals", {"amount": "mucho"}, "amount", "Write an amount of 0 or more, such as 1500.00."),
        ("es", "deals", {"amount": "-5"}, "amount", "Escribe un monto de 0 o más, por ejemplo 1500.00."),
        ("en", "deals", {"currency": "XXX"}, "currency", "Choose a currency from the list."),
        ("es", "deals", {"currency": "XXX"}, "currency", "Elige una moneda de la lista."),
        ("es", "deals", {"stage": "nonsense"}, "stage", "Elige una opción de la lista."),
        ("en", "tickets", {"subject": "x" * 501}, "subject", "Too long: up to 500 characters."),
        ("es", "tickets", {"subject": "x" * 501}, "subject", "Demasiado largo: hasta 500 caracteres."),
        ("es", "tickets", {"subject": "   "}, "subject", "Completa este campo."),
        ("en", "tickets", {"priority": "whenever"}, "priority", "Choose an option from the list."),
    ],
)
def test_a_refusal_is_worded_in_the_pages_language_next_to_its_field(
    agent: Desk,
    crm: Crm,
    conversation: str,
    language: str,
    what: str,
    changes: dict[str, str],
    field: str,
    words: str,
) -> None:
    """The verb refuses with a code and the wire's field; the form shows the code's words (refusals.py) in
    the page's language under its own field, never the API's English message."""
    form = (
        _deal_form(crm, **changes)
        if what == "deals"
        else {"subject": "Factura", "priority": "normal", **changes}
    )
    response = agent.post(conversation, what, language=language, **form)
    assert response.status_code == 422, _text(response)
    assert _refusal_under(_text(response), field) == str(escape(words))
    assert "Input should be" not in _text(response) and "String should have" not in _text(response)


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "Choose a stage of the deal&#39;s pipeline."), ("es", "Elige una etapa del embudo del negocio.")],
)
def test_a_verbs_own_refusal_is_placed_by_its_field_in_both_languages(
    agent: Desk, crm: Crm, conversation: str, language: str, words: str
) -> None:
    """A rule of the verb itself (the stage belongs to another pipeline: ``stage_other_pipeline`` on
    ``stage_id``) lands under the form's ``stage`` select, worded in the page's language."""
    pipeline = crm.pipeline()
    other = crm.ok(crm.post("/pipelines", {"name": "Renewals", "key": "REN"}), 201)
    stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "Due", "stage_order": 0}), 201)
    form = _deal_form(crm, stage=f"{pipeline['id']}:{stage['id']}")
    response = agent.post(conversation, "deals", language=language, **form)
    assert response.status_code == 422
    assert _refusal_under(_text(response), "stage") == words
    assert "belongs to another pipeline" not in _text(response)
    assert crm.ok(crm.get("/deals"))["total"] == 0


def test_an_alert_is_worded_in_the_pages_language(agent: Desk, crm: Crm, conversation: str) -> None:
    """A refusal no field explains (a conversation the CRM does not know) is an alert in the page's
    language."""
    with hooks.known_conversations.only(lambda **_: set()):
        response = agent.post(conversation, "tickets", language="es", subject="Factura", priority="normal")
    assert response.status_code == 404 and "No se encontró la conversación" in _text(response)


def test_the_fragment_costs_the_same_queries_for_one_and_ten_records(
    agent: Desk, crm: Crm, contact: dict[str, Any], conversation: str, queries: Callable[[], Any]
) -> None:
    def add(n: int) -> None:
        for i in range(n):
            crm.deal(name=f"Deal {i}", owner_id=agent.member_id, contacts=[{"contact_id": contact["id"]}])
            crm.ticket(title=f"Ticket {i}", requester_id=contact["id"], conversation_ids=[conversation])
            crm.task(title=f"Task {i}", contact_id=contact["id"], owner_id=agent.member_id)

    def count() -> list[str]:
        with queries() as counted:
            section = agent.records(conversation)
            lists = agent.lists(conversation)
        assert section.status_code == 200 and lists.status_code == 200
        return [statement.split("FROM", 1)[-1][:60] for statement in counted.statements]

    add(1)
    one = count()
    add(9)
    ten = count()
    assert len(ten) == len(one), "\n".join([*one, "----", *ten])
    assert _text(agent.lists(conversation)).count("data-crm-deal=") == 5


def test_the_sandbox_desk_has_its_own_crm_records(
    app: Flask,
    runner: FlaskCliRunner,
    wired: None,
    org: Org,
    wa: Channel,
    deliver: Deliver,
    client: FlaskClient,
    conversation: str,
) -> None:
    _incoming(deliver, "Hola desde pruebas", prefix="/sandbox")
    sandboxed = _conversation(client, org, env="sandbox")
    desk = _sign_in(app, runner, org, "Sara Sandbox", env="sandbox")
    assert desk.records(conversation).status_code == 404  # the live conversation is not in the sandbox
    html = _text(desk.records(sandboxed))
    assert "/sandbox/crm/conversation/" in html and "Nothing open in the CRM for this person." in html
    response = desk.post(sandboxed, "tickets", subject="Prueba", priority="low")
    assert response.status_code == 200, _text(response)
    sandbox_tickets = client.get(
        f"/sandbox/v1/crm/organizations/{org.id}/tickets", headers=org.headers("sandbox")
    ).get_json()
    assert [t["conversation_ids"] for t in sandbox_tickets["data"]] == [[sandboxed]]
    live = client.get(f"/v1/crm/organizations/{org.id}/tickets", headers=org.headers()).get_json()
    assert live["total"] == 0
