"""The desk's tab counts come from one query and say what each tab's own list says, under every filter."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask

from blueprints.inbox.services import conversations as inbox
from blueprints.inbox.services.tab_counts import NO_MEMBER, tab_counts
from tests.conftest import Org
from tests.inbox.conftest import MakeConversation
from tests.support.queries import count_queries

ME = "mem_me"
OTHER = "mem_other"
TEAM = str(uuid.uuid4())


@pytest.fixture
def inbox_rows(org: Org, make_conversation: MakeConversation) -> None:
    rows: list[dict[str, Any]] = [
        {"member_id": ME, "labels": ["vip"], "messages": 1},
        {"member_id": ME, "service": "instagram", "contact_name": "Lucía Méndez"},
        {"member_id": ME, "archived": True, "labels": ["vip"]},
        {"member_id": OTHER, "team_id": TEAM, "labels": ["vip"]},
        {"member_id": OTHER},
        {"team_id": TEAM, "contact_name": "Lucía Ruiz"},
        {"labels": ["vip", "urgent"], "status": "closed"},
        {},
        {"archived": True},
    ]
    for row in rows:
        make_conversation(org, **row)


def per_tab(organization_id: uuid.UUID, base: inbox.ConversationFilter, member: str | None) -> dict[str, int]:
    """What each tab's own list counts (the reference the single query must match)."""
    common = replace(base, archived=False)
    tabs = {
        "mine": replace(common, assigned_member_id=member or NO_MEMBER),
        "unassigned": replace(common, unassigned=True),
        "team": replace(common, team_ids=[TEAM]),
        "all": common,
    }
    return {tab: inbox.count_conversations(organization_id, query) for tab, query in tabs.items()}


@pytest.mark.parametrize(
    "base",
    [
        inbox.ConversationFilter(),
        inbox.ConversationFilter(labels=["vip"]),
        inbox.ConversationFilter(services=["instagram"]),
        inbox.ConversationFilter(search="Lucía"),
        inbox.ConversationFilter(labels=["urgent"], organization_address="106540352242922"),
    ],
    ids=["none", "label", "channel", "search", "label-and-address"],
)
@pytest.mark.parametrize("member", [ME, None])
def test_one_query_gives_every_tab_what_its_list_counts(
    app: Flask, org: Org, inbox_rows: None, base: inbox.ConversationFilter, member: str | None
) -> None:
    organization_id = uuid.UUID(org.id)
    with app.app_context():
        expected = per_tab(organization_id, base, member)
        with count_queries() as counted:
            counts = tab_counts(organization_id, base, member_id=member, team_ids=[TEAM])
        assert counts == expected
        assert counted.count == 1


def test_what_the_desk_sees_without_filters(app: Flask, org: Org, inbox_rows: None) -> None:
    with app.app_context():
        counts = tab_counts(uuid.UUID(org.id), inbox.ConversationFilter(), member_id=ME, team_ids=[TEAM])
    # archived conversations are in no open tab; the closed one still is
    assert counts == {"mine": 2, "unassigned": 3, "team": 2, "all": 7}


def test_no_team_and_no_member_count_nothing_and_unknown_tabs_are_refused(
    app: Flask, org: Org, inbox_rows: None
) -> None:
    with app.app_context():
        counts = tab_counts(uuid.UUID(org.id), inbox.ConversationFilter(), member_id=None, team_ids=[])
        assert counts["mine"] == 0 and counts["team"] == 0
        with pytest.raises(ValueError):
            tab_counts(
                uuid.UUID(org.id), inbox.ConversationFilter(), member_id=ME, team_ids=[], tabs=["archived"]
            )
