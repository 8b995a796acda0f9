"""Read models of the CRM's desk pages: the joins a page shows that no verb needs (no writes here).

Each page's reads have their own section; each costs a fixed number of statements whatever the number of
rows it shows (rows of a page, then one batch per relation of those rows).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    and_,
    bindparam,
    cast,
    exists,
    literal,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import joinedload, selectinload
from sqlalchemy.orm.attributes import set_committed_value

from blueprints.crm.models import (
    MONEY,
    CrmAccount,
    CrmContact,
    CrmTask,
    Deal,
    DealContact,
    Pipeline,
    Product,
    Stage,
)
from blueprints.crm.services.tasks import DUE_ORDER
from blueprints.members.services.members import members_by_ids
from core.db import db, utcnow
from core.text import LIKE_ESCAPE, contains_pattern
from core.timeutil import as_utc

# ------------------------------------------------------------------------------------------------- deals


@dataclass(frozen=True)
class DealCard:
    """One deal as a card or a list row: the deal's own columns (no relation loaded), its stage, and the
    names the card shows (owner, primary contact)."""

    deal: Deal
    stage: Stage
    owner_name: str | None
    contact_name: str | None
    contact_id: uuid.UUID | None

    @property
    def in_stage_since(self) -> datetime:
        return as_utc(self.deal.stage_entered_at)

    @property
    def order(self) -> str:
        """The card's place in its column as text that sorts like the column (newest first, then by id):
        where desk.js puts a card that a live update brings."""
        return f"{as_utc(self.deal.created_at):%Y-%m-%dT%H:%M:%S.%f}|{self.deal.id}"

    @property
    def rotting(self) -> bool:
        """Open and in its stage longer than the stage's rotting limit (the model's rule, with the stage
        this card already has instead of a lazy load)."""
        days = self.stage.rotting_days
        if not days or self.deal.status != "open":
            return False
        return (utcnow() - self.in_stage_since).total_seconds() > days * 86400


@dataclass(frozen=True)
class CardPage:
    """Cards of one column (or of the list) and the cursor of the next page, None at the end."""

    cards: list[DealCard]
    after: str | None


def contact_condition(contact: str | None, contact_id: uuid.UUID | None) -> list[ColumnElement[bool]]:
    """Deals one of whose contacts has ``contact_id``, or whose name contains ``contact`` (LIKE wildcards
    taken literally)."""
    conditions: list[ColumnElement[bool]] = []
    if contact_id is not None:
        conditions.append(
            exists().where(and_(DealContact.deal_id == Deal.id, DealContact.contact_id == contact_id))
        )
    if contact:
        conditions.append(
            exists().where(
                and_(
                    DealContact.deal_id == Deal.id,
                    CrmContact.id == DealContact.contact_id,
                    CrmContact.name.ilike(contains_pattern(contact), escape=LIKE_ESCAPE),
                )
            )
        )
    return conditions


# A column's order: newest deals first (ties by id), read off ix_crm_deals_list_stage.
_CARD_ORDER = (Deal.created_at.desc(), Deal.id.desc())


def _cursor(deal: Deal) -> str:
    return f"{as_utc(deal.created_at).isoformat()}_{deal.id}"


def parse_cursor(after: str | None) -> tuple[datetime, uuid.UUID] | None:
    """``<created_at ISO>_<id>`` of the last card shown, or None when absent or malformed."""
    if not after:
        return None
    moment, _sep, deal_id = after.rpartition("_")
    try:
        return datetime.fromisoformat(moment), uuid.UUID(deal_id)
    except ValueError:
        return None


def _cards(
    organization_id: uuid.UUID, deals: Sequence[Deal], stages: dict[uuid.UUID, Stage]
) -> list[DealCard]:
    """Cards for ``deals`` with their owners and primary contacts: one query each for all of them."""
    if not deals:
        return []
    ids = [deal.id for deal in deals]
    contacts: dict[uuid.UUID, tuple[uuid.UUID, str]] = {}
    rows = db.session.execute(
        select(DealContact.deal_id, CrmContact.id, CrmContact.name)
        .join(CrmContact, CrmContact.id == DealContact.contact_id)
        .where(DealContact.deal_id.in_(ids))
        # the primary contact first, then the first one linked
        .order_by(DealContact.deal_id, DealContact.is_primary.desc(), DealContact.created_at)
    )
    for deal_id, contact_id, name in rows:
        contacts.setdefault(deal_id, (contact_id, name))
    owner_ids = sorted({deal.owner_id for deal in deals if deal.owner_id})
    owners = {key: member.name for key, member in members_by_ids(organization_id, owner_ids).items()}
    cards = []
    for deal in deals:
        contact = contacts.get(deal.id)
        cards.append(
            DealCard(
                deal=deal,
                stage=stages[deal.stage_id],
                owner_name=owners.get(deal.owner_id or ""),
                contact_name=contact[1] if contact else None,
                contact_id=contact[0] if contact else None,
            )
        )
    return cards


def _stages(pipeline: Pipeline) -> dict[uuid.UUID, Stage]:
    return {stage.id: stage for stage in pipeline.stages}


def board_columns(
    organization_id: uuid.UUID, pipeline: Pipeline, where: Sequence[ColumnElement[bool]], per_column: int
) -> dict[uuid.UUID, CardPage]:
    """The first ``per_column`` cards of every stage of ``pipeline`` among the deals ``where`` selects
    (``deals.deal_conditions`` and :func:`contact_condition`), in one query: a ``LIMIT`` per stage read
    off ix_crm_deals_list_stage (each reads its column's first rows, not the pipeline's thousands), the
    stages' pages joined by ``UNION ALL``."""
    stages = _stages(pipeline)
    if not stages:
        return {}
    pages = [
        select(
            select(Deal.id)
            .where(Deal.organization_id == organization_id, Deal.stage_id == stage_id, *where)
            .order_by(*_CARD_ORDER)
            .limit(per_column + 1)
            .subquery()
            .c.id
        )
        for stage_id in stages
    ]
    deals = list(
        db.session.scalars(
            select(Deal).where(Deal.id.in_(union_all(*pages))).order_by(Deal.stage_id, *_CARD_ORDER)
        )
    )
    by_stage: dict[uuid.UUID, list[Deal]] = {stage_id: [] for stage_id in stages}
    for deal in deals:
        if deal.stage_id in by_stage:
            by_stage[deal.stage_id].append(deal)
    shown = {stage_id: rows[:per_column] for stage_id, rows in by_stage.items()}
    cards = _cards(organization_id, [deal for rows in shown.values() for deal in rows], stages)
    by_id = {card.deal.id: card for card in cards}
    return {
        stage_id: CardPage(
            [by_id[deal.id] for deal in shown[stage_id]],
            _cursor(shown[stage_id][-1]) if len(rows) > per_column else None,
        )
        for stage_id, rows in by_stage.items()
    }


