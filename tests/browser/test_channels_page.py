"""The channels page in a real browser: a supervisor connects a WhatsApp number with an access token on
/settings/channels; the number is then in the messaging API's ``GET {msg}/addresses`` and the token is in
no page, fragment or answer the browser received, nor in the API's; an address whose token Meta refused
is highlighted; routing is changed in place; an agent gets the designed 403 on the channels and
broadcasts pages; both languages, axe-core clean, no console error. Screenshots go to docs/screenshots."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from playwright.sync_api import expect

from blueprints.channels import services as channels
from core.environments import LIVE, in_environment
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in
from tests.conftest import Org

TOKEN = "EAAGbrowserSecretToken0987654321"


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_a_channel_connected_on_the_page_is_in_the_api_without_its_token(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
) -> None:
    language = locale[:2]
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    team = client.post(
        f"/v1/members/organizations/{org.id}/teams", json={"name": "Ventas Norte"}, headers=org.headers()
    ).get_json()
    with in_environment(app, LIVE):  # a Page whose token Meta refused, with a long name
        channels.connect_address(
            uuid.UUID(org.id),
            channels.Connection(
                service="messenger",
                address="104857600012345",
                verified_name="Refaccionaria y Ferretería Hermanos Gutiérrez de la Cruz, Sucursal Centro",
                access_token="expired",
                status="reauth_required",
            ),
        )
    page = new_context(locale=locale).new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    problems: list[str] = []
    received: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)

    def keep(response: Any) -> None:
        if "text" in (response.headers.get("content-type") or "") or "json" in (
            response.headers.get("content-type") or ""
        ):
            try:
                received.append(response.text())
            except Exception:  # a redirect has no body to read
                received.append("")

    page.on("response", keep)
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.goto("/settings/channels")
    expect(page.locator("tr.channel-reauth [data-status='reauth_required']")).to_have_count(1)
    expect(page.locator("[data-settings-nav='channels']")).to_have_attribute("aria-current", "page")

    page.locator("#connect-service").select_option("whatsapp")
    page.locator("#connect-provider").select_option("simulator")
    page.locator("#connect-address").fill("5215550077")
    page.locator("#connect-phone_number").fill("+52 1 55 5555 0077")
    page.locator("#connect-verified_name").fill("Tienda Norte")
    page.locator("#connect-access_token").fill(TOKEN)
    page.locator("#channel-connect button[type=submit]").click()
    row = page.locator("tr[data-address='5215550077']")
    expect(row).to_contain_text("+525555550077")
    expect(page.locator("#connect-access_token")).to_have_value("")  # the form comes back empty
    expect(page.locator("#desk-alerts .alert-success")).to_have_count(1)

    # the messaging API lists it, without the token
    listed = client.get(f"/v2/messages/organizations/{org.id}/addresses", headers=org.headers())
    assert TOKEN not in listed.get_data(as_text=True)
    assert [a["address"] for a in listed.get_json() if a["address"] == "5215550077"] == ["5215550077"]
    assert [a["has_access_token"] for a in listed.get_json() if a["address"] == "5215550077"] == [True]

    # routing to a team, in place
    row.locator("select[name=routing]").select_option(f"team:{team['id']}")
    row.locator("button[type=submit]").click()
    expect(page.locator("#desk-alerts .alert-success")).to_have_count(2)
    routing = client.get(
        f"/v2/messages/organizations/{org.id}/addresses/5215550077/routing", headers=org.headers()
    ).get_json()
    assert routing["target"] == "team" and routing["team_id"] == team["id"]

    page.reload()
    assert TOKEN not in page.content()
    assert not [text for text in received if TOKEN in text], "the token came back in a response"
    assert axe_violations(page) == []
    screenshot(page, f"channels-{language}")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, f"channels-phone-{language}")
    assert problems == []


def test_an_agent_gets_the_designed_403(
    org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent = make_user(org, "Ana Agent")
    page = new_context().new_page()
    sign_in(page, agent)
    page.wait_for_url("**/desk")
    assert page.locator("nav a[href$='/broadcasts']").count() == 0
    for url in ("/settings/channels", "/broadcasts", "/broadcasts/new", f"/broadcasts/{uuid.uuid4()}"):
        response = page.goto(url)
        assert response is not None and response.status == 403, url
        expect(page.locator("h1")).to_contain_text("You do not have access to this page")
