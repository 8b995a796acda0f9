"""The labels and canned replies settings pages in Chromium, in both languages: a supervisor adds, renames
and deletes a label (its flows shown beside it), sees a taken name refused under the field, adds, edits
and deletes a canned reply, sees a bad short code refused under its field; axe-core clean, no console
error, nothing scrolls sideways on a phone. Screenshots: docs/screenshots/settings-labels-*.png,
settings-canned-*.png."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from playwright.sync_api import expect

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org

WIDE = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def _seed(client: FlaskClient, org: Org) -> None:
    base = f"/v2/messages/organizations/{org.id}"

    def post(path: str, body: dict[str, Any]) -> None:
        response = client.post(base + path, json=body, headers=org.headers())
        assert response.status_code == 201, response.get_json()

    post("/labels", {"name": "Soporte técnico", "color": "#e76f51", "description": "Fallas y garantías"})
    post("/labels", {"name": "Facturación", "color": "#264653"})
    post("/flows", {"name": "Bienvenida VIP", "trigger_labels": ["VIP"], "interrupt_labels": ["Baja"]})
    post("/flows", {"name": "Encuesta posventa", "status": "paused", "trigger_labels": ["Facturación"]})
    post(
        "/canned-responses",
        {
            "short_code": "horario",
            "title": "Horario de atención",
            "content": "Atendemos de lunes a viernes de 9:00 a 18:00 (hora del centro de México). "
            "Los sábados respondemos mensajes de 10:00 a 14:00.",
        },
    )
    post("/canned-responses", {"short_code": "envio", "content": "Tu pedido sale en 24 a 48 horas hábiles."})


def _watch(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # A refused form is answered 422 by design (the desk's convention); Chromium logs any 4xx as an error.
    page.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and "status of 422" not in message.text
            else None
        ),
    )
    return errors


def _no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_labels_and_canned_replies_in_a_browser(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
) -> None:
    language = locale[:2]
    _seed(client, org)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = new_context(locale=locale).new_page()
    page.set_viewport_size(WIDE)
    errors = _watch(page)
    sign_in(page, boss)
    page.wait_for_url("**/desk")

    # ---- labels
    page.goto("/settings/labels")
    rows = page.locator("#labels-rows tr[data-label-id]")
    vip = rows.filter(has=page.locator(".label-name", has_text=re.compile(r"^\s*VIP\s*$")))
    expect(vip.locator(".label-flow")).to_have_text(["Bienvenida VIP"])  # the flow it starts
    page.locator(".settings-new summary").click()
    page.locator("#label-name").fill("vip")  # taken, whatever the case
    page.locator("#label-new button[type=submit]").click()
    page.locator("#label-name-error").wait_for()
    assert page.locator("#label-name").get_attribute("aria-invalid") == "true"
    assert axe_violations(page) == []
    wait_for_htmx(page)
    page.locator("#label-name").fill("Mayoreo")
    page.locator("#label-color").fill("#2a9d8f")
    page.locator("#label-new button[type=submit]").click()
    mayoreo = rows.filter(has_text="Mayoreo")
    mayoreo.wait_for()
    wait_for_htmx(page)
    mayoreo.locator("button[hx-get$='/edit']").click()
    editing = page.locator("#labels-rows tr.settings-editing")
    editing.locator("input[name=name]").fill("Mayoristas del norte")
    editing.locator("button[type=submit]").click()
    rows.filter(has_text="Mayoristas del norte").locator("button[hx-get$='/delete']").wait_for()
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, f"settings-labels-{language}")
    rows.filter(has_text="Mayoristas del norte").locator("button[hx-get$='/delete']").click()
    page.locator(".settings-confirm button[type=submit]").click()
    expect(rows.filter(has_text="Mayoristas del norte")).to_have_count(0)

    # ---- canned replies
    page.goto("/settings/canned")
    canned = page.locator("#canned-rows tr[data-canned-id]")
    expect(canned).to_have_count(2)
    page.locator(".settings-new summary").click()
    page.locator("#canned-code").fill("Hola Mundo")  # spaces and capitals: refused by the API's rule
    page.locator("#canned-content").fill("¡Hola {{contact.first_name}}! ¿En qué te ayudo?")
    page.locator("#canned-new button[type=submit]").click()
    page.locator("#canned-code-error").wait_for()
    assert page.locator("#canned-content").input_value().startswith("¡Hola")  # what was typed stays
    assert axe_violations(page) == []
    wait_for_htmx(page)
    page.locator("#canned-code").fill("hola")
    page.locator("#canned-new button[type=submit]").click()
    expect(canned).to_have_count(3)
    wait_for_htmx(page)
    hola = canned.filter(has_text="/hola")
    hola.locator("button[hx-get$='/edit']").click()
    page.locator("#canned-rows tr.settings-editing input[name=title]").fill("Saludo")
    page.locator("#canned-rows tr.settings-editing button[type=submit]").click()
    canned.filter(has_text="Saludo").wait_for()
    wait_for_htmx(page)
    page.locator("#canned-search").fill("atención")
    expect(canned).to_have_count(1)
    page.locator("#canned-search").fill("")
    expect(canned).to_have_count(3)
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, f"settings-canned-{language}")
    canned.filter(has_text="/envio").locator("button[hx-get$='/delete']").click()
    page.locator(".settings-confirm button[type=submit]").click()
    expect(canned).to_have_count(2)

    page.set_viewport_size(PHONE)
    for url in ("/settings/labels", "/settings/canned"):
        page.goto(url)
        page.locator("h1").wait_for()
        assert _no_sideways_scroll(page), f"{url} scrolls sideways on a phone"
        assert axe_violations(page) == []
    screenshot(page, f"settings-canned-{language}-phone")
    assert errors == []
