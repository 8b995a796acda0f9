"""The fragments the CRM pages fetch to follow changes made elsewhere, without a browser: a card a board
does not show yet (``new=1``: the card with the heads when it belongs on the board, 204 when not), the
deal board's heads alone, the list view's rows (with the totals; 204, or the totals alone, when the deal
is not in the list), the drawers' live answers (their parts by id, the page's heading levels), the
designed 404 for another organization's ids, ``task.updated`` naming its deal and ticket, and statements
that do not grow with the board's cards."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from core import events
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.support.desk_users import create_desk_user, sign_in

HX = {"HX-Request": "true"}
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


class Desk:
    """A signed-in agent's browser without the browser."""

    def __init__(self, client: FlaskClient, member_id: str) -> None:
        self.client = client
        self.member_id = member_id
        page = client.get("/desk").get_data(as_text=True)
        found = CSRF.search(page)
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, query_string=params or None, headers=HX)


def _sign_in(app: Flask, runner: FlaskCliRunner, org: Org, name: str) -> Desk:
    email = f"{name.split()[0].lower()}.{org.id[:6]}@example.test"
    member_id = create_desk_user(runner, org.id, email, name=name)["member_id"]
    client = app.test_client()
    sign_in(client, email)
    return Desk(client, member_id)


@pytest.fixture
def agent(wired: None, app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return _sign_in(app, runner, org, "Ana Agent")


@pytest.fixture
def teammate(wired: None, app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return _sign_in(app, runner, org, "Luis Ventas")


def _text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def _stage(pipeline: dict[str, Any], name: str) -> str:
    return str(next(s["id"] for s in pipeline["stages"] if s["name"] == name))


def _deal_count(html: str, stage_id: str) -> int:
    head = re.search(rf'id="deals-head-{stage_id}".*?class="[^"]*deals-count[^"]*"[^>]*>(\d+)<', html, re.S)
    assert head is not None, stage_id
    return int(head.group(1))


# ---- the deal board ------------------------------------------------------------------------------------


def test_a_deal_the_board_does_not_show_is_answered_with_its_card_and_the_heads(
    agent: Desk, teammate: Desk, crm: Crm
) -> None:
    pipeline = crm.pipeline()
    qualified = _stage(pipeline, "Qualified")
    board = agent.get("/deals", pipeline=pipeline["id"])
    html = _text(board)
    # the board says where to ask for a card it does not show, and for its heads
    assert "data-card-url=" in html and "new=1" in html and "data-heads-url=" in html
    mine = crm.deal(name="Nuevo aquí", amount="1200", owner_id=agent.member_id, stage_id=qualified)
    card = agent.get(f"/deals/{mine['id']}/card", pipeline=pipeline["id"], new="1")
    text = _text(card)
    assert card.status_code == 200
    assert f'data-deal-id="{mine["id"]}"' in text and f'data-in="{qualified}"' in text
    assert 'data-order="' in text  # where the card goes in its column
    # every column head and the totals, out of band
    assert f'id="deals-head-{qualified}" hx-swap-oob="true"' in text and 'id="deals-totals"' in text
    assert _deal_count(text, qualified) == 1


def test_a_deal_not_on_the_board_is_204_and_a_known_card_that_left_is_empty_with_the_heads(
    agent: Desk, teammate: Desk, crm: Crm
) -> None:
    pipeline = crm.pipeline()
    theirs = crm.deal(name="De Luis", owner_id=teammate.member_id)
    # the board shows "my deals" by default: Luis's deal is not on it
    assert agent.get(f"/deals/{theirs['id']}/card", pipeline=pipeline["id"], new="1").status_code == 204
    # ... but is on everyone's board
    everyone = agent.get(f"/deals/{theirs['id']}/card", pipeline=pipeline["id"], owner="all", new="1")
    assert everyone.status_code == 200 and f'data-deal-id="{theirs["id"]}"' in _text(everyone)
    # another pipeline's board does not show it either
    other = crm.ok(crm.post("/pipelines", {"name": "Renovaciones", "key": "REN"}), 201)
    assert (
        agent.get(f"/deals/{theirs['id']}/card", pipeline=other["id"], owner="all", new="1").status_code
        == 204
    )
    # a card the board shows (no new=1) that left it is answered empty, with the heads, as before
    left = agent.get(f"/deals/{theirs['id']}/card", pipeline=pipeline["id"])
    assert left.status_code == 200 and "data-card-id" not in _text(left) and "deals-head-" in _text(left)
    # deleted elsewhere: on no board any more (no 404, which is another organization's deal)
    crm.ok(crm.delete(f"/deals/{theirs['id']}"))
    assert agent.get(f"/deals/{theirs['id']}/card", pipeline=pipeline["id"], new="1").status_code == 204
    gone = agent.get(f"/deals/{theirs['id']}/card", pipeline=pipeline["id"], owner="all")
    assert gone.status_code == 200 and "data-card-id" not in _text(gone) and "deals-head-" in _text(gone)
    # ... and an open drawer of it is told it is gone
    assert agent.get(f"/deals/{theirs['id']}/live").status_code == 204


def test_the_deal_heads_follow_the_boards_filters(agent: Desk, teammate: Desk, crm: Crm) -> None:
    pipeline = crm.pipeline()
    first = _stage(pipeline, "New")
    crm.deal(name="Mía", amount="100", owner_id=agent.member_id)
    crm.deal(name="Suya", amount="300", owner_id=teammate.member_id)
    mine = _text(agent.get("/deals/heads", pipeline=pipeline["id"]))
    everyone = _text(agent.get("/deals/heads", pipeline=pipeline["id"], owner="all"))
    assert _deal_count(mine, first) == 1 and _deal_count(everyone, first) == 2
    assert "data-card-id" not in everyone and 'id="deals-totals" hx-swap-oob="true"' in everyone


def test_the_list_view_says_where_it_follows_its_deals_and_a_row_is_answered_with_the_totals(
    agent: Desk, teammate: Desk, crm: Crm
) -> None:
    pipeline = crm.pipeline()
    mine = crm.deal(name="Mía en la lista", amount="1200", owner_id=agent.member_id)
    listed = _text(agent.get("/deals", view="list", sort="amount", dir="asc"))
    # where to ask for a row, and the list as it is (its order) to fetch again
    assert "data-deal-list" in listed and "data-row-url=" in listed and "data-row-url-id=" in listed
    view_url = re.search(r'data-view-url="([^"]+)"', listed)
    assert view_url is not None and "view=list" in view_url.group(1) and "sort=amount" in view_url.group(1)
    assert f'<tr data-deal-id="{mine["id"]}"' in listed
    # a row the list shows: the row again, and the totals out of band (no column heads: there are none)
    row = agent.get(f"/deals/{mine['id']}/row", pipeline=pipeline["id"])
    text = _text(row)
    assert row.status_code == 200 and f'<tr data-deal-id="{mine["id"]}"' in text
    assert "MX$1,200.00" in text and 'id="deals-totals" hx-swap-oob="true"' in text
    assert "deals-head-" not in text and "data-card-id" not in text
    # a deal the list does not show: 204 unless it belongs in it (then desk.js fetches the list again)
    theirs = crm.deal(name="De Luis", owner_id=teammate.member_id)
    assert agent.get(f"/deals/{theirs['id']}/row", pipeline=pipeline["id"], new="1").status_code == 204
    joined = agent.get(f"/deals/{theirs['id']}/row", pipeline=pipeline["id"], owner="all", new="1")
    assert joined.status_code == 200 and f'<tr data-deal-id="{theirs["id"]}"' in _text(joined)
    # a row that left the list (given to Luis, deleted): the totals alone
    crm.ok(crm.patch(f"/deals/{mine['id']}", {"owner_id": teammate.member_id}))
    left = agent.get(f"/deals/{mine['id']}/row", pipeline=pipeline["id"])
    assert left.status_code == 200 and "<tr" not in _text(left) and 'id="deals-totals"' in _text(left)
    crm.ok(crm.delete(f"/deals/{theirs['id']}"))
    gone = agent.get(f"/deals/{theirs['id']}/row", pipeline=pipeline["id"], owner="all")
    assert gone.status_code == 200 and "<tr" not in _text(gone)


def test_another_organizations_deal_is_a_404_on_the_live_fragments(
    app: Flask, runner: FlaskCliRunner, other_org: Org, agent: Desk, crm: Crm
) -> None:
    secret = crm.deal(name="Secreto")
    outsider = _sign_in(app, runner, other_org, "Gus Globex")
    deleted = crm.deal(name="Borrado")
    crm.ok(crm.delete(f"/deals/{deleted['id']}"))  # deleted, but still not the outsider's to hear about
    for deal_id in (secret["id"], deleted["id"]):
        for path in (
            f"/deals/{deal_id}/card?new=1",
            f"/deals/{deal_id}/card",
            f"/deals/{deal_id}/live",
            f"/deals/{deal_id}/row?new=1",
            f"/deals/{deal_id}/row",
        ):
            answer = outsider.get(path)
            assert answer.status_code == 404 and "Secreto" not in _text(answer), path
    assert outsider.get("/deals/not-an-id/card", new="1").status_code == 404
    assert outsider.get("/deals/not-an-id/row", new="1").status_code == 404


def test_the_deal_card_and_heads_cost_the_same_statements_for_10_and_60_deals(
    agent: Desk, crm: Crm, queries: Callable[[], Any]
) -> None:
    pipeline = crm.pipeline()
    contact = crm.contact(name="Rosa")

    def add(count: int) -> None:
        for n in range(count):
            crm.deal(name=f"D{n}", amount="10", owner_id=agent.member_id,
                     contacts=[{"contact_id": contact["id"], "is_primary": True}])  # fmt: skip

    add(10)
    probe = crm.deal(name="Sonda", owner_id=agent.member_id)
    urls = (
        f"/deals/{probe['id']}/card?pipeline={pipeline['id']}&new=1",
        f"/deals/heads?pipeline={pipeline['id']}",
        f"/deals/{probe['id']}/row?pipeline={pipeline['id']}&new=1",
    )
    for url in urls:
        agent.get(url)
    counted: dict[str, list[int]] = {url: [] for url in urls}
    for _round in range(2):
        for url in urls:
            with queries() as statements:
                assert agent.get(url).status_code == 200
            counted[url].append(statements.count)
        add(50)
    for url, (few, many) in counted.items():
        assert few == many, (url, few, many)


# ---- the ticket board ----------------------------------------------------------------------------------


def test_a_ticket_the_board_does_not_show_is_answered_when_it_belongs_and_204_otherwise(
    agent: Desk, teammate: Desk, crm: Crm
) -> None:
    board = _text(agent.get("/tickets"))
    assert "data-card-url=" in board and "data-heads-url=" in board
    assert "ticket-board-live" not in board  # the heads come with the cards, or when asked
    ticket = crm.ticket(title="Sin señal", assignee_member_id=teammate.member_id)
    card = agent.get(f"/tickets/{ticket['id']}/card", new="1")
    text = _text(card)
    assert card.status_code == 200 and f'data-ticket-id="{ticket["id"]}"' in text
    assert 'data-in="new"' in text and 'data-order="' in text and 'id="board-head-new"' in text
    # a board filtered by assignee: not on it
    filtered = agent.get(f"/tickets/{ticket['id']}/card", new="1", assignee=agent.member_id)
    assert filtered.status_code == 204 and _text(filtered) == ""
    # without new=1 the card that left is answered empty with the heads, as before
    left = agent.get(f"/tickets/{ticket['id']}/card", assignee=agent.member_id)
    assert left.status_code == 200 and "data-card-id" not in _text(left) and "board-head-new" in _text(left)


def test_another_organizations_ticket_is_a_404_on_the_live_fragments(
    app: Flask, runner: FlaskCliRunner, other_org: Org, agent: Desk, crm: Crm
) -> None:
    secret = crm.ticket(title="Secreto")
    outsider = _sign_in(app, runner, other_org, "Gus Globex")
    for path in (f"/tickets/{secret['id']}/card?new=1", f"/tickets/{secret['id']}?as_page=1"):
        answer = outsider.get(path)
        assert answer.status_code == 404 and "Secreto" not in _text(answer), path
    assert outsider.get("/tickets/not-an-id/card", new="1").status_code == 404


def test_the_ticket_card_costs_the_same_statements_for_10_and_60_tickets(
    agent: Desk, crm: Crm, queries: Callable[[], Any]
) -> None:
    for n in range(10):
        crm.ticket(title=f"T{n}")
    probe = crm.ticket(title="Sonda")
    url = f"/tickets/{probe['id']}/card?new=1"
    agent.get(url)
    with queries() as few:
        assert agent.get(url).status_code == 200
    for n in range(50):
        crm.ticket(title=f"U{n}")
    with queries() as many:
        assert agent.get(url).status_code == 200
    assert few.count == many.count, (few.count, many.count)


# ---- drawers -------------------------------------------------------------------------------------------


def test_the_deal_drawer_says_where_it_follows_its_deal_and_the_page_keeps_its_headings(
    agent: Desk, crm: Crm
) -> None:
    deal = crm.deal(name="Con cajón", owner_id=agent.member_id)
    drawer = _text(agent.get(f"/deals/{deal['id']}"))
    assert f'data-live-sheet="deal" data-live-id="{deal["id"]}"' in drawer
    assert f'data-live-url="/deals/{deal["id"]}/live"' in drawer and "data-live-gone" in drawer
    for part in ("deal-details", "deal-items", "deal-contacts", "deal-conversations", "deal-tasks",
                 "deal-stage-times", "deal-timeline"):  # fmt: skip
        assert f'id="{part}"' in drawer, part
    assert '<h3 class="deal-section-title" id="deal-tasks-title">' in drawer
    # the deal's own page asks with as_page=1, and gets the page's heading levels
    page = _text(agent.client.get(f"/deals/{deal['id']}"))
    assert f'data-live-url="/deals/{deal["id"]}/live?as_page=1"' in page
    live = _text(agent.get(f"/deals/{deal['id']}/live", as_page="1"))
    assert '<h2 class="deal-section-title" id="deal-tasks-title">' in live and "<html" not in live


def test_the_ticket_drawer_has_its_live_parts(agent: Desk, crm: Crm) -> None:
    ticket = crm.ticket(title="Con partes")
    drawer = _text(agent.get(f"/tickets/{ticket['id']}"))
    assert f'data-live-sheet="ticket" data-live-id="{ticket["id"]}"' in drawer
    for part in ("header", "state", "priority", "assignee", "assign-me", "facts", "description", "tasks",
                 "history"):  # fmt: skip
        assert re.search(rf'id="ticket-part-{part}" data-live-part', drawer), part
    page = _text(agent.client.get(f"/tickets/{ticket['id']}"))
    assert f'data-live-url="/tickets/{ticket["id"]}?as_page=1"' in page


def test_task_updated_names_the_deal_and_the_ticket_of_the_task(app: Flask, crm: Crm) -> None:
    deal = crm.deal(name="Con tarea")
    ticket = crm.ticket(title="Con tarea")
    published: list[Any] = []
    events.subscribe("task.updated", published.append)
    try:
        task = crm.task(title="Llamar", deal_id=deal["id"])
        crm.ok(crm.patch(f"/tasks/{task['id']}", {"ticket_id": ticket["id"], "deal_id": None}))
    finally:
        events._subscribers["task.updated"].remove(published.append)
    assert [(e.data["change"], e.data["deal_id"], e.data["ticket_id"]) for e in published] == [
        ("created", deal["id"], None),
        ("updated", None, ticket["id"]),
    ]
