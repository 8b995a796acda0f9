"""Canned responses (an organization's saved replies); reactions on messages

Revision ID: messaging_0004
Revises: messaging_0003
Create Date: 2026-11-26 10:00:00.000000

``canned_responses`` holds each organization's saved replies, one ``short_code`` per organization (the
agent types ``/<short_code>`` in the composer). ``messages.reactions`` keeps the contact's reactions to a
message (``[{emoji, from, at}]``, one per reactor); existing rows: null (no reactions).
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy import Text  # noqa: F401  (JSONB columns render astext_type=Text())
from sqlalchemy.dialects import postgresql


# revision identifiers, used by Alembic.
revision = 'messaging_0004'
down_revision = 'messaging_0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('canned_responses',
    sa.Column('organization_id', sa.Uuid(), nullable=False),
    sa.Column('short_code', sa.String(length=32), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['organization_id'], ['organizations.id'], name=op.f('fk_canned_responses_organization_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_canned_responses')),
    sa.UniqueConstraint('organization_id', 'short_code', name='uq_canned_responses_organization_code')
    )
    with op.batch_alter_table('canned_responses', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_canned_responses_organization_id'), ['organization_id'], unique=False)

    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reactions', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True))


def downgrade():
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_column('reactions')

    with op.batch_alter_table('canned_responses', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_canned_responses_organization_id'))
    op.drop_table('canned_responses')
