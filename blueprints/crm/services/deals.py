"""Deals: numbering, stage moves with history, line items and the computed amount, contacts,
linked conversations with captured summaries, the activity timeline and time in stage."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload, selectinload

from blueprints.audit import services as audit_log
from blueprints.crm import hooks
from blueprints.crm.drafts import (
    DealChanges,
    DealContactDraft,
    DealDraft,
    LineItemChanges,
    LineItemDraft,
    check,
    given,
    sent,
)
from blueprints.crm.models import (
    CrmContact,
    Deal,
    DealActivity,
    DealContact,
    DealConversation,
    DealLineItem,
    DealStageVisit,
    Pipeline,
    Stage,
)
from blueprints.crm.money import money_str, round_money, round_price
from blueprints.crm.rules import (
    Amount,
    ConversationId,
    CurrencyIn,
    DealSort,
    DealStatus,
    Limit,
    LinkChannel,
    LostReason,
    MemberId,
    NoteText,
    Offset,
    Refusal,
    Rule,
    Search,
    SortDirection,
    Timezone,
    missing,
)
from blueprints.crm.services.common import (
    check_conversations,
    check_members,
    check_range,
    check_refs,
    get_ref,
    local_range,
    next_deal_number,
    savepoint,
)
from blueprints.crm.services.pipelines import get_stage, ordered_stages, pipeline_for_update, renumber
from blueprints.crm.services.products import check_product_id
from core.db import db, for_update, utcnow
from core.events import publish
from core.pagination import Page, paginate
from core.tenancy import missing_ids
from core.textsearch import contains, text_index

DEAL_LOAD = (
    joinedload(Deal.pipeline),
    joinedload(Deal.stage),
    selectinload(Deal.contacts),
    selectinload(Deal.conversations),
    selectinload(Deal.line_items),
)


def _date_at_midnight(value: date | None) -> datetime | None:
    return datetime.combine(value, time.min, tzinfo=UTC) if value is not None else None


def get_deal(organization_id: uuid.UUID, deal_id: uuid.UUID) -> Deal:
    deal = db.session.scalars(
        select(Deal)
        .where(Deal.id == deal_id, Deal.organization_id == organization_id, Deal.deleted_at.is_(None))
        .options(*DEAL_LOAD)
        .execution_options(populate_existing=True)
    ).first()
    if deal is None:
        raise missing("Deal")
    return deal


def _event_data(deal: Deal, change: str) -> dict[str, Any]:
    return {
        "id": str(deal.id),
        "reference": deal.reference,
        "name": deal.name,
        "amount": money_str(deal.amount, deal.currency),
        "currency": deal.currency,
        "status": deal.status,
        "pipeline_id": str(deal.pipeline_id),
        "stage_id": str(deal.stage_id),
        "change": change,
    }


def _activity(
    deal: Deal, kind: str, data: dict[str, Any], summary: str | None = None, actor: str | None = None
) -> None:
    db.session.add(
        DealActivity(
            organization_id=deal.organization_id,
            deal_id=deal.id,
            type=kind,
            data=data,
            summary=summary,
            actor=actor,
            created_at=utcnow(),
        )
    )


def _set_status(deal: Deal, status: str, actor: str | None) -> None:
    if status == deal.status:
        return
    _activity(deal, "status_changed", {"from": deal.status, "to": status}, actor=actor)
    deal.status = status
    deal.closed_at = None if status == "open" else utcnow()


def _open_visit(deal: Deal, stage: Stage, at: datetime) -> None:
    db.session.add(
        DealStageVisit(
            deal_id=deal.id,
            stage_id=stage.id,
            stage_name=stage.name,
            stage_order=stage.stage_order,
            entered_at=at,
        )
    )


def move_deal(
    deal: Deal,
    stage: Stage,
    *,
    publish_event: bool = True,
    actor: str | None = None,
    lost_reason: str | None = None,
) -> bool:
    """Put ``deal`` in ``stage`` (no commit): close the open visit, open a new one, follow the stage's
    status (won/lost stage -> won/lost; open stage -> open). False when it is already there.
    ``lost_reason`` (why the deal was lost) is kept in the move's activity when ``stage`` is a lost one."""
    if deal.stage_id == stage.id:
        return False
    now = utcnow()
    open_visit = db.session.scalars(
        select(DealStageVisit).where(DealStageVisit.deal_id == deal.id, DealStageVisit.left_at.is_(None))
    ).first()
    if open_visit is not None:
        open_visit.left_at = now
    _open_visit(deal, stage, now)
    previous = deal.stage_id
    moved: dict[str, Any] = {
        "from_stage_id": str(previous),
        "to_stage_id": str(stage.id),
        "to_stage_name": stage.name,
    }
    if lost_reason and stage.status == "lost":
        moved["lost_reason"] = lost_reason
    _activity(deal, "stage_changed", moved, actor=actor)
    deal.stage_id = stage.id
    deal.stage_entered_at = now
    _set_status(deal, stage.status, actor)
    if publish_event:
        publish(
            "deal.moved",
            deal.organization_id,
            {**_event_data(deal, "moved"), "from_stage_id": str(previous), "to_stage_id": str(stage.id)},
        )
    return True


