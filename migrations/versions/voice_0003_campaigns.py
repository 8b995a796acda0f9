"""voice: campaigns and their recipients

Revision ID: voice_0003
Revises: voice_0002
Create Date: 2026-11-27 00:30:00

``voice_campaigns`` (the engine's worker lease in ``lease_owner``/``lease_expires_at``, the window, the
limits) and ``voice_campaign_recipients`` (state, attempts, due_at, the current call and the attempt log),
docs/voice.md "Campaigns".
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = "voice_0003"
down_revision = "voice_0002"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def _stamps() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "voice_campaigns",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("agent_id", sa.String(length=64), nullable=False),
        sa.Column("from_number", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("window", JSON, nullable=False),
        sa.Column("max_concurrent", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("retry_minutes", sa.Integer(), nullable=False),
        sa.Column("recipients_total", sa.Integer(), nullable=False),
        sa.Column("rejected_total", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("canceled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        *_stamps(),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_voice_campaigns_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_voice_campaigns")),
    )
    with op.batch_alter_table("voice_campaigns", schema=None) as batch_op:
        batch_op.create_index(
            "ix_voice_campaigns_organization_id_created_at", ["organization_id", "created_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_voice_campaigns_status"), ["status"], unique=False)

    op.create_table(
        "voice_campaign_recipients",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("campaign_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("number", sa.String(length=32), nullable=False),
        sa.Column("contact_id", sa.String(length=64), nullable=True),
        sa.Column("variables", JSON, nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("call_id", sa.Uuid(), nullable=True),
        sa.Column("attempt_log", JSON, nullable=False),
        sa.Column("error", sa.String(length=200), nullable=True),
        *_stamps(),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["voice_campaigns.id"],
            name=op.f("fk_voice_campaign_recipients_campaign_id_voice_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_voice_campaign_recipients_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_voice_campaign_recipients")),
    )
    with op.batch_alter_table("voice_campaign_recipients", schema=None) as batch_op:
        batch_op.create_index(
            "ix_voice_campaign_recipients_claim", ["campaign_id", "state", "due_at"], unique=False
        )
        batch_op.create_index(
            "ix_voice_campaign_recipients_position", ["campaign_id", "position"], unique=False
        )


def downgrade() -> None:
    op.drop_table("voice_campaign_recipients")
    op.drop_table("voice_campaigns")
