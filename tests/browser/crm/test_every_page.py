"""Every CRM page in a real Chromium, in English and Spanish, with a little of everything in it: the deal
board and its list view, a deal as a page, the pipelines editor, the ticket board and its list view, a
ticket as a page, the task list, the contacts, a contact's page and an account's page. None logs a
console error, none has a serious or critical accessibility violation (axe-core), no id names two
elements. (Each page's own behaviour is in the other tests of this folder.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.browser.conftest import DeskLogin, axe_violations, sign_in, wait_for_htmx
from tests.conftest import Org


def crm(client: FlaskClient, org: Org, method: str, suffix: str, **body: Any) -> Any:
    sent = {"query_string": body} if method == "GET" else {"json": body or None}
    response = client.open(
        f"/v1/crm/organizations/{org.id}{suffix}", method=method, headers=org.headers(), **sent
    )
    assert response.status_code < 300, response.get_json()
    return response.get_json()


@pytest.fixture
def records(client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin]) -> dict[str, Any]:
    sara = make_user(org, "Sara Supervisora", role="supervisor")
    contact = crm(
        client,
        org,
        "POST",
        "/contacts",
        name="María Fernanda Gutiérrez",
        identities=[{"kind": "phone", "value": "+5215512345678"}],
    )
    account = crm(client, org, "POST", "/accounts", name="Pluma Dorada Papelerías S.A. de C.V.")
    crm(client, org, "POST", f"/accounts/{account['id']}/contacts", contact_id=contact["id"], role="Compras")
    pipeline = crm(client, org, "GET", "/pipelines")["data"][0]
    product = crm(client, org, "POST", "/products", name="Licencia de agente (mensual)", price="450")
    deal = crm(
        client,
        org,
        "POST",
        "/deals",
        name="Renovación anual de 45 licencias",
        pipeline_id=pipeline["id"],
        stage_id=pipeline["stages"][1]["id"],
        owner_id=sara.member_id,
        account_id=account["id"],
        contacts=[{"contact_id": contact["id"], "is_primary": True}],
    )
    crm(
        client,
        org,
        "POST",
        f"/deals/{deal['id']}/line-items",
        name=product["name"],
        product_id=product["id"],
        quantity="45",
        unit_price="450",
        discount="1000",
    )
    ticket = crm(
        client,
        org,
        "POST",
        "/tickets",
        title="Factura de octubre duplicada",
        source="api",
        priority="high",
        requester_id=contact["id"],
        body_html="<p>Nos llegó la factura <strong>dos veces</strong>.</p>",
    )
    crm(client, org, "POST", "/tasks", title="Enviar la cotización firmada", deal_id=deal["id"],
        owner_id=sara.member_id, due_date="2031-01-15")  # fmt: skip
    crm(client, org, "POST", "/tasks", title="Llamar por la factura", ticket_id=ticket["id"],
        contact_id=contact["id"], owner_id=sara.member_id)  # fmt: skip
    return {"sara": sara, "deal": deal, "ticket": ticket, "contact": contact, "account": account}


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_every_crm_page_without_a_console_error_or_a_serious_violation(
    locale: str, records: dict[str, Any], new_context: Callable[..., Any]
) -> None:
    page = new_context(locale=locale).new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    sign_in(page, records["sara"])
    page.wait_for_url("**/desk")
    paths = (
        "/deals",
        "/deals?view=list",
        f"/deals/{records['deal']['id']}",
        "/deals/pipelines",
        "/tickets",
        "/tickets?view=list",
        f"/tickets/{records['ticket']['id']}",
        "/tasks",
        "/contacts",
        f"/contacts/{records['contact']['id']}",
        f"/accounts/{records['account']['id']}",
    )
    for path in paths:
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        page.wait_for_selector("body[data-live=on]")
        wait_for_htmx(page)
        assert axe_violations(page) == [], path
        duplicated = page.evaluate(
            "() => { const seen = {};"
            " document.querySelectorAll('[id]').forEach(e => seen[e.id] = (seen[e.id] || 0) + 1);"
            " return Object.keys(seen).filter(k => seen[k] > 1); }"
        )
        assert duplicated == [], path
    assert errors == []