def _stage_in_pipeline(organization_id: uuid.UUID, stage_id: uuid.UUID, pipeline_id: uuid.UUID) -> Stage:
    stage = get_ref(Stage, stage_id, organization_id, "Stage", "stage_id")
    if stage.pipeline_id != pipeline_id:
        raise Refusal(
            400,
            "stage_id: the stage belongs to another pipeline",
            code="stage_other_pipeline",
            param="stage_id",
        )
    return stage


def _set_contacts(organization_id: uuid.UUID, deal: Deal, contacts: tuple[DealContactDraft, ...]) -> None:
    wanted = {c.contact_id: c for c in contacts}
    unknown = set(missing_ids(CrmContact, wanted, organization_id))
    if unknown:
        index = next(i for i, c in enumerate(contacts) if c.contact_id in unknown)
        raise missing("Contact", f"contacts.{index}.contact_id")
    existing = {link.contact_id: link for link in deal.contacts}
    for contact_id, link in existing.items():
        if contact_id not in wanted:
            deal.contacts.remove(link)
    for contact_id, item in wanted.items():
        link = existing.get(contact_id)
        if link is None:
            link = DealContact(contact_id=contact_id, created_at=utcnow())
            deal.contacts.append(link)
        link.role = item.role
        link.is_primary = item.is_primary


def _link(deal: Deal, conversation_id: str, channel: str | None, linked_by: str | None) -> DealConversation:
    summary = hooks.summarize_conversation(deal.organization_id, conversation_id, channel)
    link = DealConversation(
        organization_id=deal.organization_id,
        deal_id=deal.id,
        conversation_id=conversation_id,
        channel=channel,
        linked_by=linked_by,
        summary=summary.text,
        created_at=utcnow(),
    )
    deal.conversations.append(link)
    _activity(
        deal,
        "conversation_linked",
        {
            "conversation_id": conversation_id,
            "channel": channel,
            "summary_method": summary.method,
            "message_count": summary.message_count,
        },
        summary=summary.text,
        actor=linked_by,
    )
    return link


