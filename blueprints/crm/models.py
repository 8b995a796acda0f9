"""Tables of the CRM area: pipelines and stages, currency, deals (line items, contacts, conversations,
stage history, activity), tickets, tasks, contacts (identities) and accounts.

Money columns are ``Numeric`` and map to ``decimal.Decimal``; amounts are stored already rounded to the
currency's minor units. Member ids (owners, assignees) and conversation ids belong to other areas, so
they are stored as plain text without cross-area foreign keys (checked through ``blueprints.crm.hooks``
when they are written).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, Numeric, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from core.db import ORDERED_INDEXES, JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow

MONEY = Numeric(20, 4)
RATE = Numeric(30, 12)
QUANTITY = Numeric(18, 4)
# The members area's ids: a UUID in its text form or a custom id of up to 64 characters.
MEMBER_ID = String(64)


def _org_fk() -> Any:
    return ForeignKey("organizations.id", ondelete="CASCADE")


# Partial indexes of the lists (migration crm_0003): their WHERE is declared here and in the migration,
# their column order (``created_at DESC`` inside the task order) in the migration only, so the
# model/migration comparison skips them like the other ordered indexes (core.db.ORDERED_INDEXES) and
# tests/crm/test_list_plans.py checks the plans instead. Partial rather than a leading ``deleted_at``
# column: PostgreSQL does not take ``deleted_at IS NULL`` as an equality when it looks for an index that
# delivers the ORDER BY, so the page would still be sorted. The columns of the WHERE close each index:
# SQLite counts from a partial index alone (a covering index, no table rows read) only when they are in it.
LIVE = "deleted_at IS NULL"
OPEN_TASK = "deleted_at IS NULL AND status <> 'completed'"


def list_index(name: str, *columns: Any, where: str) -> Index:
    ORDERED_INDEXES.add(name)
    return Index(name, *columns, postgresql_where=text(where), sqlite_where=text(where))


class CrmSettings(TimestampMixin, db.Model):
    """Per-organization CRM settings and the ticket counter (one row, locked by the counter update)."""

    __tablename__ = "crm_settings"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), primary_key=True)
    base_currency: Mapped[str] = mapped_column(String(3), default="MXN")
    ticket_prefix: Mapped[str] = mapped_column(String(10), default="TCK")
    ticket_counter: Mapped[int] = mapped_column(Integer, default=0)


class ExchangeRate(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """1 unit of ``from_currency`` = ``rate`` units of ``to_currency``; one row per ordered pair."""

    __tablename__ = "crm_exchange_rates"
    __table_args__ = (
        UniqueConstraint(
            "organization_id", "from_currency", "to_currency", name="uq_crm_exchange_rates_pair"
        ),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    from_currency: Mapped[str] = mapped_column(String(3))
    to_currency: Mapped[str] = mapped_column(String(3))
    rate: Mapped[Decimal] = mapped_column(RATE)


class Pipeline(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_pipelines"
    __table_args__ = (UniqueConstraint("organization_id", "key", name="uq_crm_pipelines_org_key"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    name: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(5))
    is_default: Mapped[bool] = mapped_column(default=False)
    deal_counter: Mapped[int] = mapped_column(Integer, default=0)

    stages: Mapped[list[Stage]] = relationship(
        back_populates="pipeline",
        order_by="Stage.stage_order",
        cascade="all, delete-orphan",
        passive_deletes=True,
        lazy="raise",
    )


class Stage(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_stages"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    pipeline_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("crm_pipelines.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    stage_order: Mapped[int] = mapped_column(Integer)
    probability: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(10), default="open")
    # Pipedrive's "rotting": an open deal untouched in this stage for more days is flagged.
    rotting_days: Mapped[int | None] = mapped_column(Integer)

    pipeline: Mapped[Pipeline] = relationship(back_populates="stages", lazy="raise")


class CrmAccount(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """A company to which contacts link."""

    __tablename__ = "crm_accounts"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    domain: Mapped[str | None] = mapped_column(String(255))
    industry: Mapped[str | None] = mapped_column(String(120))
    phone: Mapped[str | None] = mapped_column(String(32))
    notes: Mapped[str | None] = mapped_column(Text)

    contact_links: Mapped[list[AccountContact]] = relationship(
        back_populates="account", cascade="all, delete-orphan", passive_deletes=True, lazy="raise"
    )


class CrmContact(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_contacts"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    job_title: Mapped[str | None] = mapped_column(String(200))
    notes: Mapped[str | None] = mapped_column(Text)

    identities: Mapped[list[ContactIdentity]] = relationship(
        back_populates="contact",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="ContactIdentity.created_at",
        lazy="raise",
    )
    account_links: Mapped[list[AccountContact]] = relationship(
        back_populates="contact", cascade="all, delete-orphan", passive_deletes=True, lazy="raise"
    )


class ContactIdentity(UUIDPrimaryKeyMixin, db.Model):
    """A phone (E.164) or email (lower-cased) by which a contact is known; unique per organization."""

    __tablename__ = "crm_contact_identities"
    __table_args__ = (
        UniqueConstraint("organization_id", "kind", "value", name="uq_crm_contact_identities_value"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    contact_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("crm_contacts.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(10))
    value: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    contact: Mapped[CrmContact] = relationship(back_populates="identities", lazy="raise")


class AccountContact(db.Model):
    __tablename__ = "crm_account_contacts"

    account_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("crm_accounts.id", ondelete="CASCADE"), primary_key=True
    )
    contact_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("crm_contacts.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    role: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    account: Mapped[CrmAccount] = relationship(back_populates="contact_links", lazy="raise")
    contact: Mapped[CrmContact] = relationship(back_populates="account_links", lazy="raise")


class Deal(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_deals"
    __table_args__ = (UniqueConstraint("pipeline_id", "number", name="uq_crm_deals_pipeline_number"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    pipeline_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_pipelines.id"), index=True)
    stage_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_stages.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    reference: Mapped[str] = mapped_column(String(20), index=True)
    name: Mapped[str] = mapped_column(String(300))
    amount: Mapped[Decimal] = mapped_column(MONEY, default=Decimal(0))
    currency: Mapped[str] = mapped_column(String(3), default="MXN", index=True)
    status: Mapped[str] = mapped_column(String(10), default="open", index=True)
    owner_id: Mapped[str | None] = mapped_column(MEMBER_ID, index=True)
    account_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_accounts.id", ondelete="SET NULL"), index=True
    )
    expected_close_date: Mapped[datetime | None] = mapped_column(index=True)
    stage_entered_at: Mapped[datetime] = mapped_column(default=utcnow)
    closed_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None] = mapped_column(index=True)

    pipeline: Mapped[Pipeline] = relationship(lazy="raise")
    stage: Mapped[Stage] = relationship(lazy="raise")
    contacts: Mapped[list[DealContact]] = relationship(
        back_populates="deal",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="DealContact.created_at",
        lazy="raise",
    )
    line_items: Mapped[list[DealLineItem]] = relationship(
        back_populates="deal",
        cascade="all, delete-orphan",
        passive_deletes=True,
        # the order the deal's owner gave them (0..n-1); created_at only breaks a tie two concurrent adds made
        order_by="[DealLineItem.position, DealLineItem.created_at]",
        lazy="raise",
    )
    conversations: Mapped[list[DealConversation]] = relationship(
        back_populates="deal",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="DealConversation.created_at",
        lazy="raise",
    )

    @property
    def is_rotting(self) -> bool:
        """Open and untouched in its stage for longer than the stage's rotting days (needs ``stage``)."""
        days = self.stage.rotting_days
        if not days or self.status != "open":
            return False
        return utcnow() - self.stage_entered_at > timedelta(days=days)


