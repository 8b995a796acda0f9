"""organization timezone: the IANA zone the desk shows times in

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 12:40:00.000000

"""

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("timezone", sa.String(length=64), server_default="UTC", nullable=False))


def downgrade():
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("timezone")
