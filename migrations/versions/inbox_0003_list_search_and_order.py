"""inbox lists: trigram indexes for the conversation list's search (conversation name, contact address,
contact name); the conversation list's default order over the whole organization; the message list's order

Revision ID: inbox_0003
Revises: inbox_0002
Create Date: 2026-11-27 10:00:00

The list's ``search`` is a case-insensitive substring ("contains"). PostgreSQL: a GIN ``gin_trgm_ops``
index per column serves the ``ILIKE '%q%'`` itself (extension ``pg_trgm``, left installed on downgrade:
other objects may use it). SQLite: an external-content FTS5 table ``<table>_fts`` (``trigram`` tokenizer,
SQLite >= 3.34) keyed on the rowid, filled from the existing rows and kept in step by triggers; the update
trigger fires only for the searched columns. Naming and querying: ``core/textsearch.py``.

``ix_conversations_list``: the API's default list (no status filter: archived and not) in its order,
``last_message_at DESC NULLS LAST, id DESC`` (the per-tab partial indexes of messaging_0005 each cover
only archived or only live rows). ``ix_messages_organization_timestamp``: the message list of the whole
organization in its order (``timestamp, created_at, id``, read backwards), also the keyset seek;
``ix_messages_conversation_order`` replaces ``ix_messages_conversation_timestamp`` with the same full order
for one conversation's messages (without it the planner may walk the organization's index instead).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "inbox_0003"
down_revision = "inbox_0002"
branch_labels = None
depends_on = ("messaging_0005",)

# table -> searched columns
TEXT_INDEXES = {
    "conversations": ("name", "contact_address"),
    "messaging_contacts": ("name",),
}


def _sqlite_create(table: str, columns: tuple[str, ...]) -> list[str]:
    fts = f"{table}_fts"
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({names}, content='{table}', content_rowid='rowid', "
        "tokenize='trigram')",
        f"INSERT INTO {fts}({fts}) VALUES('rebuild')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, {names}) VALUES (new.rowid, {new}); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {names}) VALUES ('delete', old.rowid, {old}); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {names} ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {names}) VALUES ('delete', old.rowid, {old}); "
        f"INSERT INTO {fts}(rowid, {names}) VALUES (new.rowid, {new}); END",
    ]


def _sqlite_drop(table: str) -> list[str]:
    fts = f"{table}_fts"
    return [*(f"DROP TRIGGER IF EXISTS {fts}_{s}" for s in ("ai", "ad", "au")), f"DROP TABLE IF EXISTS {fts}"]


def upgrade():
    op.create_index(
        "ix_conversations_list",
        "conversations",
        ["organization_id", sa.text("last_message_at DESC NULLS LAST"), sa.text("id DESC")],
    )
    op.create_index(
        "ix_messages_organization_timestamp", "messages", ["organization_id", "timestamp", "created_at", "id"]
    )
    op.create_index(
        "ix_messages_conversation_order", "messages", ["conversation_id", "timestamp", "created_at", "id"]
    )
    op.drop_index("ix_messages_conversation_timestamp", table_name="messages")
    sqlite = op.get_bind().dialect.name == "sqlite"
    if not sqlite:
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for table, columns in TEXT_INDEXES.items():
        if sqlite:
            for statement in _sqlite_create(table, columns):
                op.execute(statement)
            continue
        for column in columns:
            op.execute(f"CREATE INDEX ix_{table}_{column}_trgm ON {table} USING gin ({column} gin_trgm_ops)")


def downgrade():
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, columns in reversed(list(TEXT_INDEXES.items())):
        if sqlite:
            for statement in _sqlite_drop(table):
                op.execute(statement)
            continue
        for column in columns:
            op.execute(f"DROP INDEX IF EXISTS ix_{table}_{column}_trgm")
    op.create_index("ix_messages_conversation_timestamp", "messages", ["conversation_id", "timestamp"])
    op.drop_index("ix_messages_conversation_order", table_name="messages")
    op.drop_index("ix_messages_organization_timestamp", table_name="messages")
    op.drop_index("ix_conversations_list", table_name="conversations")
