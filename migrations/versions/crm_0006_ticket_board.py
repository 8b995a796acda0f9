"""crm ticket board: the closed column's index

Revision ID: crm_0006
Revises: crm_0005
Create Date: 2026-11-27 10:00:00

The ticket board's closed column lists the tickets closed in the last 30 days, latest closed first
(``closed_at DESC, number DESC``). Without this index a column of 50 cards is read by sorting every closed
ticket of the organization (tens of thousands in a year); with it, by a seek to the window's start read
backwards. ``state`` is a column rather than a partial index's WHERE: the board binds the state as a
parameter, and PostgreSQL's generic plans cannot prove a parameter equals a partial index's literal.
The open columns read off ``ix_crm_tickets_list_state`` (crm_0003), in the list's order.
"""

from __future__ import annotations

from alembic import op

revision = "crm_0006"
down_revision = "crm_0005"
branch_labels = None
depends_on = None

NAME = "ix_crm_tickets_board_closed"


def upgrade():
    op.create_index(NAME, "crm_tickets", ["organization_id", "state", "closed_at", "number"])


def downgrade():
    op.drop_index(NAME, table_name="crm_tickets")
