"""The API keys page in Chromium: a supervisor creates a key, copies it with the button, the key answers
the API over HTTP, and once revoked on the page (after the confirmation) the API refuses it; in both
languages, at 1440 px and on a phone, axe-core clean and without a console error. Agents get the designed
403 on every settings URL of these pages. Screenshots: docs/screenshots/settings-keys-*.png."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org

WIDE = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def _api_status(context: Any, key: str) -> int:
    """The API's answer to the key, over HTTP to the same server the page uses."""
    return int(context.request.get("/v1/organizations", headers={"X-API-Key": key}).status)


def _until(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_a_key_created_on_the_page_works_until_revoked_on_the_page(
    org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any], locale: str
) -> None:
    language = locale[:2]
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    context = new_context(locale=locale)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.set_viewport_size(WIDE)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.goto("/settings/keys")
    page.locator("[data-settings-nav=keys][aria-current=page]").wait_for()
    assert page.locator("#keys-rows tr[data-state=active]").count() == 1  # the organization's own key
    assert axe_violations(page) == []

    name = "Integración del CRM de Distribuidora Nacional del Norte" if language == "es" else "Partner CRM"
    page.locator("#key-name").fill(name)
    page.locator("#keys-new button[type=submit]").click()
    panel = page.locator("#key-issued")
    panel.wait_for()
    wait_for_htmx(page)
    key = page.locator("#new-key").input_value()
    assert key.startswith("sk_live_") and len(key) == 48
    page.locator("[data-copy='#new-key']").click()
    page.locator("[data-copy='#new-key'] [data-copy-label]").filter(
        has_text="Copiada" if language == "es" else "Copied"
    ).wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == key
    row = page.locator("#keys-rows tr", has_text=key[:16])
    assert row.get_attribute("data-state") == "active"
    assert axe_violations(page) == []
    screenshot(page, f"settings-keys-{language}")

    assert _api_status(context, key) == 200  # the key works against the API

    row.locator("button", has_text="Revocar" if language == "es" else "Revoke").click()
    confirm = page.locator(f"#{row.get_attribute('id')} .key-confirm")
    confirm.wait_for()
    assert axe_violations(page) == []
    confirm.locator("button[type=submit]").click()
    page.locator("#keys-rows tr[data-state=revoked]", has_text=key[:16]).wait_for()
    assert _until(lambda: _api_status(context, key) == 401), "the revoked key still answers"
    assert _api_status(context, org.live_key) == 200  # the others keep working

    page.set_viewport_size(PHONE)
    page.reload()
    page.locator("#keys-rows tr[data-state=revoked]").first.wait_for()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "scrolls sideways"
    assert axe_violations(page) == []
    screenshot(page, f"settings-keys-{language}-phone")
    assert errors == []


def test_agents_get_403_on_every_settings_url_of_these_pages(
    org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent = make_user(org, "Ana Agente")
    page = new_context().new_page()
    sign_in(page, agent)
    page.wait_for_url("**/desk")
    for url in ("/settings/keys", "/settings/labels", "/settings/canned"):
        response = page.goto(url)
        assert response is not None and response.status == 403, url
        assert page.locator("h1").count() == 1  # the designed page, not a bare text
    assert page.locator("a[href$='/settings/keys']").count() == 0