def create_deal(organization_id: uuid.UUID, draft: DealDraft, actor: str | None = None) -> Deal:
    """A new deal in ``draft.stage_id`` of ``draft.pipeline_id``, numbered in that pipeline, with its
    contacts and linked conversations."""
    draft = check(draft)
    pipeline = pipeline_for_update(organization_id, draft.pipeline_id, param="pipeline_id")
    stage = _stage_in_pipeline(organization_id, draft.stage_id, pipeline.id)
    check_refs(organization_id, account_id=draft.account_id)
    check_members(organization_id, {"owner_id": draft.owner_id})
    check_conversations(organization_id, draft.conversation_ids)
    conversation_ids = list(dict.fromkeys(draft.conversation_ids))
    currency = draft.currency
    now = utcnow()
    number = next_deal_number(pipeline)
    status = draft.status or stage.status
    deal = Deal(
        organization_id=organization_id,
        pipeline_id=pipeline.id,
        stage_id=stage.id,
        number=number,
        reference=f"{pipeline.key}-{number}",
        name=draft.name,
        amount=round_money(draft.amount or Decimal(0), currency),
        currency=currency,
        status=status,
        owner_id=draft.owner_id,
        account_id=draft.account_id,
        expected_close_date=_date_at_midnight(draft.expected_close_date),
        stage_entered_at=now,
        closed_at=None if status == "open" else now,
        created_at=now,
        updated_at=now,
        contacts=[],
        conversations=[],
        line_items=[],
    )
    db.session.add(deal)
    db.session.flush()
    _open_visit(deal, stage, now)
    _set_contacts(organization_id, deal, draft.contacts)
    _activity(
        deal,
        "created",
        {"stage_id": str(stage.id), "amount": money_str(deal.amount, currency), "currency": currency},
        actor=actor,
    )
    for conversation_id in conversation_ids:
        _link(deal, conversation_id, None, None)
    publish("deal.updated", organization_id, _event_data(deal, "created"))
    return get_deal(organization_id, deal.id)


def update_deal(
    organization_id: uuid.UUID, deal_id: uuid.UUID, changes: DealChanges, actor: str | None = None
) -> Deal:
    """Only the fields sent change (``drafts.UNSET``: not sent); a null clears where it may."""
    changes = check(changes)
    deal = get_deal(organization_id, deal_id)
    has_items = bool(deal.line_items)
    if given(changes.amount) and has_items and round_money(changes.amount, deal.currency) != deal.amount:
        raise Refusal(
            409,
            "amount: the amount is the sum of the line items",
            code="amount_from_line_items",
            param="amount",
        )
    if given(changes.currency) and changes.currency != deal.currency and has_items:
        raise Refusal(
            409,
            "currency: the deal has line items in its currency",
            code="currency_locked_by_line_items",
            param="currency",
        )
    if given(changes.name):
        deal.name = changes.name
    if sent(changes.owner_id):
        check_members(organization_id, {"owner_id": changes.owner_id})
        deal.owner_id = changes.owner_id
    if sent(changes.account_id):
        check_refs(organization_id, account_id=changes.account_id)
        deal.account_id = changes.account_id
    if sent(changes.expected_close_date):
        deal.expected_close_date = _date_at_midnight(changes.expected_close_date)
    old_amount, old_currency = deal.amount, deal.currency
    if given(changes.currency):
        deal.currency = changes.currency
        deal.amount = round_money(deal.amount, deal.currency)
    if given(changes.amount) and not has_items:
        deal.amount = round_money(changes.amount, deal.currency)
    if (deal.amount, deal.currency) != (old_amount, old_currency):
        _activity(
            deal,
            "amount_changed",
            {
                "from": money_str(old_amount, old_currency),
                "to": money_str(deal.amount, deal.currency),
                "from_currency": old_currency,
                "currency": deal.currency,
                "reason": "manual",
            },
            actor=actor,
        )
    if given(changes.contacts):
        _set_contacts(organization_id, deal, changes.contacts)
    pipeline_id = changes.pipeline_id if given(changes.pipeline_id) else None
    stage_id = changes.stage_id if given(changes.stage_id) else None
    if pipeline_id is not None and pipeline_id != deal.pipeline_id:
        pipeline = get_ref(Pipeline, pipeline_id, organization_id, "Pipeline", "pipeline_id")
        if stage_id is not None:
            stage = _stage_in_pipeline(organization_id, stage_id, pipeline.id)
        else:
            stage = db.session.scalars(
                select(Stage).where(Stage.pipeline_id == pipeline.id).order_by(Stage.stage_order).limit(1)
            ).first()
            if stage is None:
                raise Refusal(
                    400,
                    "pipeline_id: the pipeline has no stages",
                    code="pipeline_without_stages",
                    param="pipeline_id",
                )
        # Like an issue moved between projects: the deal takes the next number of its new pipeline, so
        # <KEY>-<n> stays unique per pipeline and always names the pipeline the deal is in.
        number = next_deal_number(pipeline)
        _activity(
            deal,
            "pipeline_changed",
            {"from_reference": deal.reference, "to_reference": f"{pipeline.key}-{number}"},
            actor=actor,
        )
        deal.pipeline_id, deal.number, deal.reference = pipeline.id, number, f"{pipeline.key}-{number}"
        move_deal(deal, stage, actor=actor)
    elif stage_id is not None:
        move_deal(deal, _stage_in_pipeline(organization_id, stage_id, deal.pipeline_id), actor=actor)
    if given(changes.status):
        _set_status(deal, changes.status, actor)
    deal.updated_at = utcnow()
    publish("deal.updated", organization_id, _event_data(deal, "updated"))
    return get_deal(organization_id, deal.id)


