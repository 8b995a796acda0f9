"""Sign-in as a person does it, in a real browser: both languages, wrong passwords, sessions per
environment, CSRF, and names that try to run script."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in
from tests.conftest import Org


def test_sign_in_and_out(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org, "Ana Agent")
    page = new_context().new_page()
    page.goto("/")
    assert page.url.endswith("/signin?next=%2Fdesk")
    assert page.locator("h1").inner_text().strip() == "Agent Desk"
    assert axe_violations(page) == []
    screenshot(page, "signin-en")
    sign_in(page, login)
    page.wait_for_url("**/desk")
    assert page.locator(".org-name").inner_text() == "Acme"
    assert page.locator(".me-name").inner_text() == "Ana Agent"
    assert axe_violations(page) == []
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/signin")
    page.goto("/desk")
    assert "/signin" in page.url


def test_a_wrong_password_is_refused_with_a_clear_message(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org)
    page = new_context().new_page()
    page.goto("/signin")
    page.locator("#email").fill(login.email)
    page.locator("#password").fill("not the password")
    page.locator("form button[type=submit]").click()
    assert page.locator("#signin-error").inner_text() == "Wrong e-mail or password."
    assert page.locator("#email").input_value() == login.email  # what was typed is kept
    page.goto("/desk")
    assert "/signin" in page.url


def test_spanish_from_the_browser_and_the_menu_remembers_english(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org, "Beatriz Agente")
    page = new_context(locale="es-MX").new_page()
    page.goto("/signin")
    assert page.locator("html").get_attribute("lang") == "es"
    assert page.locator("form button[type=submit]").inner_text() == "Iniciar sesión"
    screenshot(page, "signin-es")
    sign_in(page, login)
    page.wait_for_url("**/desk")
    assert page.get_by_role("button", name="Cerrar sesión").is_visible()
    assert axe_violations(page) == []
    screenshot(page, "desk-es")
    with page.expect_navigation():
        page.locator("#language").select_option("en")
    assert page.get_by_role("button", name="Sign out").is_visible()
    page.reload()
    assert page.locator("html").get_attribute("lang") == "en"


def test_markup_in_names_is_shown_as_text(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], make_org: Callable[..., Org]
) -> None:
    hostile = make_org('<img src=x onerror="window.__pwned=1">Org<script>window.__pwned=2</script>')
    login = make_user(hostile, "<script>window.__pwned=3</script>Eve", email="eve@example.test")
    page = new_context().new_page()
    sign_in(page, login)
    page.wait_for_url("**/desk")
    assert page.evaluate("window.__pwned") is None
    assert "<script>" in page.locator(".me-name").inner_text()
    assert page.locator("img[src=x]").count() == 0


def test_sessions_are_per_environment(
    new_context: Callable[..., Any], make_user: Callable[..., DeskLogin], org: Org
) -> None:
    login = make_user(org)  # users create makes a live user
    page = new_context().new_page()
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto("/sandbox/desk")
    assert "/sandbox/signin" in page.url  # the sandbox has its own users and its own session


def test_a_form_post_without_the_csrf_token_is_refused(client: FlaskClient) -> None:
    response = client.post("/signin", data={"email": "a@b.c", "password": "whatever1"})
    assert response.status_code == 400
