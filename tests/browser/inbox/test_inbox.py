"""The inbox as an agent uses it, in a real Chromium: live messages, replies and their status marks,
templates when the window is closed, notes, the side panel, presence, drafts, both languages, tenancy and
hostile text."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from playwright.sync_api import expect

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in
from tests.browser.inbox.data import api, conversation_of, incoming, mem, seed_inbox
from tests.conftest import Org
from tests.fakes.fixtures import PHONE_NUMBER_ID, Deliver
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_status, wa_text

LIVE_WITHIN_MS = 2000
# The customer's photo of the seeded data (this network reaches no outside host): a parcel, drawn.
PARCEL = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="220" viewBox="0 0 320 220">'
    '<rect width="320" height="220" fill="#e9eef3"/><rect x="70" y="60" width="180" height="120" rx="6" '
    'fill="#c8a06a" stroke="#8a6a3d" stroke-width="4"/><rect x="148" y="60" width="24" height="120" '
    'fill="#e6d3a8"/><path d="M70 100 L250 150" stroke="#8a6a3d" stroke-width="3" '
    'stroke-dasharray="8 6"/></svg>'
)


def open_inbox(
    new_context: Callable[..., Any], login: DeskLogin, path: str = "/inbox", **options: Any
) -> Any:
    viewport = options.pop("viewport", None)
    page = new_context(**options).new_page()
    if viewport:
        page.set_viewport_size(viewport)
    page.route(
        "https://example.com/**", lambda route: route.fulfill(body=PARCEL, content_type="image/svg+xml")
    )
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.wait_for_selector("body[data-live=on]")
    return page


@pytest.fixture
def agent(make_user: Callable[..., DeskLogin], org: Org) -> DeskLogin:
    return make_user(org, "Ana Agent")


def test_an_incoming_message_appears_live_and_its_conversation_moves_to_the_top(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    now = int(time.time())
    incoming(deliver, "5215511110001", "First customer", name="Ximena Oldest", timestamp=str(now - 30))
    incoming(deliver, "5215511110002", "Second customer", name="Yago Middle", timestamp=str(now - 20))
    incoming(deliver, "5215511110003", "Third customer", name="Zoe Newest", timestamp=str(now - 10))
    oldest = conversation_of(client, org, "5215511110001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{oldest}")
    assert page.locator("#rows .conv-row").first.get_attribute("data-conversation") != oldest
    page.evaluate("window.__sameDocument = true")

    incoming(deliver, "5215511110001", "Are you there? <b>now</b>")
    started = time.monotonic()
    page.locator("#thread .msg-in .msg-text", has_text="Are you there? <b>now</b>").wait_for(
        timeout=LIVE_WITHIN_MS
    )
    # Predicates are functions: Playwright evals a bare expression in the page, which the CSP refuses.
    page.wait_for_function(
        f"() => document.querySelector('#rows .conv-row').dataset.conversation === '{oldest}'",
        timeout=LIVE_WITHIN_MS,
    )
    assert time.monotonic() - started < LIVE_WITHIN_MS / 1000
    assert page.evaluate("window.__sameDocument") is True  # no reload
    top = page.locator("#rows .conv-row").first
    assert "Are you there?" in top.locator(".conv-preview").inner_text()
    assert top.locator("[data-unread]").inner_text() == "2"
    # a conversation nobody had open appears at the top of the list too
    incoming(deliver, "5215511110009", "Hola, soy nueva", name="Nueva Clienta")
    page.wait_for_function(
        "() => document.querySelector('#rows .conv-row .conv-name').textContent.includes('Nueva Clienta')",
        timeout=LIVE_WITHIN_MS,
    )
    assert page.locator("#rows .conv-row").count() == 4
    assert page.errors == []


def test_a_reply_inside_the_window_shows_its_status_marks_advancing(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215522220001", "¿Tienen envío gratis?", name="Rosa")
    conversation = conversation_of(client, org, "5215522220001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    assert page.locator("#composer-box").get_attribute("data-window") == "open"
    assert "left" in page.locator("[data-countdown]").inner_text()
    box = page.locator("#composer-text")
    box.fill("Sí, a partir de $999")
    box.press("Shift+Enter")
    box.type("¡Saludos!")
    box.press("Enter")
    sent = page.locator("#thread .msg-out", has_text="¡Saludos!")
    sent.wait_for(timeout=LIVE_WITHIN_MS)
    assert sent.locator(".msg-text").inner_text() == "Sí, a partir de $999\n¡Saludos!"
    page.wait_for_function("() => document.getElementById('composer-text').value === ''")
    sent.locator(".status-mark[data-status=accepted]").wait_for(timeout=LIVE_WITHIN_MS)
    assert meta.sends()[-1].body["text"]["body"] == "Sí, a partir de $999\n¡Saludos!"

    messages = api(client, org, "GET", f"/messages?conversation_id={conversation}&direction=outgoing")["data"]
    wamid = messages[0]["external_id"]
    for status in ("sent", "delivered", "read"):
        change = wa_change(PHONE_NUMBER_ID, statuses=[wa_status(wamid, status, "5215522220001")])
        assert deliver(wa_delivery(change)).status_code == 200
        page.locator(f"#m-{messages[0]['id']} .status-mark[data-status={status}]").wait_for(
            timeout=LIVE_WITHIN_MS
        )
    assert page.locator(f"#m-{messages[0]['id']} .status-mark").get_attribute("title") == "Read"
    # a failed send shows its reason as a tooltip
    change = wa_change(
        PHONE_NUMBER_ID,
        statuses=[
            wa_status(
                wamid,
                "failed",
                "5215522220001",
                error={
                    "code": 131026,
                    "title": "Message undeliverable",
                    "error_data": {"details": "Not on WhatsApp"},
                },
            )
        ],
    )
    assert deliver(wa_delivery(change)).status_code == 200  # read outranks failed: the mark stays
    assert page.errors == []


def test_a_closed_window_offers_the_template_form_and_sends_a_template(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    long_ago = str(int(time.time()) - 26 * 3600)
    change = wa_change(PHONE_NUMBER_ID, messages=[wa_text("5215533330001", "Gracias", timestamp=long_ago)])
    assert deliver(wa_delivery(change)).status_code == 200
    template = meta.add_template(
        name="order_ready",
        components=[
            {"type": "BODY", "text": "Hola {{customer_name}}, tu pedido {{order_number}} está listo."}
        ],
    )
    conversation = conversation_of(client, org, "5215533330001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    assert page.locator("#composer-box").get_attribute("data-window") == "closed"
    assert page.locator("#composer-text").count() == 0
    page.locator("#template-id").fill(template["id"])
    page.get_by_role("button", name="Choose").click()
    page.locator("#param-customer_name").fill("Tere")
    page.locator("#param-order_number").fill("A-77")
    assert page.locator(".template-preview").inner_text() == "Hola Tere, tu pedido A-77 está listo."
    page.get_by_role("button", name="Send template").click()
    sent = page.locator("#thread .msg-out .template-card", has_text="Hola Tere, tu pedido A-77 está listo.")
    sent.wait_for(timeout=LIVE_WITHIN_MS)
    body = meta.sends()[-1].body
    assert body["type"] == "template" and body["template"]["name"] == "order_ready"
    # a template parameter left empty is refused in the page's words, nothing sent
    sends = len(meta.sends())
    page.locator("#template-id").fill(template["id"])
    page.get_by_role("button", name="Choose").click()
    page.locator("#param-customer_name").fill("Tere")
    page.evaluate("document.getElementById('param-order_number').removeAttribute('required')")
    page.get_by_role("button", name="Send template").click()
    page.locator("#desk-alerts .alert", has_text="Fill in every field of the template.").wait_for()
    assert len(meta.sends()) == sends
    assert page.errors == []


def test_a_note_and_the_side_panel_change_what_the_api_sees(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    mate = make_user(org, "Bruno Compañero")
    incoming(deliver, "5215544440001", "Necesito hablar con alguien", name="Elena")
    conversation = conversation_of(client, org, "5215544440001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    page.on("dialog", lambda dialog: dialog.accept())

    page.locator("label[for=mode-note]").click()
    page.locator("#note-text").fill("Cliente molesta, tratar con cuidado")
    page.locator("#note-text").press("Enter")
    page.locator("#thread .note-item", has_text="Cliente molesta, tratar con cuidado").wait_for(
        timeout=LIVE_WITHIN_MS
    )
    notes = api(client, org, "GET", f"/conversations/{conversation}/notes")["data"]
    assert [n["content"] for n in notes] == ["Cliente molesta, tratar con cuidado"]

    page.locator("#assign-member").select_option(mate.member_id)
    page.locator("#thread .audit-item", has_text="Assigned to Bruno Compañero").wait_for(
        timeout=LIVE_WITHIN_MS
    )
    page.locator("#add-label").fill("Quejas")
    page.locator("#add-label").press("Enter")
    page.locator("#applied-labels .label-badge", has_text="Quejas").wait_for()
    page.locator("#thread .audit-item", has_text="Label Quejas added").wait_for(timeout=LIVE_WITHIN_MS)
    seen = api(client, org, "GET", f"/conversations/{conversation}")
    assert seen["extra"]["member_id"] == mate.member_id
    assert seen["extra"]["labels"] == ["Quejas"]
    row = page.locator(f"#row-{conversation}")
    row.locator(".label-badge", has_text="Quejas").wait_for(timeout=LIVE_WITHIN_MS)

    page.get_by_role("button", name="Remove the label Quejas").click()
    page.locator("#applied-labels", has_text="No labels").wait_for()
    page.get_by_role("button", name="Close").first.click()
    page.get_by_role("button", name="Reopen").wait_for()
    assert api(client, org, "GET", f"/conversations/{conversation}")["status"] == "closed"
    page.locator("body").press("e")  # the keyboard's archive
    page.get_by_role("button", name="Move out of the archive").wait_for()
    assert api(client, org, "GET", f"/conversations/{conversation}")["extra"]["archived"] is not None
    assert page.errors == []


def test_presence_chosen_in_one_browser_appears_in_another(
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    reason = mem(client, org, "POST", "/members/unavailable-reasons", name="Comida")
    mate = make_user(org, "Bruno Compañero")
    mine = open_inbox(new_context, agent)
    theirs = open_inbox(new_context, mate)
    dot = f'#teammates [data-presence-member="{agent.member_id}"]'
    theirs.wait_for_selector(dot, state="attached")

    mine.locator("#presence-switcher > button").click()
    mine.locator("label[for=status-away]").click()
    assert mine.locator("[data-reason-box]").is_visible()
    mine.locator("#presence-switcher").get_by_role("button", name="Save").click()
    mine.locator("#presence-switcher .alert", has_text="Choose a reason.").wait_for()
    mine.locator("#status-reason").select_option(reason["id"])
    mine.locator("#presence-switcher").get_by_role("button", name="Save").click()
    theirs.wait_for_selector(f"{dot}[data-status=away]", state="attached", timeout=LIVE_WITHIN_MS)
    assert theirs.locator(dot).get_attribute("title") == "Away"
    seen = mem(client, org, "GET", "/members/availabilities")["data"]
    assert [a["status"] for a in seen if a["member_id"] == agent.member_id] == ["away"]

    mine.locator("#presence-switcher > button").click()
    mine.locator("label[for=status-busy]").click()
    assert not mine.locator("[data-reason-box]").is_visible()
    mine.locator("#presence-switcher").get_by_role("button", name="Save").click()
    theirs.wait_for_selector(f"{dot}[data-status=busy]", state="attached", timeout=LIVE_WITHIN_MS)


def test_a_draft_survives_an_incoming_message_and_a_reload(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215555550001", "Hola", name="Iván")
    conversation = conversation_of(client, org, "5215555550001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    page.locator("#composer-text").fill("Estoy revisando tu caso, dame un")
    incoming(deliver, "5215555550001", "¿Sigues ahí?")
    page.locator("#thread .msg-text", has_text="¿Sigues ahí?").wait_for(timeout=LIVE_WITHIN_MS)
    page.locator(f"#row-{conversation} [data-unread]", has_text="2").wait_for(timeout=LIVE_WITHIN_MS)
    expect(page.locator("#composer-text")).to_have_value("Estoy revisando tu caso, dame un")
    page.reload()
    page.wait_for_selector("body[data-live=on]")
    expect(page.locator("#composer-text")).to_have_value("Estoy revisando tu caso, dame un")
    # the back button lands on the list the agent came from
    page.locator("#list-tabs [data-tab=unassigned]").click()
    page.wait_for_url("**tab=unassigned")
    page.go_back()
    page.wait_for_url(f"**/inbox/c/{conversation}")
    page.locator("#list-tabs .nav-link.active[data-tab=all]").wait_for()
    expect(page.locator("#composer-text")).to_have_value("Estoy revisando tu caso, dame un")


def test_both_languages_render_with_realistic_data(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    mate = make_user(org, "Bruno Compañero")
    ids = seed_inbox(client, deliver, org, agent.member_id, mate.member_id)
    maria = ids["María Fernanda Rodríguez de la Garza y Villaseñor"]

    english = open_inbox(new_context, agent, f"/inbox/c/{maria}")
    assert english.locator("html").get_attribute("lang") == "en"
    assert english.locator("#list-tabs [data-tab=mine]").inner_text().startswith("Mine")
    assert english.locator("#thread .note-item").inner_text().strip().startswith("Internal note")
    assert english.locator("#thread img.msg-image").count() == 1
    assert english.locator("#thread .audit-item", has_text="Assigned to Ana Agent").count() == 1
    assert axe_violations(english) == []
    screenshot(english, "inbox-en")

    spanish = open_inbox(new_context, agent, f"/inbox/c/{maria}", locale="es-MX")
    assert spanish.locator("html").get_attribute("lang") == "es"
    assert spanish.locator("#list-tabs [data-tab=mine]").inner_text().startswith("Míos")
    assert spanish.locator("#thread .note-item").inner_text().strip().startswith("Nota interna")
    assert spanish.get_by_role("button", name="Enviar").is_visible()
    assert axe_violations(spanish) == []
    screenshot(spanish, "inbox-es")

    narrow = open_inbox(
        new_context, agent, f"/inbox/c/{ids['John Carter']}", viewport={"width": 800, "height": 720}
    )
    assert narrow.locator("#composer-text").is_visible()
    assert axe_violations(narrow) == []
    screenshot(narrow, "inbox-narrow")

    # keyboard: ? lists the shortcuts; j opens the next conversation
    english.locator("body").press("?")
    english.locator("#shortcuts").wait_for(state="visible")
    english.locator("#shortcuts").get_by_role("button", name="Close").click()
    english.locator("#shortcuts").wait_for(state="hidden")
    order = english.evaluate(
        "Array.from(document.querySelectorAll('#rows .conv-row')).map(r => r.dataset.conversation)"
    )
    following = order[order.index(maria) + 1]
    english.locator("body").press("j")
    english.wait_for_url(f"**/inbox/c/{following}")
    english.locator(f"#row-{following}.active-row").wait_for()
    english.locator(f"[data-open-conversation-id='{following}']").wait_for()
    english.locator("body").press("k")
    english.wait_for_url(f"**/inbox/c/{maria}")
    english.locator(f"[data-open-conversation-id='{maria}']").wait_for()
    english.locator("body").press("r")
    assert english.evaluate("document.activeElement.id") == "composer-text"
    assert english.errors == [] and spanish.errors == []


def test_another_organizations_user_cannot_open_the_conversation_nor_follow_it(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215566660001", "Secreto de Acme", name="Cliente de Acme")
    conversation = conversation_of(client, org, "5215566660001")["id"]
    outsider = make_user(other_org, "Gus Globex")
    page = open_inbox(new_context, outsider)
    assert "Cliente de Acme" not in page.locator("#list-pane").inner_text()
    for path in (
        f"/inbox/c/{conversation}",
        f"/inbox/row/{conversation}",
        f"/inbox/c/{conversation}/panel",
        f"/inbox/c/{conversation}/composer",
        f"/inbox/c/{conversation}/older?skip=1",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 404, path
        assert "Secreto de Acme" not in page.content()
    page.goto("/inbox")
    page.wait_for_selector("body[data-live=on]")
    answer = page.evaluate(f"agentDesk.joinConversation('{conversation}')")
    assert answer["ok"] is False
    posted = page.evaluate(
        """async (id) => (await fetch('/inbox/c/' + id + '/notes', {method: 'POST',
             headers: {'X-CSRFToken': document.querySelector('meta[name=csrf-token]').content},
             body: new URLSearchParams({text: 'intrusion'})})).status""",
        conversation,
    )
    assert posted == 404
    assert api(client, org, "GET", f"/conversations/{conversation}/notes")["data"] == []


def test_markup_in_messages_names_labels_and_notes_is_shown_as_text(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    hostile_name = '<img src=x onerror="window.__pwned=1">Mallory'
    incoming(deliver, "5215577770001", "<script>window.__pwned=2</script>hola", name=hostile_name)
    conversation = conversation_of(client, org, "5215577770001")["id"]
    api(
        client,
        org,
        "PATCH",
        f"/conversations/{conversation}",
        extra={"labels": ['<img src=y onerror="window.__pwned=3">']},
    )
    api(
        client,
        org,
        "POST",
        f"/conversations/{conversation}/notes",
        content="<script>window.__pwned=4</script>nota",
    )
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    page.locator("#add-label").fill("<svg onload=window.__pwned=5>")
    page.locator("#add-label").press("Enter")
    page.locator("#applied-labels .label-badge", has_text="<svg onload=window.__pwned=5>").wait_for()
    incoming(deliver, "5215577770001", '"><img src=z onerror="window.__pwned=6">')
    page.locator("#thread .msg-text", has_text='"><img src=z').wait_for(timeout=LIVE_WITHIN_MS)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src=x], img[src=y], img[src=z], svg[onload]").count() == 0
    assert hostile_name in page.locator(f"#row-{conversation} .conv-name").inner_text()
    assert "<script>window.__pwned=2</script>hola" in page.locator("#thread").inner_text()
    assert "<script>window.__pwned=4</script>nota" in page.locator("#thread .note-item").inner_text()
    assert page.errors == []


def test_after_a_reconnect_the_visible_panes_catch_up(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215599880001", "Primero", name="Olga")
    conversation = conversation_of(client, org, "5215599880001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    page.locator("#composer-text").fill("borrador a medias")
    page.evaluate("agentDesk.socket.disconnect()")
    page.wait_for_selector("body[data-live=off]")
    incoming(deliver, "5215599880001", "Mientras no estabas")  # missed: nobody was listening
    incoming(deliver, "5215599880002", "Cliente nuevo", name="Pablo")
    page.wait_for_timeout(300)
    assert page.locator("#thread .msg-text", has_text="Mientras no estabas").count() == 0
    page.evaluate("agentDesk.socket.connect()")
    page.locator("#thread .msg-text", has_text="Mientras no estabas").wait_for(timeout=LIVE_WITHIN_MS)
    page.locator("#rows .conv-name", has_text="Pablo").wait_for(timeout=LIVE_WITHIN_MS)
    expect(page.locator("#composer-text")).to_have_value("borrador a medias")
    assert page.errors == []


def test_a_search_narrows_the_list_and_then_the_tab_counts(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    for n, name in enumerate(("Marta Vidal", "Marta Ortiz", "Pedro Gil")):
        incoming(deliver, f"52155666600{n:02d}", "hola", name=name)
    page = open_inbox(new_context, agent)
    expect(page.locator("#list-tabs [data-count=all]")).to_have_text("3")
    page.locator("#list-search").press_sequentially("Marta")
    expect(page).to_have_url(re.compile(r"q=Marta"))
    expect(page.locator("#rows .conv-row")).to_have_count(2)
    # the counts follow the rows: the placeholders give way to the filtered figures
    expect(page.locator("#list-tabs [data-count=all]")).to_have_text("2", timeout=LIVE_WITHIN_MS)
    expect(page.locator("#list-tabs [data-count=unassigned]")).to_have_text("2")
    expect(page.locator("#list-tabs [aria-busy]")).to_have_count(0)
    assert not page.errors
