"""The prompt sections' order in Chromium, with the keyboard alternative to dragging: a supervisor moves the
"faq" section to the top with its Move up button (keyboard: focus, Enter), the preview follows, Save stores
the order (the API returns it as ``section_order`` and a new version), and the test chat's prompt, as the
fake OpenAI-compatible server received it, gives the sections in that order; in English and Spanish, axe
clean, no console error; screenshots of the reordered sections with the preview for docs/."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.ai.conftest import llm, llm_server  # noqa: F401  (fixtures)
from tests.ai.test_studio_knowledge_pages import new_agent
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

SECTIONS = {
    "identity": "Eres Sofía, la asistente de ventas.",
    "rules": "Responde en el idioma del cliente.",
    "tone": "Cálido y breve.",
    "faq": "Envíos a todo México en 3 a 5 días hábiles.",
}


def headings(system: str) -> list[str]:
    return re.findall(r"^## (.+)$", system, re.M)


@pytest.mark.parametrize(
    ("locale", "saved"), [("en-US", "Saved as version 2"), ("es-ES", "Guardado como versión 2")]
)
def test_a_keyboard_reorder_is_saved_and_reaches_the_prompt(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    llm: FakeLLM,  # noqa: F811
    locale: str,
    saved: str,
) -> None:
    agent_id = new_agent(client, org, "Sofía IA", {"sections": SECTIONS})
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = new_context(locale=locale).new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.goto(f"/agents/{agent_id}")
    page.locator("#test-chat-form").wait_for()
    wait_for_htmx(page)

    names = page.locator("#studio-form [data-studio-order]")
    assert [names.nth(i).input_value() for i in range(names.count())] == ["identity", "rules", "tone", "faq"]

    # the keyboard alternative: Tab to faq's Move up button and press Enter three times
    faq = page.locator("[data-studio-section]", has=page.locator("[name='sections.faq']"))
    up = faq.locator('[data-studio-move="up"]')
    up.focus()
    for _ in range(3):
        page.keyboard.press("Enter")
    assert [names.nth(i).input_value() for i in range(names.count())] == ["faq", "identity", "rules", "tone"]
    assert page.locator("[data-studio-dirty]").is_visible()
    # the first card's Move up is disabled, so the focus went to its Move down
    assert faq.locator('[data-studio-move="up"]').is_disabled()
    # the preview follows the order on the page
    page.wait_for_function(
        "() => (document.querySelector('#studio-preview pre') || {}).textContent?.startsWith('## Faq')"
    )

    wait_for_htmx(page)
    assert axe_violations(page) == []
    # the moved section at the top, and the preview in the same order (the cards folded to fit both)
    page.evaluate(
        "() => document.querySelectorAll('#studio-form .studio-text').forEach(t => { t.rows = 2; })"
    )
    page.locator("#studio-preview").evaluate("el => el.scrollIntoView({block: 'end'})")
    page.evaluate("() => window.scrollBy(0, 80)")  # above the sticky Save bar
    screenshot(page, f"ai-studio-order-{locale[:2]}")

    # Save: the API returns the order and a new version
    page.locator("[data-studio-save]").click()
    page.get_by_text(saved).wait_for()
    wait_for_htmx(page)
    response = client.get(
        f"/v1/members/organizations/{org.id}/members/{agent_id}/agent-config", headers=org.headers()
    )
    assert response.headers["ETag"] == '"2"'
    assert response.get_json()["section_order"] == ["faq", "identity", "rules", "tone"]

    # the test chat's prompt, as the fake OpenAI-compatible server received it, gives that order
    llm.reply("Hola, ¿en qué te ayudo?")
    page.locator("#test-chat-message").fill("Hola")
    page.locator("#test-chat-message").press("Enter")
    page.locator("#test-chat-log [data-role=agent][data-turn='1']").wait_for()
    assert headings(llm.system(-1))[:4] == ["Faq", "Identity", "Rules", "Tone"]

    # after a reload the cards come in the stored order
    page.reload()
    page.locator("#test-chat-form").wait_for()
    assert [names.nth(i).input_value() for i in range(names.count())] == ["faq", "identity", "rules", "tone"]
    wait_for_htmx(page)
    assert axe_violations(page) == []
    assert errors == []
