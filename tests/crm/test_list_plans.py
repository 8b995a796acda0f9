"""The deal, ticket and task lists are read off an index in their order, on SQLite and on PostgreSQL, by
default and with their common filters: the page query is captured as the service runs it and
explained; no sort step may appear (a sort means every row of the organization is read to show 20).
The total of a full page is counted from an index alone (no table rows read)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import text

from blueprints.crm.services.deals import DealFilters, list_deals
from blueprints.crm.services.pipelines import ensure_default_pipeline, list_pipelines, pipeline_summary
from blueprints.crm.services.tasks import TaskFilters, list_tasks
from blueprints.crm.services.tickets import TicketFilters, list_tickets
from core.db import db
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.support.plans import captured_statements, query_plan

SOME_ID = uuid.UUID("00000000-0000-4000-8000-000000000001")

# list -> (table, service, {case: (filters, the index that must deliver the order)})
LISTS: dict[str, tuple[str, Callable[[uuid.UUID, Any], Any], dict[str, tuple[Any, str]]]] = {
    "deals": (
        "crm_deals",
        list_deals,
        {
            "default": (DealFilters(), "ix_crm_deals_list"),
            "pipeline": (DealFilters(pipeline_id=SOME_ID), "ix_crm_deals_list_pipeline"),
            "stage": (DealFilters(stage_id=SOME_ID), "ix_crm_deals_list_stage"),
            "owner": (DealFilters(owner_id="mem_1"), "ix_crm_deals_list_owner"),
            "status": (DealFilters(status="open"), "ix_crm_deals_list_status"),
            "unassigned": (DealFilters(unassigned=True), "ix_crm_deals_list_unassigned"),
        },
    ),
    "tickets": (
        "crm_tickets",
        list_tickets,
        {
            "default": (TicketFilters(), "ix_crm_tickets_list"),
            "state": (TicketFilters(state="new"), "ix_crm_tickets_list_state"),
            "priority": (TicketFilters(priority="high"), "ix_crm_tickets_list_priority"),
            "assignee": (TicketFilters(assignee_member_id="mem_1"), "ix_crm_tickets_list_assignee"),
            "unassigned": (TicketFilters(unassigned=True), "ix_crm_tickets_list_unassigned"),
        },
    ),
    "tasks": (
        "crm_tasks",
        list_tasks,
        {
            "default": (TaskFilters(), "ix_crm_tasks_list"),
            "owner": (TaskFilters(owner_id="mem_1"), "ix_crm_tasks_list_owner"),
            "open": (TaskFilters(is_completed=False), "ix_crm_tasks_list_open"),
            "owner open": (TaskFilters(owner_id="mem_1", is_completed=False), "ix_crm_tasks_list_owner_open"),
            "overdue": (TaskFilters(overdue=True), "ix_crm_tasks_list_open"),
        },
    ),
}
CASES = [(name, case) for name, (_, _, cases) in LISTS.items() for case in cases]


def _statements(app: Flask, name: str, case: str, offset: int) -> tuple[str, str, str]:
    """The plans of the page query and of the count query of one list (an offset past the end makes
    the service count, as it does for a full page)."""
    table, service, cases = LISTS[name]
    filters, _ = cases[case]
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            service(uuid.uuid4(), type(filters)(**{**filters.__dict__, "offset": offset}))
        [page] = [(s, p) for s, p in seen if f"FROM {table}" in s and "ORDER BY" in s and "count(" not in s]
        counts = [(s, p) for s, p in seen if "count(" in s]
        dialect = db.session.connection().dialect.name
        plans = query_plan(*page), (query_plan(*counts[0]) if counts else ""), dialect
        db.session.rollback()
    return plans


@pytest.mark.parametrize(("name", "case"), CASES)
def test_each_list_reads_its_page_off_an_index_in_order(app: Flask, name: str, case: str) -> None:
    page, _, _ = _statements(app, name, case, offset=0)
    # The planner picks among the list's indexes by its statistics (on these tiny tables the default
    # index plus a filter may look cheapest, and SQLite takes ``owner_id IS NULL`` as an equality on the
    # owner index); the filter's own index is named in LISTS. Whichever, the order comes off an index.
    assert f"ix_{LISTS[name][0]}_list" in page, page
    assert "TEMP B-TREE" not in page and "Sort" not in page, page


def _vacuumed(app: Flask, table: str) -> None:
    """On PostgreSQL, the table's statistics and visibility map as autovacuum keeps them in production: an
    index-only scan needs the visibility map, and after the rows earlier tests wrote and deleted, the
    planner would otherwise read stale statistics (it chose the organization index plus a filter)."""
    with in_environment(app, LIVE):
        if db.engine.dialect.name != "postgresql":
            return
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text(f"VACUUM ANALYZE {table}"))


@pytest.mark.parametrize(("name", "case"), [(name, "default") for name in LISTS])
def test_the_total_of_a_default_list_is_counted_from_an_index_alone(app: Flask, name: str, case: str) -> None:
    _vacuumed(app, LISTS[name][0])
    _, count, dialect = _statements(app, name, case, offset=5)
    assert count, "no count query was sent"
    if dialect == "sqlite":
        assert "USING COVERING INDEX" in count, count
    else:
        assert "Index Only Scan" in count and "Seq Scan" not in count, count


def test_the_summary_groups_off_its_covering_index(app: Flask, org: Org) -> None:
    """GROUP BY stage, currency of one pipeline's live deals: read from ix_crm_deals_summary alone, in
    the grouping order (no table rows, no sort)."""
    organization_id = uuid.UUID(org.id)
    with in_environment(app, LIVE):
        ensure_default_pipeline(organization_id)
        pipeline = list_pipelines(organization_id)[0]
        with captured_statements() as seen:
            pipeline_summary(organization_id, pipeline.id)
        [grouped] = [(s, p) for s, p in seen if "GROUP BY" in s]
        dialect = db.session.connection().dialect.name
        plan = query_plan(*grouped)
        db.session.rollback()
    assert "ix_crm_deals_summary" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
    assert ("COVERING INDEX" if dialect == "sqlite" else "Index Only Scan") in plan, plan