# The deal list in its default order (newest first, ties by id, read backwards off these indexes), alone
# and per common filter (pipeline, stage, owner, status, unassigned); the summary's GROUP BY stage,
# currency is answered from the covering summary index without reading the deals.
_DEAL_ORDER = (Deal.created_at, Deal.id, Deal.deleted_at)
list_index("ix_crm_deals_list", Deal.organization_id, *_DEAL_ORDER, where=LIVE)
list_index("ix_crm_deals_list_pipeline", Deal.organization_id, Deal.pipeline_id, *_DEAL_ORDER, where=LIVE)
list_index("ix_crm_deals_list_stage", Deal.organization_id, Deal.stage_id, *_DEAL_ORDER, where=LIVE)
list_index("ix_crm_deals_list_owner", Deal.organization_id, Deal.owner_id, *_DEAL_ORDER, where=LIVE)
list_index("ix_crm_deals_list_status", Deal.organization_id, Deal.status, *_DEAL_ORDER, where=LIVE)
list_index(
    "ix_crm_deals_list_unassigned",
    Deal.organization_id,
    *_DEAL_ORDER,
    Deal.owner_id,
    where=f"{LIVE} AND owner_id IS NULL",
)
list_index(
    "ix_crm_deals_summary",
    Deal.organization_id,
    Deal.pipeline_id,
    Deal.stage_id,
    Deal.currency,
    Deal.amount,
    Deal.deleted_at,
    where=LIVE,
)


