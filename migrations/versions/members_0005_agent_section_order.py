"""agent section order: the prompt's sections in the order a supervisor gives them

Revision ID: members_0005
Revises: members_0004
Create Date: 2026-11-26 23:45:00

``agent_configs.section_order``: the names of the configuration's text sections in the order the prompt
gives them (docs/members.md, "Agent configuration"). Existing configurations get ``[]``, the default
order the runtime used until now, so no prompt changes; the column is NOT NULL once every row has it.
Version snapshots are JSON and need nothing: one without the key reads as the default order.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "members_0005"
down_revision = "members_0004"
branch_labels = None
depends_on = None

TABLE = "agent_configs"
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.add_column(sa.Column("section_order", JSON, nullable=True))
    op.execute(f"UPDATE {TABLE} SET section_order = '[]'")
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.alter_column("section_order", existing_type=JSON, nullable=False)


def downgrade() -> None:
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.drop_column("section_order")
