"""audit: the append-only log of administrative actions

Revision ID: audit_0001
Revises: 0001
Create Date: 2026-11-24 00:00:00

One row per administrative action (keys, channels, agent configurations, members, teams, deletions),
written in the action's own transaction. ``ix_audit_entries_list`` is the log's order, newest first
(``occurred_at DESC, id DESC``) per organization: the list and its keyset cursor read it in order. See
docs/audit.md.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = "audit_0001"
down_revision = "0001"
branch_labels = ("audit",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_entries",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=120), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.String(length=120), nullable=False),
        sa.Column(
            "summary",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("request_id", sa.String(length=128), nullable=True),
        sa.Column("source_ip", sa.String(length=64), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_audit_entries_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_entries")),
    )
    op.create_index(
        "ix_audit_entries_list",
        "audit_entries",
        ["organization_id", sa.text("occurred_at DESC"), sa.text("id DESC")],
    )


def downgrade() -> None:
    op.drop_table("audit_entries")
