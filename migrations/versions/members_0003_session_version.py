"""users.session_version: ending desk sessions on deactivation and password change

Revision ID: members_0003
Revises: members_0002
Create Date: 2026-11-23 23:50:00

Existing users start at generation 1, which is also what a session signed in before this revision
counts as (blueprints/desk/security.py), so nobody is signed out by the upgrade itself.
"""

import sqlalchemy as sa
from alembic import op

revision = "members_0003"
down_revision = "members_0002"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_version", sa.Integer(), server_default="1", nullable=False))


def downgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("session_version")