# The rules of the verbs that take plain values.
_STAGE_ID = Rule[uuid.UUID](uuid.UUID)
_CONVERSATION_ID = Rule[str](ConversationId)
_LINK_CHANNEL = Rule[str | None](LinkChannel | None)
_MEMBER_ID = Rule[str | None](MemberId | None)
_NOTE = Rule[str](NoteText)
_LOST_REASON = Rule[str | None](LostReason | None)


def change_stage(
    organization_id: uuid.UUID,
    deal_id: uuid.UUID,
    stage_id: uuid.UUID,
    actor: str | None = None,
    lost_reason: str | None = None,
) -> Deal:
    """Move the deal to another stage of its pipeline (won/lost stages set the status). ``lost_reason``,
    why a deal moved to a lost stage was lost (up to 500 characters), is recorded in the move's
    ``stage_changed`` activity; it is not kept for a move to an open or won stage."""
    stage_id = _STAGE_ID.check(stage_id, "stage_id")
    lost_reason = _LOST_REASON.check(lost_reason, "lost_reason")
    deal = get_deal(organization_id, deal_id)
    stage = _stage_in_pipeline(organization_id, stage_id, deal.pipeline_id)
    if move_deal(deal, stage, actor=actor, lost_reason=lost_reason):
        deal.updated_at = utcnow()
        publish("deal.updated", organization_id, _event_data(deal, "moved"))
    return get_deal(organization_id, deal.id)


def delete_deal(organization_id: uuid.UUID, deal_id: uuid.UUID) -> None:
    deal = get_deal(organization_id, deal_id)
    deal.deleted_at = utcnow()
    audit_log.record("deal.deleted", "deal", deal.id, organization_id=organization_id)
    publish("deal.updated", organization_id, _event_data(deal, "deleted"))


# The list's search (migration crm_0004: a trigram index, core.textsearch).
DEAL_TEXT = text_index("crm_deals", "name")


@dataclass(frozen=True)
class DealFilters:
    """What a deal list is narrowed and ordered by (every field optional). The API's query model is
    generated from these fields (``schemas.DealListQuery``)."""

    limit: Limit = 100
    offset: Offset = 0
    search: Search | None = None
    pipeline_id: uuid.UUID | None = None
    stage_id: uuid.UUID | None = None
    owner_id: MemberId | None = None
    status: DealStatus | None = None
    account_id: uuid.UUID | None = None
    product_id: uuid.UUID | None = None
    amount_min: Amount | None = None
    amount_max: Amount | None = None
    unassigned: bool | None = None
    currency: CurrencyIn | None = None
    expected_close_before: date | None = None
    expected_close_after: date | None = None
    created_after: date | None = None
    created_before: date | None = None
    sort_by: DealSort = "created_at"
    sort_dir: SortDirection = "desc"
    timezone: Timezone = None


