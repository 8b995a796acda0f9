"""Inbound deliveries: provider webhook deliveries stored as they came, drained in batches

Revision ID: channels_0001
Revises: 0001
Create Date: 2026-11-23 17:30:00.000000

``inbound_deliveries`` keeps each verified webhook delivery (raw body, audit headers) from the moment it is
answered until the processor has stored what it brought (``processed_at``); the index serves the
processor's claim of pending rows, oldest first, and the purge of old processed ones. A branch of its own
(``channels``): the table refers to no other.
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql


# revision identifiers, used by Alembic.
revision = 'channels_0001'
down_revision = '0001'
branch_labels = ('channels',)
depends_on = None


def upgrade():
    op.create_table('inbound_deliveries',
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('body', sa.LargeBinary(), nullable=False),
    sa.Column('headers', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('processed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_inbound_deliveries'))
    )
    with op.batch_alter_table('inbound_deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_inbound_deliveries_pending', ['processed_at', 'received_at'], unique=False)


def downgrade():
    with op.batch_alter_table('inbound_deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_inbound_deliveries_pending')
    op.drop_table('inbound_deliveries')
