"""crm line item position: a deal's line items in the order its owner gives them

Revision ID: crm_0007
Revises: crm_0006
Create Date: 2026-11-28 10:00:00

``crm_deal_line_items.position``: the item's 0-based place among its deal's items, kept contiguous
(0..n-1) by the line-item verbs (a new item goes last; a move or a removal renumbers the others). Existing
items are numbered per deal in the order they were shown until now, ``created_at`` then ``id``; the column
is NOT NULL once every row has its number. The deal's items are read in that order, so the index on
``deal_id`` (the foreign key's) becomes one on ``(deal_id, position)``, which serves the key too.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "crm_0007"
down_revision = "crm_0006"
branch_labels = None
depends_on = None

TABLE = "crm_deal_line_items"
OLD_INDEX = "ix_crm_deal_line_items_deal_id"
NEW_INDEX = "ix_crm_deal_line_items_deal_position"

# PostgreSQL: one pass with a window function.
_BACKFILL_WINDOW = f"""
UPDATE {TABLE} SET position = ordered.n
FROM (
    SELECT id, ROW_NUMBER() OVER (PARTITION BY deal_id ORDER BY created_at, id) - 1 AS n FROM {TABLE}
) AS ordered
WHERE {TABLE}.id = ordered.id
"""
# SQLite (any version: UPDATE ... FROM needs 3.33): the items of the same deal before this one.
_BACKFILL_COUNT = f"""
UPDATE {TABLE} SET position = (
    SELECT COUNT(*) FROM {TABLE} AS earlier
    WHERE earlier.deal_id = {TABLE}.deal_id
      AND (earlier.created_at < {TABLE}.created_at
           OR (earlier.created_at = {TABLE}.created_at AND earlier.id < {TABLE}.id))
)
"""


def upgrade() -> None:
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.add_column(sa.Column("position", sa.Integer(), nullable=True))
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.execute(_BACKFILL_COUNT if sqlite else _BACKFILL_WINDOW)
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.alter_column("position", existing_type=sa.Integer(), nullable=False)
        batch_op.drop_index(OLD_INDEX)
        batch_op.create_index(NEW_INDEX, ["deal_id", "position"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.drop_index(NEW_INDEX)
        batch_op.create_index(OLD_INDEX, ["deal_id"], unique=False)
        batch_op.drop_column("position")
