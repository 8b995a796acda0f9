"""The audit log page in a real browser: a supervisor opens it from the navigation, filters by action
without a reload, loads older entries with "Show more", and the table stays readable in a narrow window,
in both languages; screenshots go to docs/screenshots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner
from playwright.sync_api import expect

from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.conftest import Org

TEAMS = 27  # more than a page (25), so "Show more" appears


def _history(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> None:
    """Administrative actions by the organization's key and from the command line."""
    base = f"/v1/members/organizations/{org.id}"
    for n in range(TEAMS):
        assert (
            client.post(f"{base}/teams", json={"name": f"Equipo {n:02d}"}, headers=org.headers()).status_code
            == 201
        )
    team = client.get(f"{base}/teams", headers=org.headers()).get_json()["data"][0]
    assert (
        client.patch(
            f"{base}/teams/{team['id']}", json={"description": "Norte"}, headers=org.headers()
        ).status_code
        == 200
    )
    assert client.delete(f"{base}/teams/{team['id']}", headers=org.headers()).status_code == 200
    assert runner.invoke(args=["keys", "create", "--org", org.id, "--name", "integración"]).exit_code == 0
    # a label added and renamed: entries that keep their before and after
    labels = f"/v2/messages/organizations/{org.id}/labels"
    label = client.post(labels, json={"name": "vip"}, headers=org.headers()).get_json()
    renamed = client.patch(
        f"{labels}/{label['id']}", json={"name": "VIP", "color": "#e76f51"}, headers=org.headers()
    )
    assert renamed.status_code == 200


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_the_audit_page_in_a_browser(
    client: FlaskClient,
    runner: FlaskCliRunner,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
) -> None:
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    _history(client, runner, org)
    page = new_context(locale=locale).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.locator("nav a[href$='/audit']").click()
    page.wait_for_url("**/audit")
    rows = page.locator("#audit-rows tr[data-audit-id]")
    rows.first.wait_for()
    assert rows.count() == 25
    assert page.locator("#audit-rows code", has_text="team.deleted").count() == 1
    # the rename reads as before → after, the action in words
    renamed = page.locator("#audit-rows tr", has=page.locator("code", has_text="label.updated"))
    expect(renamed.locator(".audit-before")).to_have_text(
        ["(vacío)" if locale == "es-MX" else "(empty)", "vip"]
    )
    expect(renamed.locator(".audit-after")).to_have_text(["#e76f51", "VIP"])
    words = "Etiqueta modificada" if locale == "es-MX" else "Label changed"
    assert words in (renamed.text_content() or "")
    assert axe_violations(page) == []
    screenshot(page, f"audit-{locale[:2]}")

    page.locator("#audit-more button").click()  # older entries, appended in place
    rows.nth(
        TEAMS + 4
    ).wait_for()  # the teams, a change, a deletion, the CLI's key, the label's two, the set-up's
    assert page.locator("#audit-more").count() == 0

    page.locator("#audit-action").select_option("team.updated")
    page.wait_for_url("**action=team.updated**")
    expect(rows).to_have_count(1)
    assert page.locator("#audit-rows code", has_text="team.updated").count() == 1

    wait_for_htmx(page)  # a change made while the new pane settles would go to the form being replaced
    page.locator("#audit-action").select_option("member.deleted")  # nothing of that kind: the empty state
    page.locator("[data-empty]").wait_for()

    wait_for_htmx(page)
    page.locator("#audit-action").select_option("")
    page.locator("#audit-rows tr[data-audit-id]").first.wait_for()
    page.set_viewport_size({"width": 800, "height": 800})  # a narrow window scrolls nothing sideways
    assert page.evaluate(
        "(() => { const t = document.querySelector('.audit-table').parentElement;"
        " return t.scrollWidth <= t.clientWidth + 1; })()"
    ), "the audit table scrolls sideways in a narrow window"
    assert errors == []