def column_cards(
    organization_id: uuid.UUID,
    pipeline: Pipeline,
    stage_id: uuid.UUID,
    where: Sequence[ColumnElement[bool]],
    after: str | None,
    limit: int,
) -> CardPage:
    """The next ``limit`` cards of one stage after the cursor ``after`` (a keyset page: every page costs
    what the first does, and a card moved meanwhile is neither repeated nor skipped)."""
    conditions = [Deal.pipeline_id == pipeline.id, Deal.stage_id == stage_id, *where]
    cursor = parse_cursor(after)
    if cursor is not None:
        moment, deal_id = cursor
        conditions.append(or_(Deal.created_at < moment, and_(Deal.created_at == moment, Deal.id < deal_id)))
    deals = list(db.session.scalars(select(Deal).where(*conditions).order_by(*_CARD_ORDER).limit(limit + 1)))
    shown = deals[:limit]
    return CardPage(
        _cards(organization_id, shown, _stages(pipeline)),
        _cursor(shown[-1]) if len(deals) > limit else None,
    )


def deal_card(
    organization_id: uuid.UUID, deal_id: uuid.UUID, pipeline: Pipeline, where: Sequence[ColumnElement[bool]]
) -> DealCard | None:
    """The card of one deal while it is in ``pipeline`` and matches ``where``; None otherwise (deleted,
    moved to another pipeline, no longer the filters')."""
    deal = db.session.scalars(
        select(Deal).where(Deal.id == deal_id, Deal.pipeline_id == pipeline.id, *where)
    ).first()
    if deal is None or deal.stage_id not in _stages(pipeline):
        return None
    return _cards(organization_id, [deal], _stages(pipeline))[0]


