"""crm member ids: owners, assignees and linked_by take the members area's ids (text, up to 64)

Revision ID: crm_0002
Revises: crm_0001
Create Date: 2026-11-23 09:00:00

Member ids are a UUID or a custom string id (blueprints/members/models.py); these columns were UUIDs, so
a real custom member id could not be stored. Existing values are carried over in the canonical text form
of a UUID (``xxxxxxxx-xxxx-...``, lower case), which is how the members area writes the UUIDs it issues.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "crm_0002"
down_revision = "crm_0001"
branch_labels = None
depends_on = None

COLUMNS = (
    ("crm_deals", "owner_id"),
    ("crm_tasks", "owner_id"),
    ("crm_tickets", "assignee_member_id"),
    ("crm_tickets", "assigned_by"),
    ("crm_deal_conversations", "linked_by"),
)


def _dashed(column: str) -> str:
    """SQLite stores sa.Uuid as 32 hex digits; the text form members use has dashes."""
    return (
        f"lower(substr({column}, 1, 8) || '-' || substr({column}, 9, 4) || '-' || substr({column}, 13, 4)"
        f" || '-' || substr({column}, 17, 4) || '-' || substr({column}, 21, 12))"
    )


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in COLUMNS:
        with op.batch_alter_table(table) as batch_op:
            batch_op.alter_column(
                column,
                existing_type=sa.Uuid(),
                type_=sa.String(length=64),
                existing_nullable=True,
                postgresql_using=f"{column}::text",
            )
        if sqlite:
            op.execute(
                f"UPDATE {table} SET {column} = {_dashed(column)} "
                f"WHERE {column} IS NOT NULL AND length({column}) = 32 AND instr({column}, '-') = 0"
            )


def downgrade() -> None:
    # Custom (non-UUID) member ids have no UUID form: they are cleared, as the old columns could not hold
    # them.
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in COLUMNS:
        if sqlite:
            op.execute(
                f"UPDATE {table} SET {column} = CASE WHEN length({column}) = 36 "
                f"THEN lower(replace({column}, '-', '')) ELSE NULL END WHERE {column} IS NOT NULL"
            )
        else:
            op.execute(
                f"UPDATE {table} SET {column} = NULL WHERE {column} IS NOT NULL AND {column} !~* "
                "'^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'"
            )
        with op.batch_alter_table(table) as batch_op:
            batch_op.alter_column(
                column,
                existing_type=sa.String(length=64),
                type_=sa.Uuid(),
                existing_nullable=True,
                postgresql_using=f"{column}::uuid",
            )
