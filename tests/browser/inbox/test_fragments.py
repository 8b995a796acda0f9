"""The inbox's URLs without a browser: which fragment an htmx request gets, what a history restore gets,
that the list costs the same number of queries for 3 rows as for a full page, and that the pages refuse
what is not the signed-in user's organization."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from blueprints.inbox import pages as inbox_pages
from tests.browser.conftest import DeskLogin
from tests.browser.inbox.data import api, conversation_of, incoming, signed_in_client
from tests.conftest import Org
from tests.fakes.fixtures import Deliver

HX = {"HX-Request": "true"}


def test_each_url_answers_the_whole_page_or_the_fragment_its_target_names(
    app: Flask, wa: Any, deliver: Deliver, client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin]
) -> None:
    login = make_user(org, "Ana Agent")
    incoming(deliver, "5215588880001", "Hola", name="Rafa")
    conversation = conversation_of(client, org, "5215588880001")["id"]
    browser = signed_in_client(app.test_client(), login.email, login.password)

    page = browser.get(f"/inbox/c/{conversation}?tab=unassigned")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "<html" in html and 'id="thread"' in html and "Rafa" in html
    # the header names the organization's number as people know it, not the provider's id for it
    header = html.split('class="thread-header', 1)[1].split("</header>", 1)[0]
    assert "+525500000001" in header and f">{wa.address}<" not in header
    assert {"HX-Request", "HX-Target"} <= set(page.vary)

    listing = browser.get(f"/inbox/c/{conversation}?tab=unassigned", headers={**HX, "HX-Target": "list-pane"})
    html = listing.get_data(as_text=True)
    assert "<html" not in html and 'id="rows"' in html and 'id="thread"' not in html
    assert 'id="list-tabs" hx-swap-oob' in html

    opened = browser.get(f"/inbox/c/{conversation}", headers={**HX, "HX-Target": "conversation"})
    html = opened.get_data(as_text=True)
    assert (
        "<html" not in html
        and 'id="thread"' in html
        and 'id="side-panel"' in html
        and 'id="rows"' not in html
    )

    # the back button's history restore wants the whole page even though it says HX-Request
    restored = browser.get(
        f"/inbox/c/{conversation}",
        headers={**HX, "HX-Target": "list-pane", "HX-History-Restore-Request": "true"},
    )
    assert "<html" in restored.get_data(as_text=True)

    # the desk's home is the inbox
    assert 'id="inbox"' in browser.get("/desk").get_data(as_text=True)


def test_the_list_costs_the_same_queries_for_few_and_many_rows(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    queries: Callable[[], Any],
) -> None:
    login = make_user(org, "Ana Agent")
    browser = signed_in_client(app.test_client(), login.email, login.password)
    # a full first page (the total needs its count query) with one assignee, then twice as many rows,
    # more assignees and labels: the same statements
    for n in range(26):
        incoming(deliver, f"52155999900{n:02d}", f"hola {n}", name=f"Cliente {n}")
    first = conversation_of(client, org, "5215599990001")["id"]
    api(client, org, "PATCH", f"/conversations/{first}", extra={"member_id": login.member_id})
    incoming(deliver, "5215599990001", "sigo aquí", timestamp=str(int(time.time()) + 5))  # on the first page
    few = _count(browser, queries)
    mate = make_user(org, "Bruno Compañero")
    for n in range(26, 60):
        incoming(deliver, f"52155999900{n:02d}", f"hola {n}", name=f"Cliente {n}")
    for n, member in ((40, login.member_id), (45, mate.member_id), (50, mate.member_id)):
        conversation = conversation_of(client, org, f"55999900{n:02d}")["id"]
        api(
            client,
            org,
            "PATCH",
            f"/conversations/{conversation}",
            extra={"labels": ["VIP"], "member_id": member},
        )
    many = _count(browser, queries)
    assert len(many) == len(few), "\n".join(map(repr, [*few, "----", *many]))
    first = browser.get("/inbox?tab=all").get_data(as_text=True)
    assert first.count('class="conv-row') == inbox_pages.PAGE_SIZE
    # 60 conversations: "load more" twice, then the end of the list
    assert 'id="load-more"' in first
    seen = first.count('class="conv-row')
    while True:
        more = browser.get(f"/inbox/rows?tab=all&skip={seen}").get_data(as_text=True)
        seen += more.count('class="conv-row')
        if 'id="load-more"' not in more:
            break
    assert seen == 60


def test_a_filtered_list_comes_first_and_its_tab_counts_follow(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    queries: Callable[[], Any],
) -> None:
    login = make_user(org, "Ana Agent")
    browser = signed_in_client(app.test_client(), login.email, login.password)
    for n, name in enumerate(("Marta Vidal", "Marta Ortiz", "Pedro Gil")):
        incoming(deliver, f"52155777700{n:02d}", "hola", name=name)
    mine = conversation_of(client, org, "5215577770000")["id"]
    api(client, org, "PATCH", f"/conversations/{mine}", extra={"member_id": login.member_id})

    # the rows of a search at once, with placeholders where the counts go and the signal to fetch them
    with queries() as counted:
        pane = browser.get("/inbox?tab=all&q=Marta", headers={**HX, "HX-Target": "list-pane"})
    html = pane.get_data(as_text=True)
    assert html.count('class="conv-row') == 2 and "Pedro" not in html
    assert pane.headers["HX-Trigger-After-Settle"] == "desk:refresh-counts"
    assert html.count('aria-busy="true"') == 4  # Mine, Unassigned, Team, All (the archive is never counted)
    assert not any("count(*) FILTER" in statement for statement in counted.statements)

    # which the tabs then fetch with the same filters: Mine 1, Unassigned 1, All 2
    tabs = browser.get("/inbox/counts?tab=all&q=Marta", headers=HX).get_data(as_text=True)
    assert 'data-count="mine">1<' in tabs and 'data-count="unassigned">1<' in tabs
    assert 'data-count="all">2<' in tabs and "aria-busy" not in tabs

    # unfiltered, the counts come with the list; a next page of rows has no tabs and counts nothing
    plain = browser.get("/inbox?tab=all", headers={**HX, "HX-Target": "list-pane"})
    assert "HX-Trigger-After-Settle" not in plain.headers
    assert 'data-count="all">3<' in plain.get_data(as_text=True)
    with queries() as counted:
        browser.get("/inbox/rows?tab=all&q=Marta&skip=1")
    assert not any("count(*) FILTER" in statement for statement in counted.statements)


def _count(browser: FlaskClient, queries: Callable[[], Any]) -> list[str]:
    with queries() as counted:
        response = browser.get("/inbox", headers={**HX, "HX-Target": "list-pane"})
    assert response.status_code == 200
    return [statement.split("FROM", 1)[-1][:50] for statement in counted.statements]


def test_pages_of_another_organization_are_not_found(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    other_org: Org,
    make_user: Callable[..., DeskLogin],
) -> None:
    incoming(deliver, "5215588880002", "Privado", name="Cliente Acme")
    conversation = conversation_of(client, org, "5215588880002")["id"]
    message = api(client, org, "GET", f"/messages?conversation_id={conversation}")["data"][0]["id"]
    outsider = make_user(other_org, "Gus Globex")
    browser = signed_in_client(app.test_client(), outsider.email, outsider.password)
    for path in (
        f"/inbox/c/{conversation}",
        f"/inbox/c/{conversation}/messages/{message}",
        f"/inbox/c/{conversation}/activity",
        f"/inbox/row/{conversation}",
        "/inbox/c/not-a-uuid",
    ):
        assert browser.get(path).status_code == 404, path
    assert "Cliente Acme" not in browser.get("/inbox?q=Acme").get_data(as_text=True)


def test_pages_need_a_signed_in_user(client: FlaskClient) -> None:
    response = client.get("/inbox")
    assert response.status_code == 302 and "/signin" in response.headers["Location"]


def test_older_messages_come_in_windows_without_repeating(
    app: Flask, wa: Any, deliver: Deliver, client: FlaskClient, org: Org, make_user: Callable[..., DeskLogin]
) -> None:
    login = make_user(org, "Ana Agent")
    start = int(time.time()) - 3600
    for n in range(35):
        incoming(deliver, "5215577660001", f"mensaje {n:02d}", name="Largo", timestamp=str(start + n * 10))
    conversation = conversation_of(client, org, "5215577660001")["id"]
    browser = signed_in_client(app.test_client(), login.email, login.password)

    page = browser.get(f"/inbox/c/{conversation}").get_data(as_text=True)
    newest = page.split('id="thread"', 1)[1].split('id="side-panel"', 1)[0]  # the panel's summary quotes them
    shown = [f"mensaje {n:02d}" for n in range(35) if f"mensaje {n:02d}<" in newest]
    assert shown == [f"mensaje {n:02d}" for n in range(5, 35)]
    assert f"/inbox/c/{conversation}/older?skip=30" in newest

    older = browser.get(f"/inbox/c/{conversation}/older?skip=30").get_data(as_text=True)
    assert [f"mensaje {n:02d}" for n in range(35) if f"mensaje {n:02d}<" in older] == [
        f"mensaje {n:02d}" for n in range(5)
    ]
    assert "Beginning of the conversation" in older and "older?skip" not in older
