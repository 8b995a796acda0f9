"""The desk's frame as a person meets it: the rail of sections (and what a role sees in it), the designed
403 and 404 pages in both languages (API clients keep the API's JSON), refusals as alerts that close by
themselves, a phone's drawer, and a console without errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient, FlaskCliRunner

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org
from tests.support.desk_users import create_desk_user
from tests.support.desk_users import sign_in as sign_in_client

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def _desk(client: FlaskClient, runner: FlaskCliRunner, org: Org, role: str = "agent") -> FlaskClient:
    user = create_desk_user(runner, org.id, f"{role}@shell.example", role=role, name=f"{role.title()} Person")
    return sign_in_client(client, user["email"])


def test_an_unknown_page_is_the_designed_404_and_the_api_keeps_its_json(client: FlaskClient) -> None:
    page = client.get("/no-such-page", headers=HTML)
    assert page.status_code == 404
    assert page.mimetype == "text/html"
    assert "This page is not here" in page.get_data(as_text=True)
    spanish = client.get("/no-such-page", headers={**HTML, "Accept-Language": "es-MX,es;q=0.9"})
    assert "Esta página no está aquí" in spanish.get_data(as_text=True)
    # a client that does not ask for HTML, and any API path, keep the spec's body
    assert client.get("/no-such-page").get_json() == {"error_msg": "404 Route Not Found"}
    assert client.get("/v1/no-such-route", headers=HTML).get_json() == {"error_msg": "404 Route Not Found"}
    assert client.get("/v2/messages/nope", headers=HTML).get_json() == {"error_msg": "404 Route Not Found"}


def test_a_supervisor_page_is_the_designed_403_for_an_agent(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    agent = _desk(client, runner, org)
    refused = agent.get("/telecom", headers=HTML)
    assert refused.status_code == 403
    text = refused.get_data(as_text=True)
    assert "You do not have access to this page" in text and "Back to the desk" in text
    fragment = agent.get("/telecom", headers={**HTML, "HX-Request": "true"})
    assert fragment.status_code == 403 and 'class="alert' in fragment.get_data(as_text=True)


def test_the_rail_shows_what_the_role_may_open(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    agent = _desk(client, runner, org)
    sections = re.findall(r'data-nav="([a-z]+)"', agent.get("/desk").get_data(as_text=True))
    assert "inbox" in sections
    assert not {"agents", "telecom", "audit"} & set(sections)
    agent.post("/signout", data={"csrf_token": _token(agent)})
    supervisor = _desk(client, runner, org, role="supervisor")
    sections = re.findall(r'data-nav="([a-z]+)"', supervisor.get("/desk").get_data(as_text=True))
    assert {"inbox", "agents", "telecom", "audit"} <= set(sections)
    assert sections.index("inbox") < sections.index("agents")  # people's work first, then supervision


def test_the_rail_badges_come_again_as_a_fragment(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    agent = _desk(client, runner, org)
    fragment = agent.get("/desk/nav", headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert 'id="nav-badge-inbox" hx-swap-oob="true"' in fragment.get_data(as_text=True)


def _token(client: FlaskClient) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/desk").get_data(as_text=True))
    assert found is not None
    return found.group(1)


# ---- in a browser ------------------------------------------------------------------------------------


def test_the_frame_at_1440_and_on_a_phone(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org, "Ana Agent")
    errors: list[str] = []
    for locale, width, height in (("en-US", 1440, 900), ("es-MX", 1440, 900), ("es-MX", 390, 844)):
        context = new_context(locale=locale)
        context.set_default_timeout(8000)
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        sign_in(page, login)
        page.wait_for_url("**/desk")
        wait_for_htmx(page)
        rail = page.locator("#desk-rail")
        tools = [page.locator("#presence-switcher"), page.locator("#signout-menu")]
        for tool in tools:  # the presence menu and sign-out are on screen at every width
            box = tool.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1
        if width < 768:
            assert not rail.is_visible()
            page.get_by_role("button", name="Menú").click()
            rail.locator("[data-nav=inbox]").wait_for(state="visible")
            page.wait_for_function("() => document.getAnimations().length === 0")  # the drawer has slid in
            screenshot(page, "shell-rail-phone-es")
            page.keyboard.press("Escape")
            page.wait_for_function("() => document.getAnimations().length === 0")
        else:
            assert rail.locator("[data-nav=inbox].active").is_visible()
            org_name = page.locator(".topbar-org")
            assert org_name.inner_text() == "Acme"  # never shrunk to "…"
        assert axe_violations(page) == []
        if width >= 768:
            screenshot(page, f"shell-{locale[:2]}")
    assert errors == []


def test_a_refusal_is_an_alert_that_closes_by_itself(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org, "Ana Agent")
    page = new_context().new_page()
    sign_in(page, login)
    page.wait_for_url("**/desk")
    # an alert arrives as the server sends one (the kit's refusal fragment), with a short life for the test
    page.evaluate(
        """() => document.getElementById('desk-alerts').insertAdjacentHTML('afterbegin',
            '<div class="alert alert-danger alert-dismissible fade show" role="alert" data-autoclose="400">'
            + 'No</div>')"""
    )
    alert = page.locator("#desk-alerts .alert")
    alert.wait_for(state="visible")
    alert.wait_for(state="detached", timeout=4000)