def deal_conditions(organization_id: uuid.UUID, query: DealFilters) -> list[ColumnElement[bool]]:
    """The WHERE of a deal list narrowed by ``query`` (checked here): the API's list and the desk's board
    and list views filter the same way."""
    query = check(query)
    conditions: list[ColumnElement[bool]] = [
        Deal.organization_id == organization_id,
        Deal.deleted_at.is_(None),
    ]
    if query.search:
        conditions.append(contains(DEAL_TEXT, Deal, query.search))
    for name in ("pipeline_id", "stage_id", "owner_id", "status", "account_id", "currency"):
        value = getattr(query, name)
        if value is not None:
            conditions.append(getattr(Deal, name) == value)
    if query.product_id is not None:
        conditions.append(
            exists().where(and_(DealLineItem.deal_id == Deal.id, DealLineItem.product_id == query.product_id))
        )
    if query.amount_min is not None:
        conditions.append(Deal.amount >= query.amount_min)
    if query.amount_max is not None:
        conditions.append(Deal.amount <= query.amount_max)
    if query.unassigned is True:
        conditions.append(Deal.owner_id.is_(None))
    elif query.unassigned is False:
        conditions.append(Deal.owner_id.is_not(None))
    # expected_close_date is a calendar date (stored at 00:00Z): compared as dates, no time zone.
    close_after = _date_at_midnight(query.expected_close_after)
    close_before = _date_at_midnight(query.expected_close_before)
    check_range(close_after, close_before, "expected_close_after")
    if close_after is not None:
        conditions.append(Deal.expected_close_date >= close_after)
    if close_before is not None:
        conditions.append(Deal.expected_close_date <= close_before)
    start, end = local_range(query.created_after, query.created_before, query.timezone)
    if start is not None:
        conditions.append(Deal.created_at >= start)
    if end is not None:
        conditions.append(Deal.created_at < end)
    return conditions


def list_deals(organization_id: uuid.UUID, query: DealFilters) -> Page[Deal]:
    query = check(query)
    conditions = deal_conditions(organization_id, query)
    column = getattr(Deal, query.sort_by)
    ordering = column.asc() if query.sort_dir == "asc" else column.desc()
    tie = Deal.id.asc() if query.sort_dir == "asc" else Deal.id.desc()
    if query.sort_by == "expected_close_date":
        ordering = ordering.nulls_last()
    statement = select(Deal).where(*conditions).order_by(ordering, tie).options(*DEAL_LOAD)
    return paginate(statement, offset=query.offset, limit=query.limit)


# --------------------------------------------------------------------------------------------- line items


def line_item_total(quantity: Decimal, unit_price: Decimal, discount: Decimal, currency: str) -> Decimal:
    """quantity x unit_price - discount, floored at 0, rounded half-up to the currency's minor units.
    Quantity and unit price are multiplied exactly (unit prices keep up to 4 places); only the total
    is rounded, once."""
    return round_money(max(quantity * unit_price - discount, Decimal(0)), currency)


def _recalculate(deal: Deal, actor: str | None) -> None:
    """Deal amount = sum of the line item totals (0 once the last one is removed)."""
    total = sum((i.total for i in deal.line_items), Decimal(0))
    new_amount = round_money(total, deal.currency)
    if new_amount != deal.amount:
        _activity(
            deal,
            "amount_changed",
            {
                "from": money_str(deal.amount, deal.currency),
                "to": money_str(new_amount, deal.currency),
                "from_currency": deal.currency,
                "currency": deal.currency,
                "reason": "line_items",
            },
            actor=actor,
        )
        deal.amount = new_amount
    deal.updated_at = utcnow()
    publish("deal.updated", deal.organization_id, _event_data(deal, "line_items"))


def _check_currency(deal: Deal, currency: str | None) -> str:
    if currency is not None and currency != deal.currency:
        raise Refusal(
            400,
            f"currency: must be the deal's currency ({deal.currency})",
            code="currency_not_deal_currency",
            param="currency",
            detail={"currency": deal.currency},
        )
    return deal.currency


