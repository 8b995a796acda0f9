"""The agent studio's Knowledge tab and Test chat in Chromium: a .md document uploaded in the Knowledge tab
is found by "What would it find?" and by the runtime (the test chat's search_knowledge call returns it);
the test chat answers through the fake OpenAI-compatible server with the **unsaved** identity typed in the
editor (the API's stored configuration unchanged), continues a second turn with the first as history and
resets; in English and Spanish at 1440 px, with no console error and no serious axe violation;
screenshots for docs/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.ai.conftest import llm, llm_server, mem  # noqa: F401  (fixtures)
from tests.ai.test_studio_knowledge_pages import new_agent
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

UNSAVED = "You are Max from Envíos Rápidos, and this identity is not saved yet."
DOCUMENT = (
    "# Envíos\n\nEnviamos a Puebla y a todo México en 48 horas hábiles.\n\n"
    "El envío es gratis en pedidos desde 999 MXN; si no, cuesta 149 MXN."
)


def _open(new_context: Callable[..., Any], login: DeskLogin, path: str, locale: str) -> Any:
    page = new_context(locale=locale).new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.errors = errors
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.locator("#test-chat-form").wait_for()
    return page


@pytest.mark.parametrize("locale", ["en-US", "es-ES"])
def test_the_test_chat_runs_the_unsaved_identity_and_finds_an_uploaded_document(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    llm: FakeLLM,  # noqa: F811
    locale: str,
) -> None:
    lang = locale[:2]
    agent_id = new_agent(
        client,
        org,
        "Sofía IA",
        {
            "sections": {"identity": "You are Bot.", "chat": {"temperature": 0.3, "context_messages": 10}},
            "tools": {"search_knowledge": {"enabled": True}, "create_ticket": {"enabled": True}},
        },
    )
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(new_context, boss, f"/agents/{agent_id}", locale)

    # Knowledge: upload a .md file, then ask "What would it find?"
    page.locator("#studio-tab-knowledge").click()
    page.locator("#knowledge-add").wait_for()
    page.locator("#knowledge-file").set_input_files(
        {"name": "envios-mexico.md", "mimeType": "text/markdown", "buffer": DOCUMENT.encode()}
    )
    page.locator("#knowledge-add button[type=submit]").click()
    row = page.locator("#knowledge-list [data-document-id]", has_text="envios-mexico")
    row.wait_for()
    document_id = row.get_attribute("data-document-id")
    page.locator("#knowledge-probe-q").fill("¿Hacen envíos a Puebla?")
    page.locator("#knowledge-probe-q").press("Enter")
    page.locator(f"#knowledge-hits [data-hit-document='{document_id}']").wait_for()
    wait_for_htmx(page)
    assert axe_violations(page) == []
    page.locator("#studio").evaluate("el => el.scrollIntoView()")  # the tabs in view, as the tab opens
    screenshot(page, f"agent-studio-knowledge-{lang}")

    # Test chat: the identity edited in the editor and not saved
    page.locator("#studio-tab-prompt").click()
    identity = page.locator("[name='sections.identity']")
    identity.fill(UNSAVED)
    llm.call_tools(("search_knowledge", {"query": "envios Puebla"})).reply(
        "¡Sí! Enviamos a Puebla en 48 horas hábiles."
    )
    page.locator("#test-chat-message").fill("¿Hacen envíos a Puebla?")
    page.locator("#test-chat-message").press("Enter")
    first = page.locator("#test-chat-log [data-role=agent][data-turn='1']")
    first.wait_for()
    assert first.locator("[data-answer]").inner_text() == "¡Sí! Enviamos a Puebla en 48 horas hábiles."
    assert UNSAVED in llm.system(0)
    assert first.locator(f"[data-tool=search_knowledge] [data-found-document='{document_id}']").count() == 1
    assert first.locator("[data-model]").inner_text() == "fake-model-1"
    assert page.locator("#test-chat-message").input_value() == ""
    stored = client.get(mem(org, f"/members/{agent_id}/agent-config"), headers=org.headers()).get_json()
    assert stored["sections"]["identity"] == "You are Bot."
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, f"agent-studio-test-chat-{lang}")

    # a second turn carries the first as history
    llm.reply("De nada.")
    page.locator("#test-chat-message").fill("Gracias, ¿y cuánto cuesta?")
    page.locator("#test-chat-form button[type=submit]").click()
    page.locator("#test-chat-log [data-role=agent][data-turn='2']").wait_for()
    assert ("user", "¿Hacen envíos a Puebla?") in llm.conversation(-1)
    assert ("assistant", "¡Sí! Enviamos a Puebla en 48 horas hábiles.") in llm.conversation(-1)

    # a refused configuration is named in the pane; what was typed stays
    page.locator("#studio-tab-chat").click()
    page.locator("[name='sections.chat.temperature']").fill("1.5")
    asked = len(llm.requests)
    page.locator("#test-chat-message").fill("¿Y a Oaxaca?")
    page.locator("#test-chat-message").press("Enter")
    refusal = page.locator("#test-chat-status [data-test-chat-refusal]")
    refusal.wait_for()
    assert refusal.get_attribute("data-field") == "sections.chat.temperature"
    assert len(llm.requests) == asked
    assert page.locator("#test-chat-message").input_value() == "¿Y a Oaxaca?"
    page.locator("[name='sections.chat.temperature']").fill("0.3")

    # Reset: an empty conversation
    page.locator("[data-test-chat-reset]").click()
    page.locator("#test-chat-log [data-test-chat-empty]").wait_for()
    assert page.locator("#test-chat-log .test-chat-msg").count() == 0
    # the refusal is a designed 422, which Chromium logs as a failed resource; nothing else may be logged
    assert [e for e in page.errors if "status of 422" not in e] == []
