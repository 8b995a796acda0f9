"""Dead letters for inbound items that could not be stored; sends remember their Idempotency-Key

Revision ID: messaging_0003
Revises: messaging_0002
Create Date: 2026-11-25 10:00:00.000000

``webhook_dead_letters`` keeps the messages and statuses of a provider delivery that could not be stored
(refused at the edge or failing in storage), so the rest of the delivery is stored and answered 200.
``messages.idempotency_scope`` / ``idempotency_key`` name the Idempotency-Key a send ran under, so the
reconcile sweep can answer that key with the send's outcome after a crash (existing rows: null).
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'messaging_0003'
down_revision = 'messaging_0002'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('webhook_dead_letters',
    sa.Column('organization_id', sa.Uuid(), nullable=True),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('service', sa.String(length=16), nullable=True),
    sa.Column('organization_address', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.String(length=500), nullable=False),
    sa.Column('raw', sa.Text(), nullable=False),
    sa.Column('raw_truncated', sa.Boolean(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'], name=op.f('fk_webhook_dead_letters_organization_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_dead_letters'))
    )
    with op.batch_alter_table('webhook_dead_letters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_dead_letters_organization_id'), ['organization_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_dead_letters_received_at'), ['received_at'], unique=False)

    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('idempotency_scope', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('idempotency_key', sa.String(length=255), nullable=True))


def downgrade():
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_column('idempotency_key')
        batch_op.drop_column('idempotency_scope')

    with op.batch_alter_table('webhook_dead_letters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_dead_letters_received_at'))
        batch_op.drop_index(batch_op.f('ix_webhook_dead_letters_organization_id'))
    op.drop_table('webhook_dead_letters')
