"""crm text search: trigram indexes for the CRM lists' search

Revision ID: crm_0004
Revises: crm_0003
Create Date: 2026-11-27 10:05:00

``search`` on deals (name), tickets (title, reference), tasks (title), contacts (name, and the value of
their phone and email identities) and accounts (name, domain) is a case-insensitive substring. PostgreSQL: a
GIN ``gin_trgm_ops`` index per column serves the ``ILIKE '%q%'`` itself (extension ``pg_trgm``, left
installed on downgrade). SQLite: an external-content FTS5 table ``<table>_fts`` (``trigram`` tokenizer)
keyed on the rowid, filled from the existing rows and kept in step by triggers; the update trigger fires
only for the searched columns. Naming and querying: ``core/textsearch.py`` (same DDL as inbox_0003).
"""

from __future__ import annotations

from alembic import op

revision = "crm_0004"
down_revision = "crm_0003"
branch_labels = None
depends_on = None

# table -> searched columns
TEXT_INDEXES = {
    "crm_deals": ("name",),
    "crm_tickets": ("title", "reference"),
    "crm_tasks": ("title",),
    "crm_contacts": ("name",),
    "crm_contact_identities": ("value",),
    "crm_accounts": ("name", "domain"),
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