def _get_item(deal: Deal, item_id: uuid.UUID) -> DealLineItem:
    for item in deal.line_items:
        if item.id == item_id:
            return item
    raise missing("Line item")


def _deal_for_items(organization_id: uuid.UUID, deal_id: uuid.UUID) -> Deal:
    """The deal (404 like :func:`get_deal`) with its row held until the commit: the line-item verbs of one
    deal take turns, so two of them never give one position twice nor sum the amount from a stale list."""
    db.session.execute(
        for_update(
            select(Deal.id).where(
                Deal.id == deal_id, Deal.organization_id == organization_id, Deal.deleted_at.is_(None)
            )
        )
    )
    return get_deal(organization_id, deal_id)


def _renumber(items: list[DealLineItem]) -> None:
    """Positions 0..n-1 in the order of ``items`` (only the rows whose position changes are written)."""
    for position, item in enumerate(items):
        if item.position != position:
            item.position = position


def _check_position(deal: Deal, position: int) -> None:
    last = len(deal.line_items) - 1
    if position > last:
        raise Refusal(
            400,
            f"position: must be from 0 to {last} (the deal has {last + 1} line items)",
            code="position_out_of_range",
            param="position",
            detail={"max": last, "count": last + 1},
        )


def add_line_item(
    organization_id: uuid.UUID, deal_id: uuid.UUID, draft: LineItemDraft, actor: str | None = None
) -> DealLineItem:
    """A new item goes last (``position`` = the number of items the deal had)."""
    draft = check(draft)
    deal = _deal_for_items(organization_id, deal_id)
    currency = _check_currency(deal, draft.currency)
    check_product_id(organization_id, draft.product_id)
    quantity, unit_price = draft.quantity, round_price(draft.unit_price)
    discount = round_money(draft.discount, currency)
    now = utcnow()
    item = DealLineItem(
        organization_id=organization_id,
        deal_id=deal.id,
        product_id=draft.product_id,
        name=draft.name,
        quantity=quantity,
        unit_price=unit_price,
        discount=discount,
        total=line_item_total(quantity, unit_price, discount, currency),
        currency=currency,
        sku=draft.sku,
        notes=draft.notes,
        position=len(deal.line_items),
        created_at=now,
        updated_at=now,
    )
    deal.line_items.append(item)
    _recalculate(deal, actor)
    db.session.flush()
    return item


def update_line_item(
    organization_id: uuid.UUID,
    deal_id: uuid.UUID,
    item_id: uuid.UUID,
    changes: LineItemChanges,
    actor: str | None = None,
) -> DealLineItem:
    """Only the fields sent change. A ``position`` (0..n-1) moves the item there and shifts the others, so
    positions stay contiguous; one past the last item is refused (``position_out_of_range``). A move alone
    leaves the amount as it was (no ``amount_changed`` activity) and publishes ``deal.updated`` like any
    change of the items."""
    changes = check(changes)
    deal = _deal_for_items(organization_id, deal_id)
    item = _get_item(deal, item_id)
    if given(changes.position):
        _check_position(deal, changes.position)
    _check_currency(deal, changes.currency if given(changes.currency) else None)
    check_product_id(organization_id, changes.product_id if given(changes.product_id) else None)
    if given(changes.name):
        item.name = changes.name
    if given(changes.quantity):
        item.quantity = changes.quantity
    if given(changes.unit_price):
        item.unit_price = round_price(changes.unit_price)
    if given(changes.discount):
        item.discount = round_money(changes.discount, item.currency)
    if sent(changes.product_id):
        item.product_id = changes.product_id
    if sent(changes.sku):
        item.sku = changes.sku
    if sent(changes.notes):
        item.notes = changes.notes
    if given(changes.position):
        others = [other for other in deal.line_items if other is not item]
        others.insert(changes.position, item)
        _renumber(others)
    item.total = line_item_total(item.quantity, item.unit_price, item.discount, item.currency)
    item.updated_at = utcnow()
    _recalculate(deal, actor)
    return item


