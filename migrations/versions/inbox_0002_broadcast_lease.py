"""broadcast worker lease

Revision ID: inbox_0002
Revises: inbox_0001
Create Date: 2026-11-23 09:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "inbox_0002"
down_revision = "inbox_0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("broadcasts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_owner", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade():
    with op.batch_alter_table("broadcasts", schema=None) as batch_op:
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("lease_owner")