class DealContact(UUIDPrimaryKeyMixin, db.Model):
    __tablename__ = "crm_deal_contacts"
    __table_args__ = (UniqueConstraint("deal_id", "contact_id", name="uq_crm_deal_contacts_pair"),)

    deal_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_deals.id", ondelete="CASCADE"), index=True)
    contact_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("crm_contacts.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str | None] = mapped_column(String(120))
    is_primary: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    deal: Mapped[Deal] = relationship(back_populates="contacts", lazy="raise")


class DealLineItem(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_deal_line_items"
    # A deal's items in their order (crm_0007): also the index of the deal_id foreign key.
    __table_args__ = (Index("ix_crm_deal_line_items_deal_position", "deal_id", "position"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    deal_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_deals.id", ondelete="CASCADE"))
    # 0-based place among the deal's items, contiguous (0..n-1): a new item goes last, a move or a removal
    # renumbers the others (services/deals.py). The default is for bulk inserts that give none.
    position: Mapped[int] = mapped_column(Integer, default=0)
    product_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    name: Mapped[str] = mapped_column(String(300))
    quantity: Mapped[Decimal] = mapped_column(QUANTITY)
    unit_price: Mapped[Decimal] = mapped_column(MONEY)
    discount: Mapped[Decimal] = mapped_column(MONEY, default=Decimal(0))
    total: Mapped[Decimal] = mapped_column(MONEY)
    currency: Mapped[str] = mapped_column(String(3))
    sku: Mapped[str | None] = mapped_column(String(100))
    notes: Mapped[str | None] = mapped_column(Text)

    deal: Mapped[Deal] = relationship(back_populates="line_items", lazy="raise")


class DealConversation(UUIDPrimaryKeyMixin, db.Model):
    """A conversation or call linked to a deal; the id is the messaging/voice area's, kept as text."""

    __tablename__ = "crm_deal_conversations"
    __table_args__ = (UniqueConstraint("deal_id", "conversation_id", name="uq_crm_deal_conversations_pair"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    deal_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_deals.id", ondelete="CASCADE"), index=True)
    conversation_id: Mapped[str] = mapped_column(String(100), index=True)
    channel: Mapped[str | None] = mapped_column(String(20))
    linked_by: Mapped[str | None] = mapped_column(MEMBER_ID)
    summary: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    deal: Mapped[Deal] = relationship(back_populates="conversations", lazy="raise")


class DealStageVisit(UUIDPrimaryKeyMixin, db.Model):
    """One stay of a deal in a stage. The stage id is kept without a foreign key (and the name copied)
    so that the history survives the stage's deletion."""

    __tablename__ = "crm_deal_stage_visits"

    deal_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_deals.id", ondelete="CASCADE"), index=True)
    stage_id: Mapped[uuid.UUID]
    stage_name: Mapped[str] = mapped_column(String(200))
    stage_order: Mapped[int] = mapped_column(Integer)
    entered_at: Mapped[datetime] = mapped_column(default=utcnow)
    left_at: Mapped[datetime | None]


class DealActivity(UUIDPrimaryKeyMixin, db.Model):
    """The deal's timeline: creation, stage, status and amount changes, links, notes."""

    __tablename__ = "crm_deal_activities"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    deal_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_deals.id", ondelete="CASCADE"), index=True)
    type: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    summary: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CrmProject(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_projects"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)


class TicketType(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_ticket_types"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)


class Ticket(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_tickets"
    __table_args__ = (UniqueConstraint("organization_id", "number", name="uq_crm_tickets_org_number"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    number: Mapped[int] = mapped_column(Integer)
    reference: Mapped[str] = mapped_column(String(30), index=True)
    title: Mapped[str] = mapped_column(String(500))
    state: Mapped[str] = mapped_column(String(30), default="new", index=True)
    priority: Mapped[str] = mapped_column(String(10), default="normal", index=True)
    source: Mapped[str] = mapped_column(String(20))
    body_html: Mapped[str | None] = mapped_column(Text)
    requester_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_contacts.id", ondelete="SET NULL"), index=True
    )
    assignee_member_id: Mapped[str | None] = mapped_column(MEMBER_ID, index=True)
    assigned_by: Mapped[str | None] = mapped_column(MEMBER_ID)
    assigned_at: Mapped[datetime | None]
    account_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_accounts.id", ondelete="SET NULL"), index=True
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_projects.id", ondelete="SET NULL"), index=True
    )
    ticket_type_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_ticket_types.id", ondelete="SET NULL"), index=True
    )
    channel: Mapped[str | None] = mapped_column(String(20))
    closed_at: Mapped[datetime | None]

    conversations: Mapped[list[TicketConversation]] = relationship(
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="TicketConversation.created_at",
        lazy="raise",
    )


# The ticket list in its default order (newest first, ties by number, read backwards), alone and per
# common filter (state, priority, assignee, unassigned). Tickets are never soft-deleted.
Index("ix_crm_tickets_list", Ticket.organization_id, Ticket.created_at, Ticket.number)
Index("ix_crm_tickets_list_state", Ticket.organization_id, Ticket.state, Ticket.created_at, Ticket.number)
Index(
    "ix_crm_tickets_list_priority", Ticket.organization_id, Ticket.priority, Ticket.created_at, Ticket.number
)
Index(
    "ix_crm_tickets_list_assignee",
    Ticket.organization_id,
    Ticket.assignee_member_id,
    Ticket.created_at,
    Ticket.number,
)
list_index(
    "ix_crm_tickets_list_unassigned",
    Ticket.organization_id,
    Ticket.created_at,
    Ticket.number,
    Ticket.assignee_member_id,
    where="assignee_member_id IS NULL",
)


class TicketConversation(UUIDPrimaryKeyMixin, db.Model):
    __tablename__ = "crm_ticket_conversations"
    __table_args__ = (
        UniqueConstraint("ticket_id", "conversation_id", name="uq_crm_ticket_conversations_pair"),
    )

    ticket_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_tickets.id", ondelete="CASCADE"), index=True)
    conversation_id: Mapped[str] = mapped_column(String(100), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TicketStateChange(UUIDPrimaryKeyMixin, db.Model):
    __tablename__ = "crm_ticket_state_changes"

    ticket_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("crm_tickets.id", ondelete="CASCADE"), index=True)
    from_state: Mapped[str | None] = mapped_column(String(30))
    to_state: Mapped[str] = mapped_column(String(30))
    changed_by: Mapped[str | None] = mapped_column(String(100))
    changed_at: Mapped[datetime] = mapped_column(default=utcnow)


class CrmTask(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    __tablename__ = "crm_tasks"

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk(), index=True)
    title: Mapped[str] = mapped_column(String(500))
    type: Mapped[str] = mapped_column(String(20), default="to_do", index=True)
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    priority: Mapped[str] = mapped_column(String(10), default="normal", index=True)
    due_date: Mapped[datetime | None] = mapped_column(index=True)
    owner_id: Mapped[str | None] = mapped_column(MEMBER_ID, index=True)
    deal_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_deals.id", ondelete="SET NULL"), index=True
    )
    ticket_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_tickets.id", ondelete="SET NULL"), index=True
    )
    contact_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_contacts.id", ondelete="SET NULL"), index=True
    )
    account_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("crm_accounts.id", ondelete="SET NULL"), index=True
    )
    notes: Mapped[str | None] = mapped_column(Text)
    completed_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None] = mapped_column(index=True)

    deal: Mapped[Deal | None] = relationship(lazy="raise")
    ticket: Mapped[Ticket | None] = relationship(lazy="raise")
    contact: Mapped[CrmContact | None] = relationship(lazy="raise")
    account: Mapped[CrmAccount | None] = relationship(lazy="raise")


# The task list in its order (soonest due first, undated last, then newest, then id: ``due_date``,
# ``created_at DESC``, ``id`` in the migration), alone and per common filter: owner, and not completed
# (``is_completed=false``, ``overdue``), the to-do view, alone and per owner.
_TASK_ORDER = (CrmTask.due_date, CrmTask.created_at, CrmTask.id, CrmTask.deleted_at)
list_index("ix_crm_tasks_list", CrmTask.organization_id, *_TASK_ORDER, where=LIVE)
list_index("ix_crm_tasks_list_owner", CrmTask.organization_id, CrmTask.owner_id, *_TASK_ORDER, where=LIVE)
list_index("ix_crm_tasks_list_open", CrmTask.organization_id, *_TASK_ORDER, CrmTask.status, where=OPEN_TASK)
list_index(
    "ix_crm_tasks_list_owner_open",
    CrmTask.organization_id,
    CrmTask.owner_id,
    *_TASK_ORDER,
    CrmTask.status,
    where=OPEN_TASK,
)


class Product(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """An item of the organization's catalogue: what line items' ``product_id`` names and what the AI
    agents' ``send_product`` tool offers. ``price`` is a unit price (up to 4 places, like line items'
    ``unit_price``) in ``currency``. A product referenced by line items is archived (``active`` false)
    instead of deleted, so the deals that sold it keep naming it."""

    __tablename__ = "crm_products"
    __table_args__ = (UniqueConstraint("organization_id", "sku", name="uq_crm_products_org_sku"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(_org_fk())
    sku: Mapped[str | None] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(300))
    description: Mapped[str | None] = mapped_column(Text)
    price: Mapped[Decimal] = mapped_column(MONEY)
    currency: Mapped[str] = mapped_column(String(3), default="MXN")
    url: Mapped[str | None] = mapped_column(String(2048))
    image_url: Mapped[str | None] = mapped_column(String(2048))
    active: Mapped[bool] = mapped_column(default=True)


# The catalogue list in its order (name, then id) per organization; a catalogue is small per
# organization, so searches (name, SKU, description) filter the organization's rows read off this index.
Index("ix_crm_products_list", Product.organization_id, Product.name, Product.id)
