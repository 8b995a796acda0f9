"""crm products: the organization's product catalogue (line items' product_id, the AI send_product tool)

Revision ID: crm_0005
Revises: crm_0004
Create Date: 2026-11-23 20:45:00

``crm_products``: SKU unique per organization (several products may have none), a unit price in one of the
CRM's currencies, links to the product's page and image, and ``active`` (a product that line items
reference is archived instead of deleted). Line items keep their plain ``product_id`` column: the CRM
checks it against this table when it is written (a product never disappears while referenced).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "crm_0005"
down_revision = "crm_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crm_products",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("sku", sa.String(length=100), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("price", sa.Numeric(precision=20, scale=4), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=True),
        sa.Column("image_url", sa.String(length=2048), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_crm_products_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crm_products")),
        sa.UniqueConstraint("organization_id", "sku", name="uq_crm_products_org_sku"),
    )
    with op.batch_alter_table("crm_products", schema=None) as batch_op:
        batch_op.create_index("ix_crm_products_list", ["organization_id", "name", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("crm_products", schema=None) as batch_op:
        batch_op.drop_index("ix_crm_products_list")
    op.drop_table("crm_products")
