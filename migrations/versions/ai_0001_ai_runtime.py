"""ai runtime: knowledge documents with full-text search, runs, per-conversation runtime state

Revision ID: ai_0001
Revises: 0001
Create Date: 2026-11-23 21:00:00

Full-text search over ``knowledge_documents.search_text`` (title and body folded by the service: lower
case, accents removed, so Spanish and English are searched alike on both stores):

- PostgreSQL: a GIN index on ``to_tsvector('simple', search_text)`` (``simple``: no language's stemmer
  or stop words; the service drops common words and matches prefixes itself);
- SQLite: an external-content FTS5 table ``knowledge_documents_fts`` (``unicode61`` tokenizer) keyed on
  the rowid, filled from existing rows and kept in step by triggers.

Querying: ``blueprints/ai/knowledge.py``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = "ai_0001"
down_revision = "0001"
branch_labels = ("ai",)
depends_on = ("messaging_0001", "members_0001")

FTS = "knowledge_documents_fts"
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def upgrade():
    op.create_table(
        "knowledge_documents",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.String(length=64), nullable=True),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=2048), nullable=True),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_knowledge_documents_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_documents")),
    )
    with op.batch_alter_table("knowledge_documents", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_knowledge_documents_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(
            "ix_knowledge_documents_org_agent", ["organization_id", "agent_id"], unique=False
        )

    op.create_table(
        "ai_runs",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=True),
        sa.Column("trigger_message_ids", JSON, nullable=False),
        sa.Column("config_version", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("prompt_chars", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("tool_calls", JSON, nullable=False),
        sa.Column("answer", JSON, nullable=False),
        sa.Column("sent_message_ids", JSON, nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_ai_runs_conversation_id_conversations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ai_runs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ai_runs")),
    )
    with op.batch_alter_table("ai_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ai_runs_organization_id"), ["organization_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ai_runs_outcome"), ["outcome"], unique=False)
        batch_op.create_index(
            "ix_ai_runs_org_agent_started", ["organization_id", "agent_id", "started_at"], unique=False
        )
        batch_op.create_index(
            "ix_ai_runs_conversation_started", ["conversation_id", "started_at"], unique=False
        )

    op.create_table(
        "ai_conversation_states",
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lease_token", sa.String(length=64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("rerun", sa.Boolean(), nullable=False),
        sa.Column("answered_through", sa.DateTime(timezone=True), nullable=True),
        sa.Column("paused_until_resumed", sa.Boolean(), nullable=False),
        sa.Column("paused_by", sa.String(length=120), nullable=True),
        sa.Column("last_run_id", sa.Uuid(), nullable=True),
        sa.Column("last_outcome", sa.String(length=32), nullable=True),
        sa.Column("last_reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_ai_conversation_states_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ai_conversation_states_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_ai_conversation_states")),
    )
    with op.batch_alter_table("ai_conversation_states", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ai_conversation_states_organization_id"), ["organization_id"], unique=False
        )

    delete_old = f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.rowid, old.search_text)"
    if op.get_bind().dialect.name == "sqlite":
        for statement in (
            f"CREATE VIRTUAL TABLE {FTS} USING fts5(search_text, content='knowledge_documents', "
            "content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
            f"INSERT INTO {FTS}({FTS}) VALUES('rebuild')",
            f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON knowledge_documents BEGIN "
            f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.rowid, new.search_text); END",
            f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON knowledge_documents BEGIN {delete_old}; END",
            f"CREATE TRIGGER {FTS}_au AFTER UPDATE OF search_text ON knowledge_documents BEGIN "
            f"{delete_old}; "
            f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.rowid, new.search_text); END",
        ):
            op.execute(statement)
    else:
        op.execute(
            "CREATE INDEX ix_knowledge_documents_search_tsv ON knowledge_documents "
            "USING gin (to_tsvector('simple', search_text))"
        )


def downgrade():
    if op.get_bind().dialect.name == "sqlite":
        for suffix in ("ai", "ad", "au"):
            op.execute(f"DROP TRIGGER IF EXISTS {FTS}_{suffix}")
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
    else:
        op.execute("DROP INDEX IF EXISTS ix_knowledge_documents_search_tsv")
    with op.batch_alter_table("ai_conversation_states", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ai_conversation_states_organization_id"))
    op.drop_table("ai_conversation_states")
    with op.batch_alter_table("ai_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_ai_runs_conversation_started")
        batch_op.drop_index("ix_ai_runs_org_agent_started")
        batch_op.drop_index(batch_op.f("ix_ai_runs_outcome"))
        batch_op.drop_index(batch_op.f("ix_ai_runs_organization_id"))
    op.drop_table("ai_runs")
    with op.batch_alter_table("knowledge_documents", schema=None) as batch_op:
        batch_op.drop_index("ix_knowledge_documents_org_agent")
        batch_op.drop_index(batch_op.f("ix_knowledge_documents_organization_id"))
    op.drop_table("knowledge_documents")
