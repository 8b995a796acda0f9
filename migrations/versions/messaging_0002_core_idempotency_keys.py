"""Idempotency-Key records move to core: one table for every area, keys scoped by organization and route

Revision ID: messaging_0002
Revises: messaging_0001
Create Date: 2026-11-24 10:00:00.000000

The old ``messaging_idempotency_keys`` rows are not carried over: they live 24 hours, and their hashes
were computed another way, so a carried key would answer 409 to the very retry it exists for. A retry
arriving across the deploy runs again as a new request.
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy import Text  # noqa: F401  (JSONB columns render astext_type=Text())
from sqlalchemy.dialects import postgresql


# revision identifiers, used by Alembic.
revision = 'messaging_0002'
down_revision = 'messaging_0001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('idempotency_keys',
    sa.Column('scope', sa.String(length=255), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('request_hash', sa.String(length=64), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=True),
    sa.Column('response', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True),
    sa.Column('response_headers', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_keys')),
    sa.UniqueConstraint('scope', 'key', name='uq_idempotency_keys_scope_key')
    )
    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_idempotency_keys_created_at'), ['created_at'], unique=False)

    with op.batch_alter_table('messaging_idempotency_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_messaging_idempotency_keys_organization_id'))
        batch_op.drop_index(batch_op.f('ix_messaging_idempotency_keys_created_at'))
    op.drop_table('messaging_idempotency_keys')


def downgrade():
    op.create_table('messaging_idempotency_keys',
    sa.Column('organization_id', sa.Uuid(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('request_hash', sa.String(length=64), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=True),
    sa.Column('response', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True),
    sa.Column('response_headers', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('message_id', sa.Text(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_messaging_idempotency_keys')),
    sa.UniqueConstraint('organization_id', 'key', name='uq_messaging_idempotency_keys_key')
    )
    with op.batch_alter_table('messaging_idempotency_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_messaging_idempotency_keys_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_messaging_idempotency_keys_organization_id'), ['organization_id'], unique=False)

    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_idempotency_keys_created_at'))
    op.drop_table('idempotency_keys')
