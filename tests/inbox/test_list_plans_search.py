"""The API's conversation and message lists are read off indexes on SQLite and PostgreSQL: the default
list (archived and not) in its order, a keyset page as a seek in that order, the label filter as an
indexed EXISTS, and search through the text indexes (FTS5 trigram tables on SQLite, pg_trgm GIN indexes on
PostgreSQL) rather than a scan comparing every row. The statements are captured as the services run them
and explained (``tests/support/plans.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask

from blueprints.inbox.services.conversations import (
    CONTACT_TEXT,
    CONVERSATION_TEXT,
    ConversationFilter,
    list_conversations,
)
from blueprints.messaging.services import list_messages
from core.db import db
from core.environments import LIVE, in_environment
from core.pagination import encode_cursor
from tests.core.text_plans import assert_trigram_indexes_serve, text_plan
from tests.support.plans import captured_statements, query_plan

SOME_TIME = datetime(2026, 11, 1, 12, tzinfo=UTC)
SOME_TIME_CURSOR = encode_cursor("last_message_timestamp:desc", [SOME_TIME, uuid.UUID(int=7)])


def _plans(app: Flask, run: Callable[[uuid.UUID], Any], table: str, explain: Callable[..., str]) -> list[str]:
    """The plans of every statement ``run`` sends that reads ``table`` (count queries included)."""
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            run(uuid.uuid4())
        plans = [explain(s, p) for s, p in seen if f"FROM {table}" in s]
        db.session.rollback()
    assert plans, f"no statement read {table}"
    return plans


def _dialect(app: Flask) -> str:
    with in_environment(app, LIVE):
        return db.session.get_bind().dialect.name


def test_the_default_list_reads_its_page_off_the_whole_organization_index(app: Flask) -> None:
    [page, *_] = _plans(
        app, lambda org: list_conversations(org, ConversationFilter()), "conversations", query_plan
    )
    assert "ix_conversations_list" in page, page
    assert "TEMP B-TREE" not in page and "Sort" not in page, page


def test_a_keyset_page_is_a_seek_in_the_list_order(app: Flask) -> None:
    """The page after a cursor starts where the cursor points in an index of the list's order: neither
    the rows before it nor a sort are read (the cost of page 1 at any depth)."""

    def run(org: uuid.UUID) -> None:
        list_conversations(org, ConversationFilter(archived=False, cursor=SOME_TIME_CURSOR))

    [page, *_] = _plans(app, run, "conversations", query_plan)
    assert "ix_conversations_inbox" in page or "ix_conversations_list" in page, page
    assert "TEMP B-TREE" not in page and "Sort" not in page, page
    if _dialect(app) == "sqlite":
        assert "(last_message_at,id)<(?,?)" in page.replace(" ", ""), page  # a seek, not a filter
    else:
        assert "Index Cond" in page or "Index Scan" in page, page


def test_the_label_filter_probes_an_index(app: Flask) -> None:
    def run(org: uuid.UUID) -> None:
        list_conversations(org, ConversationFilter(labels=["vip", "queja"]))

    for plan in _plans(app, run, "conversations", query_plan):
        assert "conversation_labels" in plan, plan
        if _dialect(app) == "sqlite":
            assert "SCAN conversation_labels" not in plan, plan
            assert "SEARCH conversation_labels USING" in plan, plan
        else:
            assert "Seq Scan on conversation_labels" not in plan, plan
            assert "Index" in plan and "conversation_labels" in plan, plan


@pytest.mark.parametrize("search", ["bermú", "5511", "ana lu"])
def test_search_goes_through_the_text_indexes(app: Flask, search: str) -> None:
    def run(org: uuid.UUID) -> None:
        list_conversations(org, ConversationFilter(search=search))

    for plan in _plans(app, run, "conversations", text_plan):
        if _dialect(app) == "sqlite":
            assert "SCAN conversations_fts VIRTUAL TABLE INDEX" in plan, plan
            assert "SCAN messaging_contacts_fts VIRTUAL TABLE INDEX" in plan, plan
            assert "SCAN conversations\n" not in plan + "\n", plan  # never every conversation
        else:
            # A store this small is rightly read through the organization's index; the ILIKEs the list
            # sends must be servable by the trigram indexes, which the planner picks on real data.
            assert "~~*" in plan, plan
            for index in (CONVERSATION_TEXT, CONTACT_TEXT):
                assert_trigram_indexes_serve(app, index, search)


def test_the_message_list_reads_its_page_off_an_index_in_order(app: Flask) -> None:
    for cursor in (
        None,
        encode_cursor("timestamp:desc", [SOME_TIME, SOME_TIME, uuid.UUID(int=7)]),
    ):

        def run(org: uuid.UUID, cursor: str | None = cursor) -> None:
            list_messages(org, take=20, cursor=cursor)

        [page, *_] = _plans(app, run, "messages", query_plan)
        assert "ix_messages_organization_timestamp" in page, page
        assert "TEMP B-TREE" not in page and "Sort" not in page, page
