"""users.must_change_password: a password someone else chose is changed at first sign-in

Revision ID: members_0006
Revises: members_0005
Create Date: 2026-11-27 00:00:00

Set when a supervisor creates a desk user with an initial password or resets one (the desk's People page,
``users create --must-change-password``, ``users set-password --must-change-password``); the desk sends
such a user to change it before any other page, and their own change clears it. Existing users keep the
password they have (false).
"""

import sqlalchemy as sa
from alembic import op

revision = "members_0006"
down_revision = "members_0005"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("must_change_password", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("must_change_password")
