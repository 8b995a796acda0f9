"""The agent studio in Chromium: a supervisor's refused temperature shows the rules' range next to the
field and saves nothing; 0.3 saves a new version the API returns; the last two versions' diff shows
0.7 → 0.3; restore brings 0.7 back as a newer version; two supervisors editing at once: the second save
gets the conflict and keeps its edits; agents get 403 on every studio URL; both languages, a phone
width, axe-core, no console error; screenshots into docs/screenshots/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.ai.conftest import mem, msg
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org

CONFIG = {
    "sections": {
        "identity": "Eres Sofía, la asistente de ventas de Acme Telecom.",
        "rules": "Responde en el idioma del cliente.\nNo prometas fechas de entrega.\n"
        "Si piden factura, pasa a facturación.",
        "tone": "Cálido y breve; tutea al cliente.",
        "closing": "Despídete ofreciendo más ayuda.",
        "faq": "Envíos a todo México en 3 a 5 días hábiles.",
    },
    "tools": {"search_knowledge": {"enabled": True}, "transfer_to_human": {"enabled": True}},
    "notifications": {"end_of_call": {"email": ["ventas@example.com"]}},
    "call_transfers": [{"name": "Facturación", "condition": "pide una factura", "target": "+525512345678"}],
    "business_category": "ventas",
}


def _agent(client: FlaskClient, org: Org) -> str:
    created = client.post(
        msg(org, "/members"),
        json={"name": "Sofía IA", "ai": True, "organization_id": org.id},
        headers=org.headers(),
    )
    agent_id = str(created.get_json()["id"])
    saved = client.post(mem(org, f"/members/{agent_id}/agent-config"), json=CONFIG, headers=org.headers())
    assert saved.status_code == 201
    return agent_id


def _config(client: FlaskClient, org: Org, agent_id: str) -> tuple[dict[str, Any], str]:
    response = client.get(mem(org, f"/members/{agent_id}/agent-config"), headers=org.headers())
    body = response.get_json()
    return body.get("configuration", body), response.headers["ETag"]


def _open(new_context: Callable[..., Any], login: DeskLogin, path: str, **options: Any) -> Any:
    viewport = options.pop("viewport", None)
    page = new_context(**options).new_page()
    if viewport:
        page.set_viewport_size(viewport)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # A refusal is answered 422 by design (the desk's convention); Chromium logs any 4xx as an error line.
    page.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and "status of 422" not in message.text
            else None
        ),
    )
    page.errors = errors
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.wait_for_selector("body[data-live=on]")
    wait_for_htmx(page)
    return page


def _tab(page: Any, key: str) -> None:
    page.locator(f"[data-studio-tab={key}]").click()
    page.locator(f"#studio-{key}.active.show").wait_for()
    wait_for_htmx(page)  # and the pane's fade is over (axe reads colours half-way otherwise)


def _save(page: Any) -> None:
    page.locator("[data-studio-save]").click()
    wait_for_htmx(page)


def test_a_supervisor_edits_saves_compares_and_restores(
    client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent_id = _agent(client, org)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(new_context, boss, "/agents", viewport={"width": 1440, "height": 900})
    page.locator(f"tr[data-agent-id='{agent_id}'] a", has_text="Sofía IA").click()
    page.wait_for_url(f"**/agents/{agent_id}")
    wait_for_htmx(page)
    page.locator("#studio-preview pre").wait_for()
    assert "## Identity" in page.locator("#studio-preview pre").inner_text()
    assert axe_violations(page) == []
    screenshot(page, "ai-studio-prompt-en")

    # 1.5: the rules' range next to the field, nothing saved
    _tab(page, "chat")
    field = page.locator("input[name='sections.chat.temperature']")
    field.fill("1.5")
    assert page.locator("[data-studio-dirty]").is_visible()
    _save(page)
    error = page.locator("[data-error-for='sections.chat.temperature']")
    assert error.inner_text() == "Out of range: between 0 and 1."
    assert page.locator("#studio-chat.active").count() == 1
    assert page.locator("input[name='sections.chat.temperature']").input_value() == "1.5"
    assert page.locator("input[name='sections.chat.temperature']").get_attribute("aria-invalid") == "true"
    assert _config(client, org, agent_id)[1] == '"1"'
    screenshot(page, "ai-studio-refusal-en")

    # 0.3: saved as version 2, the API answers 0.3
    page.locator("input[name='sections.chat.temperature']").fill("0.3")
    _save(page)
    assert page.get_by_text("Saved as version 2").is_visible()
    assert page.locator("[data-studio-dirty]").is_hidden()
    body, etag = _config(client, org, agent_id)
    assert etag == '"2"' and body["sections"]["chat"]["temperature"] == 0.3

    # the diff of the last two versions
    _tab(page, "versions")
    page.locator("#studio-versions-pane [data-studio-diff]").wait_for()
    wait_for_htmx(page)
    entry = page.locator("[data-path='sections.chat.temperature']")
    assert " ".join(entry.locator(".studio-diff-value").inner_text().split()) == "0.7 → 0.3"
    assert "Laura Supervisora" in page.locator("tr[data-version='2']").inner_text()
    assert axe_violations(page) == []
    screenshot(page, "ai-studio-versions-en")

    # restore version 1: a new version 3 with 0.7
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("tr[data-version='1'] button", has_text="Restore").click()
    page.wait_for_url("**tab=versions**")
    page.locator("tr[data-version='3']").wait_for()
    body, etag = _config(client, org, agent_id)
    assert etag == '"3"' and body["sections"]["chat"]["temperature"] == 0.7
    assert "Restored" in page.locator("tr[data-version='3']").inner_text()
    assert page.errors == []


def test_sections_are_added_renamed_reordered_and_removed(
    client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent_id = _agent(client, org)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(new_context, boss, f"/agents/{agent_id}")
    page.locator("#studio-new-section").fill("envios")
    page.locator("[data-studio-add-section]").click()
    page.locator("textarea[name='sections.envios']").fill("Enviamos con DHL.")
    assert (
        page.locator("textarea[name='sections.envios']").evaluate(
            "el => el.closest('[data-studio-section]').querySelector('[data-count]').textContent"
        )
        == "17"
    )
    # keyboard: the new last section moves up once
    last = page.locator("[data-studio-section]").last
    last.locator("[data-studio-move=up]").click()
    names = page.locator("[data-studio-section-name]").evaluate_all("els => els.map(e => e.value)")
    assert names[-2] == "envios"
    # rename faq -> preguntas, remove closing
    card = page.locator("[data-studio-section]", has=page.locator("textarea[name='sections.faq']"))
    card.locator("[data-studio-section-name]").fill("preguntas")
    page.locator("[data-studio-section]", has=page.locator("textarea[name='sections.closing']")).locator(
        "[data-studio-remove-section]"
    ).click()
    _save(page)
    assert page.get_by_text("Saved as version 2").is_visible()
    body, _etag = _config(client, org, agent_id)
    assert body["sections"]["envios"] == "Enviamos con DHL."
    assert body["sections"]["preguntas"] == CONFIG["sections"]["faq"]
    assert "faq" not in body["sections"] and "closing" not in body["sections"]
    assert page.errors == []


def test_two_supervisors_at_once_get_the_conflict_and_lose_nothing(
    client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent_id = _agent(client, org)
    laura = make_user(org, "Laura Supervisora", role="supervisor")
    marta = make_user(org, "Marta Supervisora", role="supervisor")
    first = _open(new_context, laura, f"/agents/{agent_id}")
    second = _open(new_context, marta, f"/agents/{agent_id}")
    second.locator("textarea[name='sections.identity']").fill("Eres Sofía, de soporte.")
    first.locator("textarea[name='sections.tone']").fill("Formal.")
    _save(first)
    assert first.get_by_text("Saved as version 2").is_visible()
    # the other page hears of version 2, from whom, and keeps what was typed
    second.locator("#studio-live-notice:not([hidden])").wait_for()
    assert (
        second.locator("#studio-live-notice [data-notice-text]").inner_text()
        == "Laura Supervisora saved version 2 while this page was open."
    )
    assert second.locator("textarea[name='sections.identity']").input_value() == "Eres Sofía, de soporte."
    _save(second)
    conflict = second.locator("#studio-conflict")
    conflict.wait_for()
    assert "Laura Supervisora saved version 2 while you were editing." in conflict.inner_text()
    assert "Eres Sofía, de soporte." in conflict.inner_text()
    assert second.locator("textarea[name='sections.identity']").input_value() == "Eres Sofía, de soporte."
    assert _config(client, org, agent_id)[1] == '"2"'
    screenshot(second, "ai-studio-conflict-en")
    conflict.get_by_role("button").click()
    wait_for_htmx(second)
    assert second.get_by_text("Saved as version 3").is_visible()
    body, etag = _config(client, org, agent_id)
    assert etag == '"3"'
    assert body["sections"]["identity"] == "Eres Sofía, de soporte."
    assert body["sections"]["tone"] == "Formal."  # Laura's edit kept
    assert first.errors == [] and second.errors == []


@pytest.mark.parametrize(
    ("locale", "by_laura", "by_key"),
    [
        (
            "en-US",
            "Laura Supervisora saved version 2 while this page was open.",
            "API key {prefix}… saved version 3 while this page was open.",
        ),
        (
            "es-ES",
            "Laura Supervisora guardó la versión 2 mientras esta página estaba abierta.",
            "Clave de API {prefix}… guardó la versión 3 mientras esta página estaba abierta.",
        ),
    ],
)
def test_the_live_notice_names_who_saved(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
    by_laura: str,
    by_key: str,
) -> None:
    agent_id = _agent(client, org)
    laura = make_user(org, "Laura Supervisora", role="supervisor")
    marta = make_user(org, "Marta Supervisora", role="supervisor")
    first = _open(new_context, laura, f"/agents/{agent_id}", locale="en-US")
    second = _open(new_context, marta, f"/agents/{agent_id}", locale=locale)
    second.locator("textarea[name='sections.identity']").fill("Eres Sofía, de soporte.")
    first.locator("textarea[name='sections.tone']").fill("Formal.")
    _save(first)
    notice = second.locator("#studio-live-notice [data-notice-text]")
    second.locator("#studio-live-notice:not([hidden])").wait_for()
    assert notice.inner_text() == by_laura
    # the one who saved is not told about their own version
    assert first.locator("#studio-live-notice").is_hidden()
    # a change through the API is named by its key's prefix
    patched = client.patch(
        mem(org, f"/members/{agent_id}/agent-config"), json={"voice": "alloy"}, headers=org.headers()
    )
    assert patched.status_code == 200
    second.wait_for_function(
        "() => document.querySelector('#studio-live-notice [data-notice-text]').textContent.includes('3')"
    )
    # the key's shown prefix (``sk_live_…``), never the secret
    before, after = by_key.split("{prefix}")
    text = notice.inner_text()
    assert text.startswith(before + "sk_live_") and text.endswith(after), text
    assert org.live_key not in text
    # what was typed stays
    assert second.locator("textarea[name='sections.identity']").input_value() == "Eres Sofía, de soporte."
    assert first.errors == [] and second.errors == []


def test_agents_get_403_on_every_studio_url(
    client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent_id = _agent(client, org)
    created = client.post(
        mem(org, "/knowledge"),
        json={"title": "Envíos", "body": "Enviamos a todo México.", "agent_id": agent_id},
        headers=org.headers(),
    )
    document_id = created.get_json()["id"]
    ana = make_user(org, "Ana Agente")
    page = _open(new_context, ana, "/desk")
    assert page.locator("nav a[href$='/agents']").count() == 0
    # every page of the studio (the routes of blueprints/ai/pages/), its "Show more" variants included
    for path in (
        "/agents",
        f"/agents?after={agent_id}",
        f"/agents/{agent_id}",
        f"/agents/{agent_id}?tab=versions",
        f"/agents/{agent_id}/versions",
        f"/agents/{agent_id}/versions?before=2",
        f"/agents/{agent_id}/runs",
        f"/agents/{agent_id}/runs/more?after={agent_id}",
        f"/agents/{agent_id}/knowledge",
        f"/agents/{agent_id}/knowledge?after={document_id}",
        f"/agents/{agent_id}/knowledge/search?q=envios",
        f"/agents/{agent_id}/knowledge/{document_id}",
        f"/agents/{agent_id}/knowledge/{document_id}/edit",
        f"/agents/{agent_id}/test-chat",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 403, path
        assert page.get_by_text("You do not have access to this page").is_visible()
    # and every change, sent as the page would send it (with the session's CSRF token)
    token = page.evaluate("document.querySelector('meta[name=csrf-token]').content")
    for path in (
        "/agents/new",
        f"/agents/{agent_id}/config",
        f"/agents/{agent_id}/preview",
        f"/agents/{agent_id}/versions/1/restore",
        f"/agents/{agent_id}/knowledge",
        f"/agents/{agent_id}/knowledge/{document_id}",
        f"/agents/{agent_id}/knowledge/{document_id}/delete",
        f"/agents/{agent_id}/test-chat/turn",
    ):
        answer = page.request.post(
            path, form={"name": "X", "tc_message": "Hola"}, headers={"X-CSRFToken": token}
        )
        assert answer.status == 403, path
    assert _config(client, org, agent_id)[1] == '"1"'  # nothing changed
    assert page.errors == [] or all("403" in e for e in page.errors)


@pytest.mark.parametrize(("locale", "width"), [("es-MX", 1440), ("es-MX", 390), ("en-US", 390)])
def test_both_languages_and_a_phone(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
    width: int,
) -> None:
    agent_id = _agent(client, org)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(
        new_context, boss, f"/agents/{agent_id}", locale=locale, viewport={"width": width, "height": 900}
    )
    page.locator("#studio-preview pre").wait_for()
    spanish = locale.startswith("es")
    assert page.locator("[data-studio-save]").inner_text().strip() == ("Guardar" if spanish else "Save")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert axe_violations(page) == []
    suffix = f"{locale[:2]}" + ("-phone" if width < 800 else "")
    screenshot(page, f"ai-studio-prompt-{suffix}")
    if spanish and width > 800:
        _tab(page, "chat")
        page.locator("input[name='sections.chat.temperature']").fill("0.3")
        _save(page)
        _tab(page, "versions")
        page.locator("[data-path='sections.chat.temperature']").wait_for()
        screenshot(page, "ai-studio-versions-es")
    assert page.errors == []
