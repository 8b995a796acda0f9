"""The CRM pages follow changes made elsewhere (the JSON API standing for another browser), in a real Chromium
and without a reload, each within a couple of seconds: a deal created elsewhere appears in its column with the
column's count and total; a move updates both columns' heads; a deal whose owner changed leaves a board
filtered by owner (and comes back), the heads following; a card being dragged is not yanked away; a stage
created after the board was shown gets its column when a deal lands in it (no console error); the list view
follows deals created, moved, edited, given away and deleted elsewhere (a new one at its place in the list's
order); an open deal drawer (and the deal's page) shows a stage or amount change, but not in the section where
the agent has the focus until the focus leaves it, keeps what was typed, and says so when the deal is deleted;
a reconnect shows the board and the drawer again; a ticket created elsewhere joins its board, a ticket
filtered out leaves it, and an open ticket drawer shows a state, a priority and a task changed elsewhere;
tasks created and completed elsewhere show and move in an open task list, the rail's overdue badge following.
No console error."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from tests.browser.conftest import DeskLogin, sign_in, wait_for_htmx
from tests.conftest import Org

LIVE_WITHIN_MS = 2500  # "within about two seconds", with a little room for a busy machine
WIDE = {"width": 1600, "height": 900}


def crm(client: FlaskClient, org: Org, method: str, suffix: str, **body: Any) -> Any:
    sent = {"query_string": body} if method == "GET" else {"json": body or None}
    response = client.open(
        f"/v1/crm/organizations/{org.id}{suffix}", method=method, headers=org.headers(), **sent
    )
    assert response.status_code < 300, response.get_json()
    return response.get_json()


class Shop:
    """Ana's and Luis's deals over the default pipeline, a few tickets, and the way to change them through
    the API."""

    def __init__(self, client: FlaskClient, org: Org, ana: DeskLogin, luis: DeskLogin) -> None:
        self.client, self.org, self.ana, self.luis = client, org, ana, luis
        self.pipeline = crm(client, org, "GET", "/pipelines")["data"][0]
        self.stages = {stage["name"]: stage["id"] for stage in self.pipeline["stages"]}
        self.deals = {
            name: self.deal(name, stage, amount, owner)
            for name, stage, amount, owner in (
                ("Plan empresarial 20 líneas", "New", "12500.50", ana),
                ("Roaming USA para la flotilla", "New", "3000", ana),
                ("Renovación anual de 45 licencias", "Qualified", "24300", ana),
                ("Chatbot de citas", "Proposal", "15750", ana),
                ("Paquete de mensajes de Luis", "Qualified", "3100", luis),
            )
        }

    def api(self, method: str, suffix: str, **body: Any) -> Any:
        return crm(self.client, self.org, method, suffix, **body)

    def deal(self, name: str, stage: str, amount: str, owner: DeskLogin) -> dict[str, Any]:
        return self.api(  # type: ignore[no-any-return]
            "POST",
            "/deals",
            name=name,
            pipeline_id=self.pipeline["id"],
            stage_id=self.stages[stage],
            amount=amount,
            currency="MXN",
            owner_id=owner.member_id,
        )


@pytest.fixture
def ana(org: Org, make_user: Callable[..., DeskLogin]) -> DeskLogin:
    return make_user(org, "Ana Agent")


@pytest.fixture
def luis(org: Org, make_user: Callable[..., DeskLogin]) -> DeskLogin:
    return make_user(org, "Luis Ventas")


@pytest.fixture
def shop(client: FlaskClient, org: Org, ana: DeskLogin, luis: DeskLogin) -> Shop:
    return Shop(client, org, ana, luis)


def open_page(new_context: Callable[..., Any], login: DeskLogin, path: str) -> Any:
    page = new_context().new_page()
    page.set_viewport_size(WIDE)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.wait_for_selector("body[data-live=on]")
    wait_for_htmx(page)
    return page


def head(page: Any, shop: Shop, stage: str) -> Any:
    return page.locator(f"#deals-head-{shop.stages[stage]}")


def count_is(page: Any, shop: Shop, stage: str, expected: int) -> None:
    page.wait_for_function(
        "([id, n]) => document.querySelector(`#deals-head-${id} .deals-count`)?.textContent.trim() === n",
        arg=[shop.stages[stage], str(expected)],
        timeout=LIVE_WITHIN_MS,
    )


def card_in(page: Any, shop: Shop, deal_id: str, stage: str) -> None:
    """Until the deal's card is in the stage's column (and only there)."""
    page.wait_for_function(
        "([id, stage]) => { const cards = document.querySelectorAll(`[data-deal-id='${id}']`);"
        " return cards.length === 1 && cards[0].closest('[data-column]')?.dataset.stageId === stage; }",
        arg=[deal_id, shop.stages[stage]],
        timeout=LIVE_WITHIN_MS,
    )


def no_card(page: Any, selector: str) -> None:
    page.wait_for_function(
        "(selector) => document.querySelector(selector) === null", arg=selector, timeout=LIVE_WITHIN_MS
    )


# ---- the deal board ------------------------------------------------------------------------------------


def test_a_deal_created_elsewhere_appears_in_its_column_with_the_heads(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")
    assert head(page, shop, "Qualified").locator(".deals-count").inner_text() == "1"  # Luis's is not mine
    assert "MX$24,300.00" in head(page, shop, "Qualified").locator(".deals-total").inner_text()
    created = shop.deal("Expansión a Colombia", "Qualified", "1700", ana)
    card_in(page, shop, created["id"], "Qualified")
    count_is(page, shop, "Qualified", 2)
    assert "MX$26,000.00" in head(page, shop, "Qualified").locator(".deals-total").inner_text()
    assert "MX$" in page.locator("#deals-totals").inner_text()
    # newest first: at the top of its column, with its amount
    first = page.locator(f'[data-stage-id="{shop.stages["Qualified"]}"] [data-card]').first
    assert first.get_attribute("data-deal-id") == created["id"]
    assert "MX$1,700.00" in first.inner_text()
    # a deal of another pipeline, or Luis's, does not appear on Ana's board
    theirs = shop.deal("Otra de Luis", "New", "10", shop.luis)
    page.wait_for_timeout(800)
    assert page.locator(f'[data-deal-id="{theirs["id"]}"]').count() == 0
    assert head(page, shop, "New").locator(".deals-count").inner_text() == "2"
    assert page.errors == []


def test_a_deal_moved_elsewhere_updates_both_columns_heads(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")
    deal = shop.deals["Plan empresarial 20 líneas"]
    assert head(page, shop, "New").locator(".deals-count").inner_text() == "2"
    shop.api("PATCH", f"/deals/{deal['id']}/stage", stage_id=shop.stages["Negotiation"])
    card_in(page, shop, deal["id"], "Negotiation")
    count_is(page, shop, "New", 1)
    count_is(page, shop, "Negotiation", 1)
    assert "MX$3,000.00" in head(page, shop, "New").locator(".deals-total").inner_text()
    assert "MX$12,500.50" in head(page, shop, "Negotiation").locator(".deals-total").inner_text()
    # deleted elsewhere: the card goes, and its column's head follows
    shop.api("DELETE", f"/deals/{deal['id']}")
    no_card(page, f'[data-deal-id="{deal["id"]}"]')
    count_is(page, shop, "Negotiation", 0)
    assert page.errors == []


def test_a_deal_whose_owner_changed_leaves_a_board_filtered_by_owner_and_comes_back(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")  # "My deals": the board filters by owner
    deal = shop.deals["Renovación anual de 45 licencias"]
    shop.api("PATCH", f"/deals/{deal['id']}", owner_id=shop.luis.member_id)
    no_card(page, f'[data-deal-id="{deal["id"]}"]')
    count_is(page, shop, "Qualified", 0)
    # Luis's deal given to Ana now matches the filters: it joins the board
    theirs = shop.deals["Paquete de mensajes de Luis"]
    shop.api("PATCH", f"/deals/{theirs['id']}", owner_id=ana.member_id)
    card_in(page, shop, theirs["id"], "Qualified")
    count_is(page, shop, "Qualified", 1)
    assert "MX$3,100.00" in head(page, shop, "Qualified").locator(".deals-total").inner_text()
    assert page.errors == []


def test_a_card_being_dragged_is_not_yanked_away(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")
    deal = shop.deals["Chatbot de citas"]
    card = page.locator(f'[data-deal-id="{deal["id"]}"]')
    card.evaluate("card => { card.dataset.original = '1'; }")
    grip = card.locator(".deal-card-amount")
    box = grip.bounding_box()
    page.mouse.move(box["x"] + 10, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2 + 5, steps=5)
    page.mouse.move(box["x"] + 30, box["y"] + box["height"] / 2 + 20, steps=5)
    # changed elsewhere while the agent holds it: the card stays the one in hand
    shop.api("PATCH", f"/deals/{deal['id']}", amount="16000")
    page.wait_for_timeout(1200)
    assert card.get_attribute("data-original") == "1"
    assert "MX$15,750.00" in card.locator(".deal-card-amount").inner_text()
    page.mouse.up()
    # dropped: now it is refreshed
    page.wait_for_function(
        "(id) => document.querySelector(`[data-deal-id='${id}'] .deal-card-amount`)?.textContent"
        ".includes('16,000.00')",
        arg=deal["id"],
        timeout=LIVE_WITHIN_MS,
    )
    card_in(page, shop, deal["id"], "Proposal")
    assert page.errors == []


def test_a_stage_created_after_the_board_was_shown_gets_its_column(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    """A live answer naming a stage the board has no column for (created since the board was shown): the
    board is shown again with the new column and the deal in it, and no console error (htmx would report
    a column head with nowhere to go)."""
    page = open_page(new_context, ana, "/deals")
    columns = page.locator("[data-column][data-stage-id]")
    assert columns.count() == len(shop.stages)
    stage = shop.api(
        "POST",
        f"/pipelines/{shop.pipeline['id']}/stages",
        name="Demo agendada",
        stage_order=2,
        probability=40,
    )
    created = shop.api(
        "POST",
        "/deals",
        name="Demo para la cadena de farmacias",
        pipeline_id=shop.pipeline["id"],
        stage_id=stage["id"],
        amount="8800",
        currency="MXN",
        owner_id=ana.member_id,
    )
    card = page.locator(f'[data-stage-id="{stage["id"]}"] [data-deal-id="{created["id"]}"]')
    card.wait_for(timeout=LIVE_WITHIN_MS)
    assert columns.count() == len(shop.stages) + 1
    # in the pipeline's order: after the second stage
    assert columns.nth(2).get_attribute("data-stage-id") == stage["id"]
    head = page.locator(f"#deals-head-{stage['id']}")
    assert head.locator(".deals-count").inner_text() == "1"
    assert "MX$8,800.00" in head.locator(".deals-total").inner_text()
    # a deal moved into it elsewhere joins it like any other column
    moved = shop.deals["Chatbot de citas"]
    shop.api("PATCH", f"/deals/{moved['id']}/stage", stage_id=stage["id"])
    page.locator(f'[data-stage-id="{stage["id"]}"] [data-deal-id="{moved["id"]}"]').wait_for(
        timeout=LIVE_WITHIN_MS
    )
    page.wait_for_function(
        "(id) => document.querySelector(`#deals-head-${id} .deals-count`)?.textContent.trim() === '2'",
        arg=stage["id"],
        timeout=LIVE_WITHIN_MS,
    )
    # a stage deleted elsewhere (its deals moved first): its column goes with the next live answer
    shop.api("DELETE", f"/pipelines/stages/{stage['id']}?move_to_stage_id={shop.stages['New']}")
    shop.api("PATCH", f"/deals/{moved['id']}", amount="15800")
    page.wait_for_function(
        "(id) => !document.querySelector(`[data-stage-id='${id}']`)", arg=stage["id"], timeout=LIVE_WITHIN_MS
    )
    card_in(page, shop, moved["id"], "New")
    assert columns.count() == len(shop.stages)
    assert page.errors == []


# ---- the deal list view --------------------------------------------------------------------------------


def row(page: Any, deal_id: str) -> Any:
    return page.locator(f'[data-deal-list] tr[data-deal-id="{deal_id}"]')


def test_the_deal_list_follows_deals_created_moved_and_edited_elsewhere(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    """The list view (the board's table) in one browser, the deals changed elsewhere (the API standing for
    another browser): a deal created appears at its place in the list's order with the totals; a move and
    an edit update its row in place; a deal that leaves the list's filters, or is deleted, leaves it."""
    page = open_page(new_context, ana, "/deals?view=list")
    rows = page.locator("[data-deal-list] tbody tr[data-deal-id]")
    assert rows.count() == 4  # Ana's ("My deals"), newest first
    totals = page.locator("#deals-totals")
    assert "MX$55,550.50" in totals.inner_text()

    created = shop.deal("Expansión a Colombia", "Qualified", "1700", ana)
    row(page, created["id"]).wait_for(timeout=LIVE_WITHIN_MS)
    assert rows.first.get_attribute("data-deal-id") == created["id"]  # newest first
    assert rows.count() == 5
    assert "MX$1,700.00" in row(page, created["id"]).inner_text()
    page.locator("#deals-totals", has_text="MX$57,250.50").wait_for(timeout=LIVE_WITHIN_MS)
    # one of Luis's does not join Ana's list
    theirs = shop.deal("Otra de Luis", "New", "10", shop.luis)

    # moved to Won elsewhere: the row says so where it is
    deal = shop.deals["Chatbot de citas"]
    shop.api("PATCH", f"/deals/{deal['id']}/stage", stage_id=shop.stages["Won"])
    row(page, deal["id"]).locator(".deal-status-won").wait_for(timeout=LIVE_WITHIN_MS)
    assert "Won" in row(page, deal["id"]).locator("td").nth(3).inner_text()
    # edited elsewhere: amount and name, the totals following
    shop.api("PATCH", f"/deals/{created['id']}", amount="2500", name="Expansión a Colombia y Perú")
    page.wait_for_function(
        "(id) => document.querySelector(`[data-deal-list] tr[data-deal-id='${id}']`)?.textContent"
        ".includes('MX$2,500.00')",
        arg=created["id"],
        timeout=LIVE_WITHIN_MS,
    )
    assert "Colombia y Perú" in row(page, created["id"]).inner_text()
    page.locator("#deals-totals", has_text="MX$58,050.50").wait_for(timeout=LIVE_WITHIN_MS)

    # given to Luis: no longer one of Ana's; deleted: gone
    shop.api("PATCH", f"/deals/{created['id']}", owner_id=shop.luis.member_id)
    no_card(page, f'[data-deal-list] tr[data-deal-id="{created["id"]}"]')
    gone = shop.deals["Roaming USA para la flotilla"]
    shop.api("DELETE", f"/deals/{gone['id']}")
    no_card(page, f'[data-deal-list] tr[data-deal-id="{gone["id"]}"]')
    page.wait_for_function(
        "() => document.querySelectorAll('[data-deal-list] tbody tr[data-deal-id]').length === 3",
        timeout=LIVE_WITHIN_MS,
    )
    assert row(page, theirs["id"]).count() == 0
    assert page.errors == []


