"""crm list indexes: deals, tickets and tasks in their default order per common filter; the summary's index

Revision ID: crm_0003
Revises: crm_0002
Create Date: 2026-11-24 10:00:00

Each list's page is read off an index in the list's ORDER BY (``created_at DESC, id DESC`` for deals,
``created_at DESC, number DESC`` for tickets, read backwards off ascending columns; ``due_date`` (undated
last), ``created_at DESC``, ``id`` for tasks, spelled out), so a page of 20 costs the same whatever the
number of rows, and the count of a full page is an index-only scan. Soft-deleted rows and the
unassigned / not-completed views are partial indexes (WHERE ...) rather than leading columns:
PostgreSQL does not treat ``x IS NULL`` as an equality when it looks for an index that delivers the
ORDER BY. ``ix_crm_deals_summary`` covers the pipeline summary's GROUP BY stage, currency with the
amounts. The single-column (organization_id, created_at) indexes they supersede are dropped.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "crm_0003"
down_revision = "crm_0002"
branch_labels = None
depends_on = None

LIVE = "deleted_at IS NULL"
OPEN_TASK = "deleted_at IS NULL AND status <> 'completed'"
# The columns of each partial index's WHERE close it: SQLite counts from a partial index alone (covering,
# no table rows read) only when they are in it; for PostgreSQL they are a few bytes per entry.
DEAL_ORDER = ["created_at", "id", "deleted_at"]
TICKET_ORDER = ["created_at", "number"]
# PostgreSQL's ASC is NULLS LAST (undated tasks last), as is SQLite's ASC NULLS LAST plan for one column.
TASK_ORDER = ["due_date", sa.text("created_at DESC"), "id", "deleted_at"]

# name -> (table, columns, WHERE or None)
INDEXES: dict[str, tuple[str, list, str | None]] = {
    "ix_crm_deals_list": ("crm_deals", ["organization_id", *DEAL_ORDER], LIVE),
    "ix_crm_deals_list_pipeline": ("crm_deals", ["organization_id", "pipeline_id", *DEAL_ORDER], LIVE),
    "ix_crm_deals_list_stage": ("crm_deals", ["organization_id", "stage_id", *DEAL_ORDER], LIVE),
    "ix_crm_deals_list_owner": ("crm_deals", ["organization_id", "owner_id", *DEAL_ORDER], LIVE),
    "ix_crm_deals_list_status": ("crm_deals", ["organization_id", "status", *DEAL_ORDER], LIVE),
    "ix_crm_deals_list_unassigned": (
        "crm_deals",
        ["organization_id", *DEAL_ORDER, "owner_id"],
        f"{LIVE} AND owner_id IS NULL",
    ),
    "ix_crm_deals_summary": (
        "crm_deals",
        ["organization_id", "pipeline_id", "stage_id", "currency", "amount", "deleted_at"],
        LIVE,
    ),
    "ix_crm_tickets_list": ("crm_tickets", ["organization_id", *TICKET_ORDER], None),
    "ix_crm_tickets_list_state": ("crm_tickets", ["organization_id", "state", *TICKET_ORDER], None),
    "ix_crm_tickets_list_priority": ("crm_tickets", ["organization_id", "priority", *TICKET_ORDER], None),
    "ix_crm_tickets_list_assignee": (
        "crm_tickets",
        ["organization_id", "assignee_member_id", *TICKET_ORDER],
        None,
    ),
    "ix_crm_tickets_list_unassigned": (
        "crm_tickets",
        ["organization_id", *TICKET_ORDER, "assignee_member_id"],
        "assignee_member_id IS NULL",
    ),
    "ix_crm_tasks_list": ("crm_tasks", ["organization_id", *TASK_ORDER], LIVE),
    "ix_crm_tasks_list_owner": ("crm_tasks", ["organization_id", "owner_id", *TASK_ORDER], LIVE),
    "ix_crm_tasks_list_open": ("crm_tasks", ["organization_id", *TASK_ORDER, "status"], OPEN_TASK),
    "ix_crm_tasks_list_owner_open": (
        "crm_tasks",
        ["organization_id", "owner_id", *TASK_ORDER, "status"],
        OPEN_TASK,
    ),
}
SUPERSEDED = {
    "ix_crm_deals_org_created": ("crm_deals", ["organization_id", "created_at"]),
    "ix_crm_tickets_org_created": ("crm_tickets", ["organization_id", "created_at"]),
}


def upgrade():
    for name, (table, columns, where) in INDEXES.items():
        partial = (
            {} if where is None else {"postgresql_where": sa.text(where), "sqlite_where": sa.text(where)}
        )
        op.create_index(name, table, columns, **partial)
    for name, (table, _) in SUPERSEDED.items():
        op.drop_index(name, table_name=table)


def downgrade():
    for name, (table, columns) in SUPERSEDED.items():
        op.create_index(name, table, columns)
    for name, (table, _, _) in reversed(list(INDEXES.items())):
        op.drop_index(name, table_name=table)
