"""The supervisors' team pages in headless Chromium: the availability dashboard follows presence live (a
change through the API and one made in another browser appear without a reload) and draws its charts;
a supervisor adds an agent on the People page, who signs in elsewhere, is sent to change the password
and then reaches the inbox; teams and reasons are edited on their pages; an agent gets the designed 403
on every URL of these pages. Both languages, no console error, axe-core without serious or critical
violations; screenshots of the dashboard (1440 px and a phone) and the settings pages in docs/screenshots."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from playwright.sync_api import expect

from blueprints.members.services import presence
from core.db import utcnow
from core.environments import LIVE, in_environment
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org

DESKTOP = {"width": 1440, "height": 1000}
PHONE = {"width": 390, "height": 844}
REASONS = ("Comida", "Formación", "Reunión")
# (member, hours ago, status, reason): a week of a small support team, oldest first per person
DAY = (
    (9, "online", None),
    (13, "away", "Comida"),
    (14, "online", None),
    (16, "busy", "Reunión"),
    (17, "online", None),
    (18, "offline", None),
)


def _api(client: FlaskClient, org: Org, method: str, path: str, body: Any = None) -> Any:
    response = client.open(
        f"/v1/members/organizations/{org.id}{path}", method=method, json=body, headers=org.headers()
    )
    assert response.status_code < 300, response.get_data(as_text=True)
    return response.get_json()


def _week(app: Flask, client: FlaskClient, org: Org, people: list[DeskLogin]) -> dict[str, str]:
    """Reasons, a team, and seven days of status history for ``people`` (back-dated changes through the
    presence service, as the demo seeds them): a nine-hour shift a day with lunch and a meeting (a training
    for the newest), the last one ending an hour ago; everyone ends the week offline."""
    reasons = {
        name: _api(client, org, "POST", "/members/unavailable-reasons", {"name": name})["id"]
        for name in REASONS
    }
    _api(client, org, "POST", "/teams", {"name": "Soporte", "member_ids": [p.member_id for p in people[:3]]})
    _api(client, org, "POST", "/teams", {"name": "Ventas", "member_ids": [p.member_id for p in people[2:]]})
    now = utcnow()
    with in_environment(app, LIVE):
        organization_id = uuid.UUID(org.id)
        for offset, person in enumerate(people):
            for days_ago in range(6, -1, -1):
                start = now - timedelta(days=days_ago, hours=10)  # each shift ends an hour before "now"
                for hour, status, reason in DAY:
                    if person == people[-1] and status == "busy":
                        status, reason = "away", "Formación"  # the newest one trains instead of meeting
                    presence.change_status(
                        organization_id,
                        person.member_id,
                        status,
                        uuid.UUID(reasons[reason]) if reason else None,
                        changed_by="test",
                        at=start + timedelta(hours=hour - 9, minutes=7 * offset),
                    )
    return reasons


@pytest.fixture
def team(client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin], app: Flask) -> dict[str, Any]:
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    people = [make_user(org, name) for name in ("Ana López", "Benjamín Ruiz", "Carla Díaz", "Diego Torres")]
    reasons = _week(app, client, org, people)
    # now: Ana online, Carla busy in a meeting; Ben and Diego offline
    _api(client, org, "PATCH", f"/members/{people[0].member_id}/status", {"status": "online"})
    _api(
        client,
        org,
        "PATCH",
        f"/members/{people[2].member_id}/status",
        {"status": "busy", "reason_id": reasons["Reunión"]},
    )
    return {"boss": boss, "people": people, "reasons": reasons}


def _watched(
    new_context: Callable[..., Any], locale: str, viewport: dict[str, int] | None = None
) -> tuple[Any, list[str]]:
    page = new_context(locale=locale).new_page()
    if viewport:
        page.set_viewport_size(viewport)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    return page, problems


def _unexpected(problems: list[str]) -> list[str]:
    """The browser logs each refused form's 422 (an answer the page shows under its field) as a failed
    load: that is the design, not a problem."""
    return [p for p in problems if "status of 422" not in p]


def _card(page: Any, status: str) -> Any:
    return page.locator(f'#team-now [data-team-status="{status}"]')


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_the_dashboard_follows_presence_live_and_draws_the_charts(
    client: FlaskClient,
    org: Org,
    team: dict[str, Any],
    new_context: Callable[..., Any],
    locale: str,
) -> None:
    language = locale[:2]
    ana, ben, carla, diego = team["people"]
    page, problems = _watched(new_context, locale, viewport=DESKTOP)
    sign_in(page, team["boss"])
    page.wait_for_url("**/desk")
    page.locator("nav a[href$='/team']").click()
    page.wait_for_url("**/team")
    page.wait_for_selector("body[data-live=on]")
    assert page.locator("html").get_attribute("lang") == language
    expect(_card(page, "online").locator(f'[data-member-row="{ana.member_id}"]')).to_have_count(1)
    expect(_card(page, "busy").locator(f'[data-member-row="{carla.member_id}"]')).to_contain_text("Reunión")
    # the charts are drawn, by Chart.js, from the pane's data
    for kind in ("days", "people", "reasons"):
        page.wait_for_function(
            "kind => { const c = document.querySelector(`canvas[data-team-chart=${kind}]`);"
            " return c && window.Chart && Chart.getChart(c) && c.width > 0; }",
            arg=kind,
        )
    rows = page.locator("#team-people-table tbody tr")
    expect(rows).to_have_count(5)  # four agents and the supervisor
    page.evaluate("window.stayed = true")  # gone if the page reloads

    # a change through the API appears without a reload
    _api(
        client,
        org,
        "PATCH",
        f"/members/{ben.member_id}/status",
        {"status": "away", "reason_id": team["reasons"]["Comida"]},
    )
    away = _card(page, "away").locator(f'[data-member-row="{ben.member_id}"]')
    expect(away).to_contain_text("Comida")
    expect(_card(page, "offline").locator(f'[data-member-row="{ben.member_id}"]')).to_have_count(0)

    # and so does one made by Diego in his own browser, from the presence menu
    other = new_context(locale=locale).new_page()
    sign_in(other, diego)
    other.wait_for_url("**/desk")
    other.wait_for_selector("body[data-live=on]")
    other.locator("#presence-switcher > button").click()
    other.locator("#status-online").check()
    other.locator("#presence-switcher form button[type=submit]").click()
    expect(_card(page, "online").locator(f'[data-member-row="{diego.member_id}"]')).to_have_count(1)
    assert page.evaluate("window.stayed") is True
    wait_for_htmx(page)
    screenshot(page, f"team-dashboard-{language}")
    assert axe_violations(page) == []

    # filters swap the pane, the charts are drawn again for the team
    page.locator("#team-filter-team").select_option(label="Ventas")
    page.wait_for_url("**team_id=**")
    expect(rows).to_have_count(2)
    page.wait_for_function("() => Chart.getChart(document.querySelector('canvas[data-team-chart=days]'))")
    expect(_card(page, "online").locator("[data-member-row]")).to_have_count(1)  # Diego, not Ana
    page.locator('[data-preset="month"]').click()
    expect(page.locator('[data-preset="month"]')).to_have_attribute("aria-current", "true")
    with page.expect_download() as download:
        page.locator('[data-export="availability"]').click()
    assert download.value.suggested_filename.startswith("member-availability_")

    # on a phone
    page.goto("/team")
    page.set_viewport_size(PHONE)
    page.wait_for_function("() => Chart.getChart(document.querySelector('canvas[data-team-chart=days]'))")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "scrolls sideways"
    assert axe_violations(page) == []
    screenshot(page, f"team-dashboard-phone-{language}")
    assert problems == []


def test_a_supervisor_adds_an_agent_who_changes_the_password_at_first_sign_in(
    org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    make_user(org, "Ana López")
    page, problems = _watched(new_context, "es-MX", viewport=DESKTOP)
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.locator("nav a[href$='/settings/people']").click()
    page.wait_for_url("**/settings/people")
    form = page.locator("#person-new")
    form.locator("#name").fill("Rosa Nueva")
    form.locator("#email").fill("rosa@example.test")
    form.locator("#password").fill("corta")
    form.locator("button[type=submit]").click()
    expect(page.locator('[data-error-for="password"]')).to_contain_text("al menos 8")
    expect(page.locator("#person-new #name")).to_have_value("Rosa Nueva")  # what was typed stays
    page.locator("#person-new #password").fill("bienvenida-2026")
    page.locator("#person-new button[type=submit]").click()
    row = page.locator('tr[data-user-email="rosa@example.test"]')
    expect(row.locator('[data-state="must-change"]')).to_have_count(1)
    expect(page.locator("#desk-alerts .alert-success")).to_contain_text("rosa@example.test")
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, "settings-people-es")

    # Rosa signs in on her own computer: the password first, then the desk
    rosa, rosa_problems = _watched(new_context, "es-MX")
    sign_in(rosa, DeskLogin("rosa@example.test", "bienvenida-2026", "Rosa Nueva", "", org))
    rosa.wait_for_url("**/account/password**")
    expect(rosa.locator("#password-must-change")).to_contain_text("Rosa Nueva")
    assert axe_violations(rosa) == []
    screenshot(rosa, "password-change-es")
    rosa.goto("/inbox")  # nothing else opens before the password is changed
    rosa.wait_for_url("**/account/password**")
    rosa.locator("#current_password").fill("bienvenida-2026")
    rosa.locator("#password").fill("bienvenida-2026")
    rosa.locator("#confirm").fill("bienvenida-2026")
    rosa.locator("form button[type=submit]").first.click()
    expect(rosa.locator('[data-error-for="password"]')).to_contain_text("distinta")
    rosa.locator("#current_password").fill("bienvenida-2026")
    rosa.locator("#password").fill("mi propia clave")
    rosa.locator("#confirm").fill("mi propia clave")
    rosa.locator("form button[type=submit]").first.click()
    rosa.wait_for_url("**/desk")
    rosa.locator("#inbox").wait_for()
    rosa.wait_for_selector("body[data-live=on]")
    page.reload()
    expect(page.locator('tr[data-user-email="rosa@example.test"] [data-state="must-change"]')).to_have_count(
        0
    )
    assert _unexpected(problems) == [] and _unexpected(rosa_problems) == []


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_teams_and_reasons_are_edited_on_their_pages(
    org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any], locale: str
) -> None:
    language = locale[:2]
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    ana = make_user(org, "Ana López")
    page, problems = _watched(new_context, locale, viewport=DESKTOP)
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.goto("/settings/people")
    page.locator('.settings-nav a[data-settings-nav="teams"]').click()
    page.wait_for_url("**/settings/teams")
    page.locator("#team-new #name").fill("Soporte")
    page.locator("#team-new button[type=submit]").click()
    card = page.locator(".team-card", has_text="Soporte")
    card.locator("select").select_option(ana.member_id)
    card.locator("form.card-footer button[type=submit]").click()
    expect(card.locator(f'[data-team-member="{ana.member_id}"]')).to_have_count(1)
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, f"settings-teams-{language}")
    card.locator(f'[data-team-member="{ana.member_id}"] button').click()
    expect(card.locator(f'[data-team-member="{ana.member_id}"]')).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    card.locator(".card-header button").click()
    expect(page.locator(".team-card")).to_have_count(0)

    page.locator('.settings-nav a[data-settings-nav="reasons"]').click()
    page.wait_for_url("**/settings/reasons")
    for name in ("Comida", "Formación"):
        wait_for_htmx(page)
        page.locator("#reason-new #name").fill(name)
        page.locator("#reason-new button[type=submit]").click()
        expect(page.locator(f'[data-reason-name="{name}"]')).to_have_count(1)
    wait_for_htmx(page)
    page.locator("#reason-new #name").fill("comida")  # the same name: refused under the field
    page.locator("#reason-new button[type=submit]").click()
    expect(page.locator('[data-error-for="name"]')).to_have_count(1)
    lunch = page.locator('[data-reason-name="Comida"]')
    lunch.locator("[data-bs-toggle=collapse]").click()
    rid = lunch.get_attribute("data-reason-id")
    lunch.locator(f"#name-{rid}").fill("Almuerzo")
    lunch.locator(f"#reason-edit-{rid} button[type=submit]").click()
    renamed = page.locator('[data-reason-name="Almuerzo"]')
    expect(renamed).to_have_count(1)
    renamed.locator("form button[type=submit]").first.click()  # archive
    expect(page.locator('[data-reason-name="Almuerzo"][data-archived]')).to_have_count(1)
    wait_for_htmx(page)
    assert axe_violations(page) == []
    screenshot(page, f"settings-reasons-{language}")
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "scrolls sideways"
    assert axe_violations(page) == []
    assert _unexpected(problems) == []


def test_an_agent_gets_403_on_every_url_of_these_pages(
    app: Flask, org: Org, make_user: Callable[..., DeskLogin], new_context: Callable[..., Any]
) -> None:
    agent = make_user(org, "Ana López")
    page, problems = _watched(new_context, "es-MX")
    sign_in(page, agent)
    page.wait_for_url("**/desk")
    rail = page.locator("nav.desk-rail")
    assert (
        rail.locator("a[href$='/team']").count() == 0 and rail.locator("a[href*='/settings/']").count() == 0
    )
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    checked = 0
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("members_pages."):
            continue
        path = re.sub(r"<[^>]+>", str(uuid.uuid4()), rule.rule)
        if "GET" in (rule.methods or ()):
            response = page.goto(path)
            assert response is not None and response.status == 403, path
            expect(page.locator("h1")).to_be_visible()  # the designed page, in the desk's style
        if "POST" in (rule.methods or ()):
            answer = page.request.post(path, headers={"X-CSRFToken": token or ""}, form={"name": "x"})
            assert answer.status == 403, f"POST {path}"
        checked += 1
    assert checked >= 15
    # the 403 page logs the refused load as a console error; nothing else may
    assert [p for p in problems if "403" not in p] == []