# The list view's sortable columns: the API's orders (deals.DealFilters.sort_by) plus the stage's.
LIST_SORTS = ("name", "amount", "created_at", "expected_close_date", "updated_at", "stage")


def deal_rows(
    organization_id: uuid.UUID,
    pipeline: Pipeline,
    where: Sequence[ColumnElement[bool]],
    sort_by: str,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[DealCard], bool]:
    """A page of the list view (and of the CSV export) and whether more rows follow."""
    if sort_by == "stage":
        column: Any = (
            select(Stage.stage_order).where(Stage.id == Deal.stage_id).correlate(Deal).scalar_subquery()
        )
    else:
        column = getattr(Deal, sort_by if sort_by in LIST_SORTS else "created_at")
    ordering = column.desc() if descending else column.asc()
    if sort_by == "expected_close_date":
        ordering = ordering.nulls_last()
    tie = Deal.id.desc() if descending else Deal.id.asc()
    deals = list(
        db.session.scalars(
            select(Deal)
            .where(Deal.pipeline_id == pipeline.id, *where)
            .order_by(ordering, tie)
            .offset(offset)
            .limit(limit + 1)
        )
    )
    return _cards(organization_id, deals[:limit], _stages(pipeline)), len(deals) > limit


def contact_names(organization_id: uuid.UUID, contact_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Names of the organization's contacts among ``contact_ids`` (one query)."""
    if not contact_ids:
        return {}
    rows = db.session.execute(
        select(CrmContact.id, CrmContact.name).where(
            CrmContact.organization_id == organization_id, CrmContact.id.in_(list(contact_ids))
        )
    )
    return {row.id: row.name for row in rows}


# --------------------------------------------------------------------------------------------- the deal sheet
# The drawer and the deal page read the deal, its pipeline's stages, its contacts' names, its tasks and the
# choices of their selects here: about one statement per table, none per row, and the selects' rows as
# plain values rather than ORM objects with their relations (docs/benchmarks.md, "The deal pages").


@dataclass(frozen=True)
class DealSheet:
    """A deal with its pipeline, its stage, its line items, linked conversations and contacts loaded; the
    stages of its pipeline in their order; the names of its contacts."""

    deal: Deal
    stages: list[Stage]
    contact_names: dict[uuid.UUID, str]


def deal_sheet(organization_id: uuid.UUID, deal_id: uuid.UUID) -> DealSheet | None:
    """The organization's live deal as its sheet shows it (None: another organization's, deleted or
    unknown), in four statements: the deal joined to its pipeline, its stage and every stage of the
    pipeline (one row per stage), its line items and its conversations (each in its relation's order),
    then its contacts joined to their names. Rows already in the session are read again (a section
    answered after a change shows what the change stored)."""
    rows = db.session.execute(
        select(Deal, Stage)
        .outerjoin(Stage, Stage.pipeline_id == Deal.pipeline_id)
        .where(Deal.id == deal_id, Deal.organization_id == organization_id, Deal.deleted_at.is_(None))
        .order_by(Stage.stage_order, Stage.created_at)
        .options(
            joinedload(Deal.pipeline),
            joinedload(Deal.stage),
            selectinload(Deal.line_items),
            selectinload(Deal.conversations),
        )
        .execution_options(populate_existing=True)
    ).all()
    if not rows:
        return None
    deal = rows[0][0]
    links = db.session.execute(
        select(DealContact, CrmContact.name)
        .outerjoin(
            CrmContact,
            and_(CrmContact.id == DealContact.contact_id, CrmContact.organization_id == organization_id),
        )
        .where(DealContact.deal_id == deal.id)
        .order_by(DealContact.created_at)
        .execution_options(populate_existing=True)
    ).all()
    # the relation as if it had been loaded with the deal (Deal.contacts' order), without a second read
    set_committed_value(deal, "contacts", [link for link, _name in links])
    names = {link.contact_id: name for link, name in links if name is not None}
    return DealSheet(deal, [stage for _deal, stage in rows if stage is not None], names)


def deal_tasks(organization_id: uuid.UUID, deal_id: uuid.UUID, limit: int) -> list[CrmTask]:
    """The deal's tasks in the task list's order (soonest due, undated last, then newest), without the
    deal, ticket, contact and account the API's list loads for each."""
    return list(
        db.session.scalars(
            select(CrmTask)
            .where(
                CrmTask.organization_id == organization_id,
                CrmTask.deleted_at.is_(None),
                CrmTask.deal_id == deal_id,
            )
            .order_by(*DUE_ORDER)
            .limit(limit)
        )
    )


class Choice(NamedTuple):
    """An option of one of the sheet's selects (a product's also has its price): a named tuple, whose
    fields a template reads faster than a result row's or an ORM object's."""

    id: uuid.UUID
    name: str
    price: Decimal | None
    currency: str | None


@dataclass(frozen=True)
class SheetChoices:
    products: list[Choice]
    accounts: list[Choice]
    contacts: list[Choice]


def sheet_choices(organization_id: uuid.UUID, limit: int) -> SheetChoices:
    """What the sheet's selects offer, in one statement: the first ``limit`` active products, accounts and
    contacts of the organization by name (then id), as the product, account and contact lists order them,
    each a ``LIMIT`` of its own, the three joined by ``UNION ALL``. No count and no relation (the account
    list's contacts) is read. The statement is built once (:func:`_choices_statement`) and run with the
    organization and the limit as parameters."""
    found: tuple[list[Choice], ...] = ([], [], [])
    rows = db.session.execute(_choices_statement(), {"organization_id": organization_id, "limit": limit})
    for kind, *values in rows:
        found[kind].append(Choice(*values))
    return SheetChoices(*found)


@functools.cache
def _choices_statement() -> Any:
    """The choices' statement, its organization and limit bound at run time: building the union of three
    subqueries took more CPU than running it (its compiled form is cached by SQLAlchemy either way)."""
    organization_id = bindparam("organization_id", type_=Product.__table__.c.organization_id.type)
    limit = bindparam("limit", type_=Integer)

    def columns(kind: int, model: Any, price: Any = None, currency: Any = None) -> tuple[Any, ...]:
        return (
            literal(kind).label("kind"),
            model.id.label("id"),
            model.name.label("name"),
            (price if price is not None else cast(null(), MONEY)).label("price"),
            (currency if currency is not None else cast(null(), String)).label("currency"),
        )

    branches = [
        select(*columns(0, Product, Product.price, Product.currency))
        .where(Product.organization_id == organization_id, Product.active.is_(True))
        .order_by(Product.name, Product.id)
        .limit(limit),
        select(*columns(1, CrmAccount))
        .where(CrmAccount.organization_id == organization_id)
        .order_by(CrmAccount.name, CrmAccount.id)
        .limit(limit),
        select(*columns(2, CrmContact))
        .where(CrmContact.organization_id == organization_id)
        .order_by(CrmContact.name, CrmContact.id)
        .limit(limit),
    ]
    # each branch as a subquery (a LIMIT inside UNION ALL), ordered again by kind, name and id: the
    # database's own collation orders the names, as in each list
    pages = [select(*branch.subquery().c) for branch in branches]
    union = union_all(*pages).subquery()
    return select(union).order_by(union.c.kind, union.c.name, union.c.id)