def delete_line_item(
    organization_id: uuid.UUID, deal_id: uuid.UUID, item_id: uuid.UUID, actor: str | None = None
) -> None:
    """The items after it move up one place (positions stay 0..n-1)."""
    deal = _deal_for_items(organization_id, deal_id)
    deal.line_items.remove(_get_item(deal, item_id))
    _renumber(list(deal.line_items))
    _recalculate(deal, actor)


# ------------------------------------------------------------------------------------------ conversations


def link_conversation(
    organization_id: uuid.UUID,
    deal_id: uuid.UUID,
    conversation_id: str,
    channel: str | None,
    linked_by: str | None,
) -> DealConversation:
    """404 when the conversation (or call) is not the organization's; 400 when ``linked_by`` names no
    member; 409 when it is already linked."""
    conversation_id = _CONVERSATION_ID.check(conversation_id, "conversation_id")
    channel = _LINK_CHANNEL.check(channel, "channel")
    linked_by = _MEMBER_ID.check(linked_by, "linked_by")
    deal = get_deal(organization_id, deal_id)
    check_conversations(organization_id, [conversation_id], param="conversation_id")
    check_members(organization_id, {"linked_by": linked_by})
    if any(c.conversation_id == conversation_id for c in deal.conversations):
        raise _already_linked()
    try:
        with savepoint():
            link = _link(deal, conversation_id, channel, linked_by)
            db.session.flush()
    except IntegrityError:  # the same link created concurrently
        raise _already_linked() from None
    deal.updated_at = utcnow()
    publish("deal.updated", organization_id, _event_data(deal, "conversation_linked"))
    return link


def _already_linked() -> Refusal:
    return Refusal(
        409,
        "conversation_id: already linked to this deal",
        code="conversation_already_linked",
        param="conversation_id",
    )


def unlink_conversation(
    organization_id: uuid.UUID, deal_id: uuid.UUID, link_id: uuid.UUID, actor: str | None = None
) -> None:
    deal = get_deal(organization_id, deal_id)
    link = next((c for c in deal.conversations if c.id == link_id), None)
    if link is None:
        raise missing("Conversation link")
    deal.conversations.remove(link)
    _activity(
        deal,
        "conversation_unlinked",
        {"conversation_id": link.conversation_id, "channel": link.channel},
        actor=actor,
    )
    deal.updated_at = utcnow()
    publish("deal.updated", organization_id, _event_data(deal, "conversation_unlinked"))


# ------------------------------------------------------------------------------------ timeline, stage times


def _loaded(organization_id: uuid.UUID, deal_id: uuid.UUID, deal: Deal | None) -> Deal:
    """``deal`` when the caller read it already (the organization's, that id), else read here (404)."""
    if deal is not None and deal.id == deal_id and deal.organization_id == organization_id:
        return deal
    return get_deal(organization_id, deal_id)


def list_activities(
    organization_id: uuid.UUID, deal_id: uuid.UUID, deal: Deal | None = None, limit: int | None = None
) -> list[DealActivity]:
    """Newest first. ``deal``: the deal when the caller has it already (a page showing it), one read less;
    ``limit``: only the newest ones (a page showing the latest), the others are not read."""
    deal = _loaded(organization_id, deal_id, deal)
    return list(
        db.session.scalars(
            select(DealActivity)
            .where(DealActivity.deal_id == deal.id)
            .order_by(DealActivity.created_at.desc(), DealActivity.id.desc())
            .limit(limit)
        )
    )


def add_note(organization_id: uuid.UUID, deal_id: uuid.UUID, body: str, author: str | None) -> DealActivity:
    body = _NOTE.check(body, "body")
    deal = get_deal(organization_id, deal_id)
    note = DealActivity(
        organization_id=organization_id,
        deal_id=deal.id,
        type="note",
        data={},
        summary=body,
        actor=author,
        created_at=utcnow(),
    )
    db.session.add(note)
    db.session.flush()
    publish("deal.updated", organization_id, _event_data(deal, "note"))
    return note


