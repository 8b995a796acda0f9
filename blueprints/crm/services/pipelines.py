"""Pipelines and stages, currency settings and exchange rates, the multi-currency pipeline summary."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from blueprints.crm.models import CrmSettings, Deal, DealStageVisit, ExchangeRate, Pipeline, Stage
from blueprints.crm.money import CURRENCIES, find_conversion, money_str
from blueprints.crm.services.common import ensure_settings, scoped
from core.db import db
from core.errors import ApiError, not_found

DEFAULT_PIPELINE_NAME = "General"
DEFAULT_PIPELINE_KEY = "VNT"
# (name, probability, status): a common B2B funnel with one won and one lost stage at the end.
DEFAULT_STAGES = (
    ("New", 10, "open"),
    ("Qualified", 25, "open"),
    ("Proposal", 50, "open"),
    ("Negotiation", 75, "open"),
    ("Won", 100, "won"),
    ("Lost", 0, "lost"),
)


def _pipelines_query(organization_id: uuid.UUID) -> Any:
    return (
        select(Pipeline)
        .where(Pipeline.organization_id == organization_id)
        .options(selectinload(Pipeline.stages))
        .order_by(Pipeline.created_at, Pipeline.id)
    )


def get_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> Pipeline:
    pipeline = db.session.scalars(_pipelines_query(organization_id).where(Pipeline.id == pipeline_id)).first()
    if pipeline is None:
        raise not_found("Pipeline")
    return pipeline


def _add_pipeline(organization_id: uuid.UUID, name: str, key: str, is_default: bool) -> Pipeline:
    pipeline = Pipeline(
        id=uuid.uuid4(), organization_id=organization_id, name=name, key=key, is_default=is_default
    )
    db.session.add(pipeline)
    return pipeline


def list_pipelines(organization_id: uuid.UUID) -> list[Pipeline]:
    """All pipelines with their stages; the first call of an organization creates ``General`` (VNT)."""
    pipelines = list(db.session.scalars(_pipelines_query(organization_id)))
    if pipelines:
        return pipelines
    pipeline = _add_pipeline(organization_id, DEFAULT_PIPELINE_NAME, DEFAULT_PIPELINE_KEY, True)
    for order, (name, probability, status) in enumerate(DEFAULT_STAGES):
        db.session.add(
            Stage(
                organization_id=organization_id,
                pipeline_id=pipeline.id,
                name=name,
                stage_order=order,
                probability=probability,
                status=status,
            )
        )
    try:
        db.session.commit()
    except IntegrityError:
        # Two first calls raced; the other one created it. Read theirs.
        db.session.rollback()
    return list(db.session.scalars(_pipelines_query(organization_id)))


def _key_taken(organization_id: uuid.UUID, key: str, exclude: uuid.UUID | None = None) -> bool:
    statement = select(Pipeline.id).where(Pipeline.organization_id == organization_id, Pipeline.key == key)
    if exclude is not None:
        statement = statement.where(Pipeline.id != exclude)
    return db.session.scalar(statement) is not None


def _make_default(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    db.session.execute(
        update(Pipeline)
        .where(Pipeline.organization_id == organization_id, Pipeline.id != pipeline_id)
        .values(is_default=False)
        .execution_options(synchronize_session="fetch")
    )


def create_pipeline(organization_id: uuid.UUID, name: str, key: str, is_default: bool | None) -> Pipeline:
    if _key_taken(organization_id, key):
        raise ApiError(409, f"key: a pipeline with key {key} already exists", param="key")
    has_default = db.session.scalar(
        select(Pipeline.id).where(Pipeline.organization_id == organization_id, Pipeline.is_default)
    )
    # The first pipeline is the default whatever was asked: there is always exactly one.
    default = bool(is_default) or has_default is None
    pipeline = _add_pipeline(organization_id, name, key, default)
    db.session.flush()
    if default:
        _make_default(organization_id, pipeline.id)
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise ApiError(409, f"key: a pipeline with key {key} already exists", param="key") from None
    return get_pipeline(organization_id, pipeline.id)


def _has_deals(pipeline_id: uuid.UUID, *, live_only: bool) -> bool:
    statement = select(Deal.id).where(Deal.pipeline_id == pipeline_id)
    if live_only:
        statement = statement.where(Deal.deleted_at.is_(None))
    return db.session.scalar(statement.limit(1)) is not None


def update_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID, changes: dict[str, Any]) -> Pipeline:
    pipeline = get_pipeline(organization_id, pipeline_id)
    if changes.get("name") is not None:
        pipeline.name = changes["name"]
    key = changes.get("key")
    if key is not None and key != pipeline.key:
        if _key_taken(organization_id, key, exclude=pipeline.id):
            raise ApiError(409, f"key: a pipeline with key {key} already exists", param="key")
        # References are <KEY>-<n> and never rewritten; a new key on a pipeline with deals would leave
        # two spellings for one pipeline and could collide with a future pipeline taking the old key.
        if _has_deals(pipeline.id, live_only=False):
            raise ApiError(409, "key: cannot change the key of a pipeline that has deals", param="key")
        pipeline.key = key
    if "is_default" in changes and changes["is_default"] is not None:
        if changes["is_default"]:
            pipeline.is_default = True
            _make_default(organization_id, pipeline.id)
        elif pipeline.is_default:
            raise ApiError(409, "is_default: make another pipeline the default instead", param="is_default")
    db.session.commit()
    return get_pipeline(organization_id, pipeline.id)


def delete_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    """Refused (409) while live deals use the pipeline; its soft-deleted deals go with it. When the
    default goes, the oldest remaining pipeline becomes the default."""
    pipeline = get_pipeline(organization_id, pipeline_id)
    if _has_deals(pipeline.id, live_only=True):
        raise ApiError(409, "The pipeline has deals; move or delete them first")
    was_default = pipeline.is_default
    db.session.execute(delete(Deal).where(Deal.pipeline_id == pipeline.id))
    db.session.delete(pipeline)
    db.session.flush()
    if was_default:
        successor = db.session.scalars(
            select(Pipeline)
            .where(Pipeline.organization_id == organization_id)
            .order_by(Pipeline.created_at, Pipeline.id)
            .limit(1)
        ).first()
        if successor is not None:
            successor.is_default = True
    db.session.commit()


# ------------------------------------------------------------------------------------------------ stages


def get_stage(organization_id: uuid.UUID, stage_id: uuid.UUID) -> Stage:
    return scoped(Stage, organization_id, stage_id, "Stage")


def _renumber(stages: list[Stage]) -> None:
    for position, stage in enumerate(stages):
        stage.stage_order = position


def _ordered_stages(pipeline_id: uuid.UUID) -> list[Stage]:
    return list(
        db.session.scalars(
            select(Stage)
            .where(Stage.pipeline_id == pipeline_id)
            .order_by(Stage.stage_order, Stage.created_at)
        )
    )


def _default_probability(status: str) -> int:
    return 100 if status == "won" else 0


def create_stage(organization_id: uuid.UUID, pipeline_id: uuid.UUID, fields: dict[str, Any]) -> Stage:
    pipeline = get_pipeline(organization_id, pipeline_id)
    stages = _ordered_stages(pipeline.id)
    status = fields.get("status") or "open"
    probability = fields.get("probability")
    stage = Stage(
        organization_id=organization_id,
        pipeline_id=pipeline.id,
        name=fields["name"],
        stage_order=0,
        probability=_default_probability(status) if probability is None else probability,
        status=status,
        rotting_days=fields.get("rotting_days"),
    )
    db.session.add(stage)
    # An order past the end appends; the others shift so orders stay 0..n-1.
    stages.insert(min(fields["stage_order"], len(stages)), stage)
    _renumber(stages)
    db.session.commit()
    return stage


def update_stage(organization_id: uuid.UUID, stage_id: uuid.UUID, changes: dict[str, Any]) -> Stage:
    stage = get_stage(organization_id, stage_id)
    for name in ("name", "probability", "status"):
        if changes.get(name) is not None:
            setattr(stage, name, changes[name])
    if "rotting_days" in changes:
        stage.rotting_days = changes["rotting_days"]
    if changes.get("stage_order") is not None:
        stages = [s for s in _ordered_stages(stage.pipeline_id) if s.id != stage.id]
        stages.insert(min(changes["stage_order"], len(stages)), stage)
        _renumber(stages)
    db.session.commit()
    return stage


def delete_stage(organization_id: uuid.UUID, stage_id: uuid.UUID, move_to: uuid.UUID | None) -> None:
    """Refused (409) while live deals sit in the stage, unless ``move_to`` names a stage of the same
    pipeline: then they move there first (recorded in their stage history). A pipeline keeps at least
    one stage."""
    from blueprints.crm.services.deals import move_deal

    stage = get_stage(organization_id, stage_id)
    stages = _ordered_stages(stage.pipeline_id)
    if len(stages) == 1:
        raise ApiError(409, "A pipeline keeps at least one stage")
    target: Stage | None = None
    if move_to is not None:
        target = get_stage(organization_id, move_to)
        if target.pipeline_id != stage.pipeline_id or target.id == stage.id:
            raise ApiError(
                400, "move_to_stage_id: must be another stage of the same pipeline", param="move_to_stage_id"
            )
    deals = list(db.session.scalars(select(Deal).where(Deal.stage_id == stage.id)))
    live = [d for d in deals if d.deleted_at is None]
    if live and target is None:
        raise ApiError(409, f"The stage has {len(live)} deal(s); pass move_to_stage_id to move them")
    fallback = target or next(s for s in stages if s.id != stage.id)
    for deal in deals:
        if deal.deleted_at is None:
            move_deal(deal, fallback, publish_event=True)
        else:
            deal.stage_id = fallback.id  # deleted deals only need a valid row to point at
    db.session.flush()
    db.session.delete(stage)
    _renumber([s for s in stages if s.id != stage.id])
    db.session.commit()


# ---------------------------------------------------------------------------------------------- currency


def get_settings(organization_id: uuid.UUID) -> CrmSettings:
    settings = ensure_settings(organization_id)
    db.session.commit()
    return settings


def update_settings(organization_id: uuid.UUID, changes: dict[str, Any]) -> CrmSettings:
    settings = ensure_settings(organization_id)
    if changes.get("ticket_prefix"):
        # Existing tickets keep their reference; new tickets use the new prefix.
        settings.ticket_prefix = changes["ticket_prefix"].upper()
    db.session.commit()
    return settings


def list_rates(organization_id: uuid.UUID) -> list[ExchangeRate]:
    return list(
        db.session.scalars(
            select(ExchangeRate)
            .where(ExchangeRate.organization_id == organization_id)
            .order_by(ExchangeRate.from_currency, ExchangeRate.to_currency)
        )
    )


def set_base_currency(organization_id: uuid.UUID, currency: str) -> CrmSettings:
    settings = ensure_settings(organization_id)
    settings.base_currency = currency
    db.session.commit()
    return settings


def upsert_rate(organization_id: uuid.UUID, source: str, target: str, rate: Decimal) -> ExchangeRate:
    if source == target:
        raise ApiError(400, "to_currency: must differ from from_currency", param="to_currency")
    existing = db.session.scalars(
        select(ExchangeRate).where(
            ExchangeRate.organization_id == organization_id,
            ExchangeRate.from_currency == source,
            ExchangeRate.to_currency == target,
        )
    ).first()
    if existing is None:
        existing = ExchangeRate(
            organization_id=organization_id, from_currency=source, to_currency=target, rate=rate
        )
        db.session.add(existing)
    else:
        existing.rate = rate
    try:
        db.session.commit()
    except IntegrityError:  # a concurrent upsert of the same pair won the insert: update theirs
        db.session.rollback()
        return upsert_rate(organization_id, source, target, rate)
    return existing


def delete_rate(organization_id: uuid.UUID, source: str, target: str) -> None:
    result = db.session.execute(
        delete(ExchangeRate).where(
            ExchangeRate.organization_id == organization_id,
            ExchangeRate.from_currency == source.upper(),
            ExchangeRate.to_currency == target.upper(),
        )
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        raise not_found("Exchange rate")
    db.session.commit()


def pipeline_summary(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> dict[str, Any]:
    """Per-stage totals of the pipeline's live deals (every status) converted to the base currency.

    Each deal is converted at full precision (direct rate, else inverse, else the shortest cross chain);
    stage and pipeline totals are summed, then rounded half-up once to the base currency's minor units.
    Weighted amount = converted amount x stage probability / 100. A deal whose currency has no chain to
    the base is left out of the amounts and listed in ``unconverted``; ``complete`` is false then.
    """
    pipeline = get_pipeline(organization_id, pipeline_id)
    base = ensure_settings(organization_id).base_currency
    rates = {(r.from_currency, r.to_currency): r.rate for r in list_rates(organization_id)}
    rows = db.session.execute(
        select(Deal.id, Deal.reference, Deal.stage_id, Deal.amount, Deal.currency)
        .where(
            Deal.organization_id == organization_id,
            Deal.pipeline_id == pipeline.id,
            Deal.deleted_at.is_(None),
        )
        .order_by(Deal.number)
    ).all()
    conversions = {c: find_conversion(c, base, rates) for c in sorted({row.currency for row in rows})}
    per_stage: dict[uuid.UUID, dict[str, Any]] = {
        s.id: {"count": 0, "total": Decimal(0), "weighted": Decimal(0), "unconverted": 0}
        for s in pipeline.stages
    }
    probabilities = {s.id: Decimal(s.probability) for s in pipeline.stages}
    unconverted: list[dict[str, Any]] = []
    for row in rows:
        bucket = per_stage.get(row.stage_id)
        if bucket is None:  # cannot happen while deals keep a stage of their pipeline; never hide it
            continue
        bucket["count"] += 1
        conversion = conversions[row.currency]
        if conversion is None:
            bucket["unconverted"] += 1
            unconverted.append(
                {
                    "deal_id": str(row.id),
                    "reference": row.reference,
                    "stage_id": str(row.stage_id),
                    "amount": money_str(row.amount, row.currency),
                    "currency": row.currency,
                    "reason": f"no exchange rate from {row.currency} to {base}",
                }
            )
            continue
        converted = row.amount * conversion.rate
        bucket["total"] += converted
        bucket["weighted"] += converted * probabilities[row.stage_id] / 100
    total = sum((b["total"] for b in per_stage.values()), Decimal(0))
    weighted = sum((b["weighted"] for b in per_stage.values()), Decimal(0))
    return {
        "pipeline_id": str(pipeline.id),
        "base_currency": base,
        "total_amount": money_str(total, base),
        "weighted_amount": money_str(weighted, base),
        "total_deals": len(rows),
        "converted_deals": len(rows) - len(unconverted),
        "complete": not unconverted,
        "stages": [
            {
                "stage_id": str(s.id),
                "stage_name": s.name,
                "stage_order": s.stage_order,
                "status": s.status,
                "probability": s.probability,
                "deal_count": per_stage[s.id]["count"],
                "total_amount": money_str(per_stage[s.id]["total"], base),
                "weighted_amount": money_str(per_stage[s.id]["weighted"], base),
                "currency": base,
                "unconverted_count": per_stage[s.id]["unconverted"],
            }
            for s in pipeline.stages
        ],
        "unconverted": unconverted,
        "conversions": [
            {
                "currency": c.currency,
                "rate": format(c.rate.normalize(), "f"),
                "method": c.method,
                "path": list(c.path),
            }
            for c in conversions.values()
            if c is not None
        ],
    }


def supported_currencies() -> list[str]:
    return list(CURRENCIES)


def stage_visit_count(deal_id: uuid.UUID) -> int:
    return int(db.session.scalar(select(func.count()).where(DealStageVisit.deal_id == deal_id)) or 0)