def test_the_deal_list_sorted_by_amount_puts_a_new_deal_in_its_place(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals?view=list&owner=all&sort=amount&dir=desc")
    rows = page.locator("[data-deal-list] tbody tr[data-deal-id]")
    assert rows.count() == 5
    # the agent is on the sort header when the list is fetched again: the focus stays there
    page.locator("[data-deal-list] thead th[aria-sort] a").focus()
    created = shop.deal("Red privada para la planta", "New", "20000", shop.luis)
    row(page, created["id"]).wait_for(timeout=LIVE_WITHIN_MS)
    # between 24,300 and 15,750: second
    assert rows.nth(1).get_attribute("data-deal-id") == created["id"]
    assert (
        page.evaluate("() => document.activeElement.closest('th')?.getAttribute('aria-sort')") == "descending"
    )
    assert page.errors == []


# ---- the deal drawer -----------------------------------------------------------------------------------


def test_the_deal_drawer_follows_changes_but_not_where_the_agent_has_the_focus(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")
    deal = shop.deals["Chatbot de citas"]
    page.locator(f'[data-deal-id="{deal["id"]}"] .deal-card-name').click()
    page.locator("#deal-drawer.show #deal-details").wait_for()
    wait_for_htmx(page)
    amount = page.locator("#deal-amount")
    assert amount.inner_text().strip() == "MX$15,750.00"

    # an amount changed elsewhere shows at once, in the headline, the field and the timeline
    shop.api("PATCH", f"/deals/{deal['id']}", amount="18000")
    page.wait_for_function(
        "() => document.querySelector('#deal-amount').textContent.trim() === 'MX$18,000.00'",
        timeout=LIVE_WITHIN_MS,
    )
    assert page.locator("#deal-amount-input").input_value() == "18000"
    page.locator("#deal-timeline", has_text="Amount:").wait_for(timeout=LIVE_WITHIN_MS)

    # the agent is in the title field: the details wait, the other sections do not
    page.locator("#deal-name").focus()
    shop.api("PATCH", f"/deals/{deal['id']}/stage", stage_id=shop.stages["Negotiation"])
    page.locator("#deal-timeline", has_text="Moved to Negotiation").wait_for(timeout=LIVE_WITHIN_MS)
    page.wait_for_timeout(500)
    assert page.locator("#deal-stage").input_value() == shop.stages["Proposal"]
    assert page.evaluate("() => document.activeElement.id") == "deal-name"
    # the focus leaves the section: it follows
    page.locator("#deal-note").focus()
    page.wait_for_function(
        "(stage) => document.querySelector('#deal-stage').value === stage",
        arg=shop.stages["Negotiation"],
        timeout=LIVE_WITHIN_MS,
    )

    # a note being typed is kept while a note from elsewhere arrives, and after the focus leaves
    page.locator("#deal-note").fill("Borrador de la llamada")
    shop.api("POST", f"/deals/{deal['id']}/notes", body="Llamaron para pedir otra demo")
    page.wait_for_timeout(1000)
    assert page.locator("#deal-timeline", has_text="Llamaron para pedir otra demo").count() == 0
    page.locator("#deal-name").focus()
    page.locator("#deal-timeline", has_text="Llamaron para pedir otra demo").wait_for(timeout=LIVE_WITHIN_MS)
    assert page.locator("#deal-note").input_value() == "Borrador de la llamada"

    # a task of the deal created elsewhere
    shop.api(
        "POST", "/tasks", title="Enviar la propuesta firmada", deal_id=deal["id"], owner_id=ana.member_id
    )
    page.locator("#deal-tasks", has_text="Enviar la propuesta firmada").wait_for(timeout=LIVE_WITHIN_MS)

    # deleted elsewhere: the drawer says so instead of showing what is gone
    page.locator("#deal-drawer .btn-close").focus()
    shop.api("DELETE", f"/deals/{deal['id']}")
    page.locator("#deal-drawer [data-live-gone-notice]", has_text="This deal was deleted").wait_for(
        timeout=LIVE_WITHIN_MS
    )
    assert page.locator("#deal-drawer #deal-details").count() == 0
    no_card(page, f'[data-deal-id="{deal["id"]}"]')
    assert page.errors == []


def test_the_deals_own_page_follows_it_too(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    deal = shop.deals["Roaming USA para la flotilla"]
    page = open_page(new_context, ana, f"/deals/{deal['id']}")
    shop.api("PATCH", f"/deals/{deal['id']}/stage", stage_id=shop.stages["Won"])
    page.wait_for_function(
        "(stage) => document.querySelector('#deal-stage').value === stage",
        arg=shop.stages["Won"],
        timeout=LIVE_WITHIN_MS,
    )
    page.locator("#deal-details .deal-status-won").wait_for(timeout=LIVE_WITHIN_MS)
    # the page keeps its heading levels
    assert page.locator("h2#deal-tasks-title").count() == 1
    assert page.errors == []


def test_a_reconnect_shows_the_board_and_the_drawer_again(
    app: Flask, shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/deals")
    deal = shop.deals["Chatbot de citas"]
    page.locator(f'[data-deal-id="{deal["id"]}"] .deal-card-name').click()
    page.locator("#deal-drawer.show #deal-details").wait_for()
    wait_for_htmx(page)
    # a change the page never heard of (written to the store with no event, as while it was offline)
    from blueprints.crm.models import Deal  # the test writes a row behind the services' back
    from core.db import db

    with app.app_context():
        db.session.execute(update(Deal).where(Deal.id == uuid.UUID(deal["id"])).values(amount=Decimal("99")))
        db.session.commit()
    page.evaluate("() => document.body.dispatchEvent(new CustomEvent('desk:reconnected', {bubbles: true}))")
    page.wait_for_function(
        "(id) => document.querySelector(`[data-deal-id='${id}'] .deal-card-amount`)?.textContent"
        ".includes('MX$99.00')",
        arg=deal["id"],
        timeout=LIVE_WITHIN_MS,
    )
    page.wait_for_function(
        "() => document.querySelector('#deal-amount').textContent.trim() === 'MX$99.00'",
        timeout=LIVE_WITHIN_MS,
    )
    assert "MX$99.00" in head(page, shop, "Proposal").locator(".deals-total").inner_text()
    assert page.errors == []


# ---- the ticket board and drawer ------------------------------------------------------------------------


def ticket_count(page: Any, state: str) -> str:
    return str(page.locator(f"#board-head-{state} [data-count]").get_attribute("data-count"))


def test_tickets_created_or_filtered_out_elsewhere_join_or_leave_the_board(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    mine = shop.api(
        "POST", "/tickets", title="Sin señal en Puebla", source="api", assignee_member_id=ana.member_id
    )
    page = open_page(new_context, ana, f"/tickets?assignee={ana.member_id}")
    assert ticket_count(page, "new") == "1"
    created = shop.api(
        "POST", "/tickets", title="Factura duplicada", source="api", assignee_member_id=ana.member_id
    )
    page.locator(f'[data-state="new"] [data-card]:first-child[data-ticket-id="{created["id"]}"]').wait_for(
        timeout=LIVE_WITHIN_MS
    )
    page.wait_for_function(
        "() => document.querySelector('#board-head-new [data-count]').dataset.count === '2'",
        timeout=LIVE_WITHIN_MS,
    )
    # one for Luis does not join a board filtered by Ana
    theirs = shop.api(
        "POST", "/tickets", title="De Luis", source="api", assignee_member_id=shop.luis.member_id
    )
    # Ana's first ticket given to Luis leaves it, and the heads follow
    shop.api("PATCH", f"/tickets/{mine['id']}/assign", assignee_member_id=shop.luis.member_id)
    no_card(page, f'[data-ticket-id="{mine["id"]}"]')
    page.wait_for_function(
        "() => document.querySelector('#board-head-new [data-count]').dataset.count === '1'",
        timeout=LIVE_WITHIN_MS,
    )
    assert page.locator(f'[data-ticket-id="{theirs["id"]}"]').count() == 0
    assert page.errors == []


def test_an_open_ticket_drawer_follows_its_ticket(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    ticket = shop.api("POST", "/tickets", title="eSIM de viaje no activa", source="api")
    page = open_page(new_context, ana, "/tickets")
    page.locator(f'[data-ticket-id="{ticket["id"]}"] .ticket-card-link').click()
    drawer = page.locator("#ticket-drawer.show")
    drawer.locator(f'[data-ticket-drawer="{ticket["id"]}"]').wait_for()
    wait_for_htmx(page)
    shop.api("PATCH", f"/tickets/{ticket['id']}/state", state="waiting_on_customer")
    page.wait_for_function(
        "() => document.querySelector('#ticket-state').value === 'waiting_on_customer'",
        timeout=LIVE_WITHIN_MS,
    )
    drawer.locator("[data-history-to=waiting_on_customer]").wait_for(timeout=LIVE_WITHIN_MS)
    # the agent is choosing a priority: that field waits, a task added elsewhere does not
    page.locator("#ticket-priority").focus()
    shop.api(
        "PATCH", f"/tickets/{ticket['id']}", priority="urgent", title="eSIM de viaje no activa en Madrid"
    )
    shop.api("POST", "/tasks", title="Llamar al cliente", ticket_id=ticket["id"])
    drawer.locator("#ticket-part-tasks", has_text="Llamar al cliente").wait_for(timeout=LIVE_WITHIN_MS)
    drawer.locator("#ticket-drawer-title", has_text="en Madrid").wait_for(timeout=LIVE_WITHIN_MS)
    assert page.locator("#ticket-priority").input_value() == "normal"
    page.locator("#ticket-part-tasks summary").focus()
    page.wait_for_function(
        "() => document.querySelector('#ticket-priority').value === 'urgent'", timeout=LIVE_WITHIN_MS
    )
    # and its card on the board behind it
    page.locator(f'[data-ticket-id="{ticket["id"]}"][data-priority="urgent"]').wait_for(
        state="attached", timeout=LIVE_WITHIN_MS
    )
    assert page.errors == []


# ---- the task list ---------------------------------------------------------------------------------------


def test_tasks_created_and_completed_elsewhere_show_and_move_in_an_open_list(
    shop: Shop, ana: DeskLogin, new_context: Callable[..., Any]
) -> None:
    page = open_page(new_context, ana, "/tasks")
    badge = page.locator("#nav-badge-tasks")
    assert badge.get_attribute("hidden") is not None
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    task = shop.api(
        "POST", "/tasks", title="Devolver la llamada a Rosa", owner_id=ana.member_id, due_date=yesterday
    )
    page.locator(f'#task-list [data-group=overdue] [data-task="{task["id"]}"]').wait_for(
        timeout=LIVE_WITHIN_MS
    )
    page.wait_for_function(
        "() => !document.getElementById('nav-badge-tasks').hidden"
        " && document.getElementById('nav-badge-tasks').textContent.trim() === '1'",
        timeout=LIVE_WITHIN_MS,
    )
    # completed elsewhere a moment later (the rail's own trigger is throttled to one request per 3 s)
    shop.api("PATCH", f"/tasks/{task['id']}/complete")
    page.locator(f'#task-list [data-group=done] [data-task="{task["id"]}"]').wait_for(timeout=LIVE_WITHIN_MS)
    page.wait_for_function("() => document.getElementById('nav-badge-tasks').hidden", timeout=LIVE_WITHIN_MS)
    # deleted elsewhere: it leaves the list
    shop.api("DELETE", f"/tasks/{task['id']}")
    no_card(page, f'#task-list [data-task="{task["id"]}"]')
    assert page.errors == []
