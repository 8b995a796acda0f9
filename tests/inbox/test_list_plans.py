"""The inbox's default lists are read off an index in their order, on SQLite and on PostgreSQL: the page
query of each desk tab is captured as the service runs it and explained; no sort step may appear (a sort
means every conversation of the organization is read to show 20 of them)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, text

from blueprints.inbox.services.conversations import ConversationFilter, list_conversations
from core.db import db
from core.environments import LIVE, in_environment

TABS = {
    "all": ConversationFilter(archived=False),
    "archived": ConversationFilter(archived=True),
    "mine": ConversationFilter(archived=False, assigned_member_id="mem_1"),
    "unassigned": ConversationFilter(archived=False, unassigned=True),
    "team": ConversationFilter(archived=False, team_ids=["team-1"]),
}


@contextmanager
def _captured() -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)


def _plan(statement: str, parameters: Any) -> str:
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
        return "\n".join(str(row[-1]) for row in rows)
    # PostgreSQL would rightly scan a tiny table; forbid the scan and the sort so that the plan shows
    # whether an index can deliver the order at all (a disabled node still appears when nothing else can).
    connection.execute(text("SET LOCAL enable_seqscan = off"))
    connection.execute(text("SET LOCAL enable_sort = off"))
    connection.execute(text("SET LOCAL enable_bitmapscan = off"))
    rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters).fetchall()
    return "\n".join(str(row[0]) for row in rows)


@pytest.mark.parametrize("tab", sorted(TABS))
def test_each_tab_reads_its_page_off_an_index_in_order(app: Flask, tab: str) -> None:
    with in_environment(app, LIVE):
        with _captured() as seen:
            list_conversations(uuid.uuid4(), TABS[tab])
        [(statement, parameters)] = [
            (s, p) for s, p in seen if "FROM conversations" in s and "ORDER BY" in s and "count(" not in s
        ]
        plan = _plan(statement, parameters)
        db.session.rollback()
    assert "ix_conversations_inbox" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
