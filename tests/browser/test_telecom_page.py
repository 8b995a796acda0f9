"""The desk's Telecom page: supervisors see the organization's lines, portings, travel eSIMs and balance
(read only); agents get 403 and no link; another organization's data never shows; lists page by the API's
cursor; the page is accessible and looked at in both languages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.telecom import pages as telecom_pages
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in
from tests.browser.inbox.data import signed_in_client
from tests.conftest import Org
from tests.telecom.conftest import CURP, Partner

HX = {"HX-Request": "true", "HX-Target": "telecom-pane"}


@pytest.fixture
def partner(client: FlaskClient, org: Org, runner: FlaskCliRunner) -> Partner:
    loaded = runner.invoke(args=["telecom", "catalogue", "load"])
    assert loaded.exit_code == 0, loaded.output
    return Partner(client, org, runner)


def _story(partner: Partner) -> dict[str, Any]:
    partner.credit("2000.00")
    user = partner.verified_user(full_name="Gloria Hernández de la Cruz Villaseñor y Montenegro")
    line = partner.line(user)
    porting = partner.post(
        "/portings",
        {
            "phone_number": "+525598765432",
            "nip": "4321",
            "nip_issued_at": datetime.now(UTC).isoformat(),
            "user": user["id"],
            "holder": {"full_name": user["full_name"], "person_type": "person", "curp": CURP},
        },
    )
    assert porting.status_code in (201, 202), porting.get_json()
    esim = partner.post("/data_esims", {"offer": "off_us_5gb_15d", "user": user["id"]})
    assert esim.status_code in (201, 202), esim.get_json()
    return {"user": user, "line": line, "porting": porting.get_json(), "esim": esim.get_json()}


def test_supervisors_see_the_lines_and_agents_are_refused(
    app: Flask,
    partner: Partner,
    org: Org,
    other_org: Org,
    make_user: Callable[..., DeskLogin],
    client: FlaskClient,
    runner: FlaskCliRunner,
) -> None:
    story = _story(partner)
    theirs = Partner(client, other_org, runner)
    their_line = theirs.line() if theirs.credit("500.00") is None else None
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    agent = make_user(org, "Ana Agent")

    browser = signed_in_client(app.test_client(), boss.email, boss.password)
    page = browser.get("/telecom").get_data(as_text=True)
    assert story["line"]["id"] in page and "Gloria Hernández" in page
    assert their_line is not None and their_line["id"] not in page  # another organization's line
    balance = partner.balance()
    for part in ("available", "ledger"):  # the API's decimal strings, as money in the page's language
        whole, cents = balance[part].split(".")
        assert f'data-balance="{part}">MX${int(whole):,}.{cents}<' in page, (part, balance)
    for tab, wanted in (("portings", "+525598765432"), ("esims", "data_esim"), ("balance", "credit")):
        html = browser.get(f"/telecom?tab={tab}", headers=HX).get_data(as_text=True)
        assert "<html" not in html, tab
        if tab == "esims":
            assert story["esim"].get("id", "") in html, html
        else:
            assert wanted in html, (tab, html)

    desk = signed_in_client(app.test_client(), agent.email, agent.password)
    assert desk.get("/telecom").status_code == 403
    assert "/telecom" not in desk.get("/inbox").get_data(as_text=True)  # no link for agents
    assert "/telecom" in browser.get("/inbox").get_data(as_text=True)


def test_lists_page_by_cursor_with_a_flat_query_count(
    app: Flask,
    partner: Partner,
    org: Org,
    make_user: Callable[..., DeskLogin],
    queries: Callable[[], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(telecom_pages, "PAGE_SIZE", 4)
    partner.credit("20000.00")
    user = partner.verified_user()  # a CURP holds at most 10 lines
    made = [partner.line(user)["id"] for _ in range(2)]
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    browser = signed_in_client(app.test_client(), boss.email, boss.password)
    with queries() as few:
        first = browser.get("/telecom?tab=lines", headers=HX).get_data(as_text=True)
    assert all(line_id in first for line_id in made) and "Show more" not in first
    more = [partner.line(user)["id"] for _ in range(5)]
    with queries() as many:
        page = browser.get("/telecom?tab=lines", headers=HX).get_data(as_text=True)
    assert many.count == few.count  # names and plans are loaded per list, not per row
    assert "Show more" in page and more[-1] in page and made[0] not in page  # newest first, 4 a page
    after = page.split("after=")[1].split('"')[0]
    rest = browser.get(f"/telecom/more?tab=lines&after={after}").get_data(as_text=True)
    assert made[0] in rest and "Show more" not in rest and more[-1] not in rest


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_the_page_in_a_browser(
    partner: Partner,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    locale: str,
) -> None:
    _story(partner)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = new_context(locale=locale).new_page()
    sign_in(page, boss)
    page.wait_for_url("**/desk")
    page.locator("nav a[href$='/telecom']").click()
    page.wait_for_selector("#telecom-rows tr")
    assert axe_violations(page) == []
    screenshot(page, f"telecom-{locale[:2]}")
    page.locator("#telecom-pane .nav-link").nth(1).click()  # portings, without a reload
    page.wait_for_selector("#telecom-rows tr:has-text('+525598765432')")
    assert "tab=portings" in page.url
    page.go_back()
    page.wait_for_selector("#telecom-rows tr")
