"""inbox list indexes: conversations in their default order per desk tab, replies per conversation

Partial indexes (WHERE archived_at IS NULL ...) rather than a column for archived_at: PostgreSQL does not
treat ``x IS NULL`` as an equality when it looks for an index that delivers the ORDER BY, so a leading
``archived_at`` column would still leave a sort over every conversation of the organization.

Revision ID: messaging_0005
Revises: messaging_0004
Create Date: 2026-11-23 12:35:00.000000

"""

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = "messaging_0005"
down_revision = "messaging_0004"
branch_labels = None
depends_on = None

ORDER = [sa.text("last_message_at DESC NULLS LAST"), sa.text("id DESC")]  # plain DESC on SQLite (core.db)

# name -> (leading columns, the rows the index covers)
INDEXES = {
    "ix_conversations_inbox": (["organization_id"], "archived_at IS NULL"),
    "ix_conversations_inbox_member": (["organization_id", "member_id"], "archived_at IS NULL"),
    "ix_conversations_inbox_unassigned": (["organization_id"], "archived_at IS NULL AND member_id IS NULL"),
    "ix_conversations_inbox_team": (["organization_id", "team_id"], "archived_at IS NULL"),
    "ix_conversations_inbox_archived": (["organization_id"], "archived_at IS NOT NULL"),
}


def upgrade():
    for name, (columns, where) in INDEXES.items():
        op.create_index(
            name,
            "conversations",
            [*columns, *ORDER],
            postgresql_where=sa.text(where),
            sqlite_where=sa.text(where),
        )
    op.create_index(
        "ix_messages_conversation_direction_timestamp", "messages", ["conversation_id", "direction", "timestamp"]
    )


def downgrade():
    op.drop_index("ix_messages_conversation_direction_timestamp", table_name="messages")
    for name in reversed(list(INDEXES)):
        op.drop_index(name, table_name="conversations")
