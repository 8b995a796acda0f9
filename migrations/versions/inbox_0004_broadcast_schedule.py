"""broadcasts sent at a chosen time

Revision ID: inbox_0004
Revises: inbox_0003
Create Date: 2026-11-27 00:05:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "inbox_0004"
down_revision = "inbox_0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("broadcasts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade():
    with op.batch_alter_table("broadcasts", schema=None) as batch_op:
        batch_op.drop_column("scheduled_at")
