"""voice: the relay session bound to a call

Revision ID: voice_0002
Revises: voice_0001
Create Date: 2026-11-26 23:58:00

``voice_calls.relay_session_id``: the ConversationRelay session (``setup.sessionId``) that took the call,
set once, so a second WebSocket with the same token cannot run a second agent on it (docs/voice.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "voice_0002"
down_revision = "voice_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("voice_calls") as batch:
        batch.add_column(sa.Column("relay_session_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("voice_calls") as batch:
        batch.drop_column("relay_session_id")