@dataclass
class StageTime:
    stage_id: uuid.UUID
    stage_name: str
    stage_order: int
    duration_ms: int = 0
    is_current: bool = False
    visits: int = 0


@dataclass(frozen=True)
class StageTimes:
    deal_id: uuid.UUID
    stages: list[StageTime]


def stage_times(
    organization_id: uuid.UUID,
    deal_id: uuid.UUID,
    deal: Deal | None = None,
    stages: Iterable[Stage] = (),
) -> StageTimes:
    """Milliseconds per stage from the visit history: revisits are summed, the open visit runs to now.
    Stages are listed in the order they were first entered; names come from the live stage when it
    still exists, else from the copy taken on entry. ``deal`` as in :func:`list_activities`; ``stages``:
    stages the caller has read already (the deal's pipeline's), only the others visited are read."""
    deal = _loaded(organization_id, deal_id, deal)
    visits = list(
        db.session.scalars(
            select(DealStageVisit)
            .where(DealStageVisit.deal_id == deal.id)
            .order_by(DealStageVisit.entered_at, DealStageVisit.id)
        )
    )
    live = {stage.id: stage for stage in stages}
    unread = {visit.stage_id for visit in visits} - live.keys()
    if unread:
        live.update((s.id, s) for s in db.session.scalars(select(Stage).where(Stage.id.in_(unread))))
    now = utcnow()
    stages: dict[uuid.UUID, StageTime] = {}
    for visit in visits:
        stage = live.get(visit.stage_id)
        entry = stages.setdefault(
            visit.stage_id,
            StageTime(
                stage_id=visit.stage_id,
                stage_name=stage.name if stage else visit.stage_name,
                stage_order=stage.stage_order if stage else visit.stage_order,
            ),
        )
        end = visit.left_at or now
        entry.duration_ms += max(int((end - visit.entered_at).total_seconds() * 1000), 0)
        entry.visits += 1
        if visit.left_at is None:
            entry.is_current = True
    return StageTimes(deal_id=deal.id, stages=list(stages.values()))


# ------------------------------------------------------------------------------ a stage's deals move out


def delete_stage(organization_id: uuid.UUID, stage_id: uuid.UUID, move_to: uuid.UUID | None) -> None:
    """Refused (409) while live deals sit in the stage, unless ``move_to`` names a stage of the same
    pipeline: then they move there first (recorded in their stage history). A pipeline keeps at least
    one stage. Here rather than with the pipelines: the deals' stage moves are this module's."""
    stage = get_stage(organization_id, stage_id)
    stages = ordered_stages(stage.pipeline_id)
    if len(stages) == 1:
        raise Refusal(409, "A pipeline keeps at least one stage", code="stage_last_of_pipeline")
    target: Stage | None = None
    if move_to is not None:
        target = get_stage(organization_id, move_to, param="move_to_stage_id")
        if target.pipeline_id != stage.pipeline_id or target.id == stage.id:
            raise Refusal(
                400,
                "move_to_stage_id: must be another stage of the same pipeline",
                code="stage_move_target_invalid",
                param="move_to_stage_id",
            )
    deals = list(db.session.scalars(select(Deal).where(Deal.stage_id == stage.id)))
    live = [d for d in deals if d.deleted_at is None]
    if live and target is None:
        raise Refusal(
            409,
            f"The stage has {len(live)} deal(s); pass move_to_stage_id to move them",
            code="stage_has_deals",
            param="move_to_stage_id",
        )
    fallback = target or next(s for s in stages if s.id != stage.id)
    for deal in deals:
        if deal.deleted_at is None:
            move_deal(deal, fallback, publish_event=True)
        else:
            deal.stage_id = fallback.id  # deleted deals only need a valid row to point at
    db.session.flush()
    db.session.delete(stage)
    renumber([s for s in stages if s.id != stage.id])
