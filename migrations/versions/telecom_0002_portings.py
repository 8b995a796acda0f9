"""telecom portings: number portability (port-in) requests

Revision ID: telecom_0002
Revises: telecom_0001
Create Date: 2026-11-24 10:00:00.000000

"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy import Text  # noqa: F401  (JSONB columns render astext_type=Text())
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "telecom_0002"
down_revision = "telecom_0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "telecom_portings",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("subscription_id", sa.String(length=40), nullable=True),
        sa.Column("phone_number", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("nip", sa.String(length=4), nullable=True),
        sa.Column("nip_issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("nip_expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("holder_full_name", sa.String(length=200), nullable=False),
        sa.Column("holder_person_type", sa.String(length=16), nullable=False),
        sa.Column("holder_curp", sa.String(length=18), nullable=True),
        sa.Column("holder_rfc", sa.String(length=13), nullable=True),
        sa.Column("donor_provider", sa.String(length=60), nullable=True),
        sa.Column("declined_code", sa.String(length=40), nullable=True),
        sa.Column("declined_message", sa.String(length=300), nullable=True),
        sa.Column("declined_attempts", sa.Integer(), nullable=False),
        sa.Column("last_declined_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_telecom_portings_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["telecom_subscriptions.id"],
            name=op.f("fk_telecom_portings_subscription_id_telecom_subscriptions"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["telecom_users.id"], name=op.f("fk_telecom_portings_user_id_telecom_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_telecom_portings")),
    )
    with op.batch_alter_table("telecom_portings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_telecom_portings_org_created", ["organization_id", "created_at"], unique=False
        )
        batch_op.create_index("ix_telecom_portings_org_status", ["organization_id", "status"], unique=False)
        batch_op.create_index(
            "ix_telecom_portings_org_phone", ["organization_id", "phone_number"], unique=False
        )
        batch_op.create_index(
            "ix_telecom_portings_status_scheduled", ["status", "scheduled_for"], unique=False
        )
        batch_op.create_index(
            "ix_telecom_portings_status_nip_expires", ["status", "nip_expires_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_telecom_portings_subscription_id"), ["subscription_id"], unique=True
        )
        batch_op.create_index(batch_op.f("ix_telecom_portings_user_id"), ["user_id"], unique=False)


def downgrade():
    with op.batch_alter_table("telecom_portings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_telecom_portings_user_id"))
        batch_op.drop_index(batch_op.f("ix_telecom_portings_subscription_id"))
        batch_op.drop_index("ix_telecom_portings_status_nip_expires")
        batch_op.drop_index("ix_telecom_portings_status_scheduled")
        batch_op.drop_index("ix_telecom_portings_org_phone")
        batch_op.drop_index("ix_telecom_portings_org_status")
        batch_op.drop_index("ix_telecom_portings_org_created")

    op.drop_table("telecom_portings")
