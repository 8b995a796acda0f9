"""The inbox's default lists are read off an index in their order, on SQLite and on PostgreSQL: the page
query of each desk tab is captured as the service runs it and explained; no sort step may appear (a sort
means every conversation of the organization is read to show 20 of them)."""

from __future__ import annotations

import uuid

import pytest
from flask import Flask

from blueprints.inbox.services.conversations import ConversationFilter, list_conversations
from core.db import db
from core.environments import LIVE, in_environment
from tests.support.plans import captured_statements, query_plan

TABS = {
    "all": ConversationFilter(archived=False),
    "archived": ConversationFilter(archived=True),
    "mine": ConversationFilter(archived=False, assigned_member_id="mem_1"),
    "unassigned": ConversationFilter(archived=False, unassigned=True),
    "team": ConversationFilter(archived=False, team_ids=["team-1"]),
}


@pytest.mark.parametrize("tab", sorted(TABS))
def test_each_tab_reads_its_page_off_an_index_in_order(app: Flask, tab: str) -> None:
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            list_conversations(uuid.uuid4(), TABS[tab])
        [(statement, parameters)] = [
            (s, p) for s, p in seen if "FROM conversations" in s and "ORDER BY" in s and "count(" not in s
        ]
        plan = query_plan(statement, parameters)
        db.session.rollback()
    # On these tiny tables PostgreSQL may find the whole-organization index plus a filter as cheap as the
    # tab's own (a tie on costs); whichever, the order comes off an index.
    assert "ix_conversations_inbox" in plan or "ix_conversations_list" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
