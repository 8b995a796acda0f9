"""telecom travel eSIMs: data eSIMs and their top-ups

Revision ID: telecom_0003
Revises: telecom_0002
Create Date: 2026-11-24 10:00:00.000000

"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "telecom_0003"
down_revision = "telecom_0002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "telecom_data_esims",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=True),
        sa.Column("offer_id", sa.String(length=60), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("price_cents", sa.BigInteger(), nullable=False),
        sa.Column("offer_data_bytes", sa.BigInteger(), nullable=True),
        sa.Column("offer_validity_days", sa.Integer(), nullable=False),
        sa.Column("activation_policy", sa.String(length=16), nullable=False),
        sa.Column("iccid", sa.String(length=22), nullable=True),
        sa.Column("smdp_address", sa.String(length=120), nullable=True),
        sa.Column("matching_id", sa.String(length=64), nullable=True),
        sa.Column("supplier", sa.String(length=40), nullable=True),
        sa.Column("supplier_reference", sa.String(length=64), nullable=True),
        sa.Column("data_total_bytes", sa.BigInteger(), nullable=True),
        sa.Column("data_remaining_bytes", sa.BigInteger(), nullable=True),
        sa.Column("low_data_notified", sa.Boolean(), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("activated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("depleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failure_code", sa.String(length=64), nullable=True),
        sa.Column("failure_message", sa.String(length=300), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["offer_id"],
            ["telecom_esim_offers.id"],
            name=op.f("fk_telecom_data_esims_offer_id_telecom_esim_offers"),
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_telecom_data_esims_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["telecom_users.id"], name=op.f("fk_telecom_data_esims_user_id_telecom_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_telecom_data_esims")),
    )
    with op.batch_alter_table("telecom_data_esims", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_telecom_data_esims_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index("ix_telecom_data_esims_status", ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_telecom_data_esims_user_id"), ["user_id"], unique=False)

    op.create_table(
        "telecom_data_esim_topups",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("data_esim_id", sa.String(length=40), nullable=False),
        sa.Column("offer_id", sa.String(length=60), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("data_bytes", sa.BigInteger(), nullable=True),
        sa.Column("validity_days", sa.Integer(), nullable=False),
        sa.Column("failure_code", sa.String(length=64), nullable=True),
        sa.Column("failure_message", sa.String(length=300), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["data_esim_id"],
            ["telecom_data_esims.id"],
            name=op.f("fk_telecom_data_esim_topups_data_esim_id_telecom_data_esims"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["offer_id"],
            ["telecom_esim_offers.id"],
            name=op.f("fk_telecom_data_esim_topups_offer_id_telecom_esim_offers"),
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_telecom_data_esim_topups_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_telecom_data_esim_topups")),
    )
    with op.batch_alter_table("telecom_data_esim_topups", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_telecom_data_esim_topups_data_esim_id"), ["data_esim_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_telecom_data_esim_topups_organization_id"), ["organization_id"], unique=False
        )


def downgrade():
    with op.batch_alter_table("telecom_data_esim_topups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_telecom_data_esim_topups_organization_id"))
        batch_op.drop_index(batch_op.f("ix_telecom_data_esim_topups_data_esim_id"))

    op.drop_table("telecom_data_esim_topups")
    with op.batch_alter_table("telecom_data_esims", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_telecom_data_esims_user_id"))
        batch_op.drop_index("ix_telecom_data_esims_status")
        batch_op.drop_index(batch_op.f("ix_telecom_data_esims_organization_id"))

    op.drop_table("telecom_data_esims")
