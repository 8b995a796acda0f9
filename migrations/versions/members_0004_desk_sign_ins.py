"""desk_sign_ins: a server-side record per desk sign-in, ended by signing out

Revision ID: members_0004
Revises: members_0003
Create Date: 2026-11-24 10:00:00

The desk's session and "remember me" cookie now name one of these rows, and are refused once it has
ended or expired (blueprints/desk/security.py). Sessions signed in before this revision name no row, so
after the upgrade every desk user signs in once more; nothing else changes.
"""

import sqlalchemy as sa
from alembic import op

revision = "members_0004"
down_revision = "members_0003"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "desk_sign_ins",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("remember", sa.Boolean(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_desk_sign_ins_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_desk_sign_ins_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_desk_sign_ins")),
    )
    with op.batch_alter_table("desk_sign_ins", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_desk_sign_ins_organization_id"), ["organization_id"], unique=False
        )
        # Ending every sign-in of a user (sign out everywhere, deactivation, a new password) finds them here.
        batch_op.create_index(batch_op.f("ix_desk_sign_ins_user_id"), ["user_id"], unique=False)


def downgrade():
    with op.batch_alter_table("desk_sign_ins", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_desk_sign_ins_user_id"))
        batch_op.drop_index(batch_op.f("ix_desk_sign_ins_organization_id"))
    op.drop_table("desk_sign_ins")
