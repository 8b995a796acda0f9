"""The composer's extras in a real Chromium: the approved templates of the number in the closed-window
picker, canned replies after "/", and the contact's reactions under the messages, live. Plus the
fragments behind them (the picker's fallback when Meta fails, the canned list's tenancy)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from playwright.sync_api import expect

from blueprints.messaging import template_list
from tests.browser.conftest import DeskLogin, axe_violations, screenshot
from tests.browser.inbox.data import api, conversation_of, incoming, signed_in_client
from tests.browser.inbox.test_inbox import LIVE_WITHIN_MS, open_inbox
from tests.conftest import Org
from tests.fakes.fixtures import INSTAGRAM_ID, PHONE_NUMBER_ID, Deliver, ig  # noqa: F401  (fixture)
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_reactions import wa_reaction
from tests.fakes.meta_webhooks import messaging_delivery, wa_change, wa_delivery, wa_text

HX = {"HX-Request": "true"}
LONG_AGO = 26 * 3600


@pytest.fixture(autouse=True)
def _fresh_template_cache() -> Iterator[None]:
    template_list.clear_cache()
    yield
    template_list.clear_cache()


@pytest.fixture
def agent(make_user: Callable[..., DeskLogin], org: Org) -> DeskLogin:
    return make_user(org, "Ana Agent")


def closed_window_conversation(
    deliver: Deliver, client: FlaskClient, org: Org, number: str, name: str
) -> str:
    """A customer who wrote 26 hours ago: only a template may be sent."""
    old = str(int(time.time()) - LONG_AGO)
    change = wa_change(
        PHONE_NUMBER_ID, messages=[wa_text(number, "Gracias", timestamp=old)], names={number: name}
    )
    assert deliver(wa_delivery(change)).status_code == 200
    return str(conversation_of(client, org, number)["id"])


def test_the_closed_window_picker_lists_the_numbers_approved_templates_and_sends_one(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    conversation = closed_window_conversation(deliver, client, org, "5215533330002", "Teresa Gómez")
    ready = meta.add_template(
        name="order_ready",
        language="es_MX",
        components=[
            {"type": "BODY", "text": "Hola {{customer_name}}, tu pedido {{order_number}} está listo."}
        ],
    )
    meta.add_template(
        name="appointment_reminder",
        category="MARKETING",
        components=[{"type": "BODY", "text": "Reminder: your appointment is on {{date}}."}],
    )
    meta.add_template(name="draft_promo", status="PENDING", components=[{"type": "BODY", "text": "Soon"}])

    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    options = page.locator("#template-list [data-template-option]")
    expect(options).to_have_count(2)  # the PENDING one is not offered
    assert options.nth(0).inner_text().startswith("appointment_reminder")  # by name
    assert "está listo" in options.nth(1).inner_text()  # a preview of the body
    assert axe_violations(page) == []

    options.nth(1).click()
    expect(options.nth(1)).to_have_attribute("aria-pressed", "true")
    page.locator("#param-customer_name").fill("Tere")
    page.locator("#param-order_number").fill("A-78")
    assert page.locator(".template-preview").inner_text() == "Hola Tere, tu pedido A-78 está listo."
    screenshot(page, "composer-templates")
    page.get_by_role("button", name="Send template").click()
    sent = page.locator("#thread .msg-out .template-card", has_text="Hola Tere, tu pedido A-78 está listo.")
    sent.wait_for(timeout=LIVE_WITHIN_MS)
    body = meta.sends()[-1].body
    assert body["template"] == {
        "name": "order_ready",
        "language": {"code": "es_MX"},
        "components": [
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "parameter_name": "customer_name", "text": "Tere"},
                    {"type": "text", "parameter_name": "order_number", "text": "A-78"},
                ],
            }
        ],
    }
    assert ready["id"] in {
        m["template"]["id"] for m in api(client, org, "GET", "/messages")["data"] if m["template"]
    }
    expect(options.nth(1)).to_have_attribute("aria-pressed", "false")
    # opening the conversation again does not ask Meta again (the list is cached for a minute)
    lists = len(meta.template_lists())
    page.reload()
    expect(page.locator("#template-list [data-template-option]")).to_have_count(2)
    assert len(meta.template_lists()) == lists
    assert page.errors == []


@pytest.mark.usefixtures("ig")
def test_instagram_explains_there_are_no_templates(
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    new_context: Callable[..., Any],
) -> None:
    old_ms = int((time.time() - LONG_AGO) * 1000)
    item = {
        "sender": {"id": "17840000000000077"},
        "recipient": {"id": INSTAGRAM_ID},
        "timestamp": old_ms,
        "message": {"mid": "m_old_instagram_1", "text": "¿Tienen la talla M?"},
    }
    assert deliver(messaging_delivery("instagram", INSTAGRAM_ID, item)).status_code == 200
    conversation = conversation_of(client, org, "17840000000000077")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    assert page.locator("#composer-box").get_attribute("data-window") == "closed"
    expect(page.locator("#composer .no-templates")).to_contain_text("Instagram has no message templates")
    assert page.locator("#template-list, #template-picker, #composer-text").count() == 0
    assert axe_violations(page) == []
    assert page.errors == []


def test_slash_offers_canned_replies_and_inserts_the_chosen_one(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    for code, title, content in (
        ("hola", "Saludo", "Hola {{contact.first_name}}, ¿en qué te ayudo?"),
        ("horario", "Horario", "Abrimos de 9 a 18 h."),
        ("envio", "Envíos", "El envío tarda de 3 a 5 días."),
    ):
        api(client, org, "POST", "/canned-responses", short_code=code, title=title, content=content)
    incoming(deliver, "5215544440001", "Buenas", name="Lucía Méndez")
    conversation = conversation_of(client, org, "5215544440001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    box = page.locator("#composer-text")
    menu = page.locator("#canned-menu")

    box.click()
    box.type("Gracias. /ho")
    expect(menu.locator("[role=option]")).to_have_count(2)
    assert menu.locator("[role=option]").nth(0).get_attribute("data-canned-code") == "hola"
    expect(box).to_have_attribute(
        "aria-activedescendant", menu.locator("[role=option]").nth(0).get_attribute("id")
    )
    assert axe_violations(page) == []
    screenshot(page, "composer-canned")
    box.press("ArrowDown")
    expect(menu.locator(".canned-option.active")).to_have_attribute("data-canned-code", "horario")
    box.press("ArrowUp")
    box.press("Enter")  # inserts; it does not send
    expect(box).to_have_value("Gracias. Hola Lucía, ¿en qué te ayudo?")
    expect(menu).to_be_hidden()
    assert meta.sends() == []

    # Tab inserts too; the word after "/" may come after other words; the draft keeps it
    box.type(" /env")
    expect(menu.locator("[role=option]")).to_have_count(1)
    box.press("Tab")
    expect(box).to_have_value("Gracias. Hola Lucía, ¿en qué te ayudo? El envío tarda de 3 a 5 días.")
    draft = page.evaluate(f"localStorage.getItem('draft:{conversation}:reply')")
    assert draft == "Gracias. Hola Lucía, ¿en qué te ayudo? El envío tarda de 3 a 5 días."

    # Esc closes the list and keeps the text; a click picks an option
    box.type(" /")
    expect(menu.locator("[role=option]")).to_have_count(3)
    box.press("Escape")
    expect(menu).to_be_hidden()
    box.type("h")
    expect(menu.locator("[role=option]")).to_have_count(2)
    menu.locator("[data-canned-code=horario]").click()
    expect(box).to_have_value(
        "Gracias. Hola Lucía, ¿en qué te ayudo? El envío tarda de 3 a 5 días. Abrimos de 9 a 18 h."
    )
    expect(box).to_be_focused()

    # nothing matches: the list says so and Enter sends as always
    box.fill("")
    box.type("/nada")
    expect(menu.locator("[data-canned-empty]")).to_contain_text("No canned reply matches /nada")
    box.press("Enter")
    page.locator("#thread .msg-out", has_text="/nada").wait_for(timeout=LIVE_WITHIN_MS)
    # a "/" inside a word is not a command
    box.type("a/b")
    page.wait_for_timeout(400)
    expect(menu).to_be_hidden()
    assert page.errors == []


def test_what_is_typed_while_a_reply_is_being_sent_is_kept(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215544440002", "Hola", name="Marta Ruiz")
    conversation = conversation_of(client, org, "5215544440002")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    held: list[Any] = []
    page.route(f"**/inbox/c/{conversation}/messages", lambda route: held.append(route))  # held: no answer yet
    box = page.locator("#composer-text")
    box.fill("Primero esto.")
    box.press("Enter")
    while not held:
        page.wait_for_timeout(50)
    box.press("End")
    box.type(" Y luego")
    held[0].continue_()
    page.locator("#thread .msg-out", has_text="Primero esto.").wait_for(timeout=LIVE_WITHIN_MS)
    expect(box).to_have_value("Y luego")  # the sent text is gone, the next one is kept
    draft = page.evaluate(f"localStorage.getItem('draft:{conversation}:reply')")
    assert draft == "Y luego"
    assert [(send.body or {})["text"]["body"] for send in meta.sends()] == ["Primero esto."]
    assert page.errors == []


def test_a_reaction_appears_live_under_its_message_and_goes_away(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    incoming(deliver, "5215566660001", "¿Me mandas la guía?", name="Diego")
    conversation = conversation_of(client, org, "5215566660001")["id"]
    page = open_inbox(new_context, agent, f"/inbox/c/{conversation}")
    box = page.locator("#composer-text")
    box.fill("Claro, aquí está: https://example.com/guia")
    box.press("Enter")
    sent = page.locator("#thread .msg-out", has_text="aquí está")
    sent.wait_for(timeout=LIVE_WITHIN_MS)
    reply = api(client, org, "GET", f"/messages?conversation_id={conversation}&direction=outgoing")["data"][0]

    now = int(time.time())
    react = wa_reaction("5215566660001", reply["external_id"], "🙏", timestamp=str(now))
    assert deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[react]))).status_code == 200
    chip = page.locator(f"#m-{reply['id']} .reactions [data-reaction='🙏']")
    chip.wait_for(timeout=LIVE_WITHIN_MS)
    assert chip.get_attribute("title") == "The customer reacted with 🙏"
    assert axe_violations(page) == []
    screenshot(page, "thread-reactions")

    changed = wa_reaction("5215566660001", reply["external_id"], "❤️", timestamp=str(now + 1))
    deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[changed])))
    page.locator(f"#m-{reply['id']} .reactions [data-reaction='❤️']").wait_for(timeout=LIVE_WITHIN_MS)
    assert page.locator(f"#m-{reply['id']} .reaction").count() == 1
    removed = wa_reaction("5215566660001", reply["external_id"], "", timestamp=str(now + 2))
    deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[removed])))
    page.locator(f"#m-{reply['id']} .reactions").wait_for(state="detached", timeout=LIVE_WITHIN_MS)
    # a reload shows what is stored
    page.reload()
    page.locator(f"#m-{reply['id']}").wait_for()
    assert page.locator(f"#m-{reply['id']} .reaction").count() == 0
    assert page.errors == []


def test_both_languages_and_a_narrow_window(
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    agent: DeskLogin,
    meta: FakeMetaGraph,
    new_context: Callable[..., Any],
) -> None:
    conversation = closed_window_conversation(deliver, client, org, "5215533330003", "Rosa Peña")
    for n in range(12):
        meta.add_template(
            name=f"aviso_{n:02d}", language="es_MX", components=[{"type": "BODY", "text": f"Aviso {n}"}]
        )
    spanish = open_inbox(new_context, agent, f"/inbox/c/{conversation}", locale="es-MX")
    expect(spanish.locator("#template-list [data-template-option]")).to_have_count(12)
    assert spanish.locator("html").get_attribute("lang") == "es"
    assert axe_violations(spanish) == []
    screenshot(spanish, "composer-templates-es")
    narrow = open_inbox(
        new_context, agent, f"/inbox/c/{conversation}", viewport={"width": 800, "height": 720}
    )
    options = narrow.locator("#template-list [data-template-option]")
    expect(options).to_have_count(12)
    # the list scrolls inside the composer instead of pushing the thread away
    assert narrow.evaluate("document.querySelector('.template-options').scrollHeight") > narrow.evaluate(
        "document.querySelector('.template-options').clientHeight"
    )
    assert narrow.locator("#thread-scroll").bounding_box()["height"] > 150
    assert axe_violations(narrow) == []
    screenshot(narrow, "composer-templates-narrow")
    assert spanish.errors == [] and narrow.errors == []


# ---- the fragments, without a browser ----------------------------------------------------------------


def test_when_meta_fails_the_picker_says_so_and_offers_the_recent_templates(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    meta: FakeMetaGraph,
    make_user: Callable[..., DeskLogin],
) -> None:
    login = make_user(org, "Ana Agent")
    conversation = closed_window_conversation(deliver, client, org, "5215533330004", "Pablo")
    template = meta.add_template(name="order_ready", components=[{"type": "BODY", "text": "Listo {{name}}"}])
    api(
        client,
        org,
        "POST",
        "/messages/send-template",
        organization_address=PHONE_NUMBER_ID,
        to="5215533330004",
        meta_template_id=template["id"],
        components=[
            {"type": "body", "parameters": [{"type": "text", "parameter_name": "name", "text": "P"}]}
        ],
    )
    browser = signed_in_client(app.test_client(), login.email, login.password)
    meta.server_errors = 3  # the list read and both of its retries
    html = browser.get(f"/inbox/c/{conversation}/templates", headers=HX).get_data(as_text=True)
    assert "WhatsApp did not answer with the approved templates." in html
    assert "Sent lately" in html and f'data-template-option="{template["id"]}"' in html
    template_list.clear_cache()
    working = browser.get(f"/inbox/c/{conversation}/templates", headers=HX).get_data(as_text=True)
    assert "Approved templates" in working and "did not answer" not in working


def test_the_canned_list_is_the_organizations_own_and_fills_the_contacts_name(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_user: Callable[..., DeskLogin],
) -> None:
    login = make_user(org, "Ana Agent")
    api(client, org, "POST", "/canned-responses", short_code="hola", content="Hola {{contact.first_name}}")
    response = client.post(
        f"/v2/messages/organizations/{other_org.id}/canned-responses",
        json={"short_code": "holaotra", "content": "Not yours"},
        headers=other_org.headers(),
    )
    assert response.status_code == 201
    incoming(deliver, "5215544440009", "Hola", name="Mariana López")
    conversation = conversation_of(client, org, "5215544440009")["id"]
    browser = signed_in_client(app.test_client(), login.email, login.password)

    html = browser.get(f"/inbox/canned?q=hol&conversation={conversation}", headers=HX).get_data(as_text=True)
    assert 'data-content="Hola Mariana"' in html and "holaotra" not in html and "Not yours" not in html
    unnamed = browser.get("/inbox/canned?q=hol", headers=HX).get_data(as_text=True)
    assert 'data-content="Hola {{contact.first_name}}"' in unnamed
    # another organization's conversation is not found, and so is a malformed one
    theirs = browser.get(f"/inbox/canned?q=h&conversation={other_org.id}", headers=HX)
    assert theirs.status_code == 404
    assert app.test_client().get("/inbox/canned?q=h").status_code in (302, 401)  # signed-in users only
